//! Seat availability for the seat map: one bit per seat, read from the hot store at most
//! once per `SNAPSHOT_MS` per event on each node, however many buyers are watching. The
//! map is advisory; the hold is the only check that counts.

use std::collections::HashMap;
use std::sync::Arc;

use boxoffice_domain::{EventId, Millis, SaleStatus};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::ports::ArbiterError;
use crate::{Engine, EngineError};

/// How stale a snapshot may be.
const SNAPSHOT_MS: i64 = 1_000;

/// The availability of an event at one moment.
#[derive(Debug, PartialEq, Eq)]
pub struct AvailabilitySnapshot {
    /// One bit per seat in index order, most significant bit first, 1 = free.
    pub bits: Vec<u8>,
    pub free: u32,
    /// Changes whenever the bits do: the ETag and the SSE event id.
    pub version: String,
    pub taken_at: Millis,
}

#[derive(Default)]
pub(crate) struct Snapshots {
    by_event: Mutex<HashMap<EventId, Arc<AvailabilitySnapshot>>>,
}

impl Engine {
    pub async fn availability(
        &self,
        event: EventId,
    ) -> Result<Arc<AvailabilitySnapshot>, EngineError> {
        let now = self.now();
        let cached = self.snapshots.by_event.lock().get(&event).cloned();
        if let Some(s) = cached.filter(|s| now.0 - s.taken_at.0 < SNAPSHOT_MS) {
            return Ok(s);
        }
        self.event(event).await?;
        let bits = match self.ports.arbiter.availability(event).await {
            Err(ArbiterError::UnknownEvent) => return Err(self.not_in_hot_store(event).await),
            other => other?,
        };
        let digest = Sha256::digest(&bits);
        let version = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let free = bits.iter().map(|b| b.count_ones()).sum();
        let snapshot = Arc::new(AvailabilitySnapshot {
            bits,
            free,
            version,
            taken_at: now,
        });
        self.snapshots
            .by_event
            .lock()
            .insert(event, snapshot.clone());
        Ok(snapshot)
    }
}

impl Engine {
    /// Why the hot store has no seats of `event` to show: an event not on sale (not yet
    /// opened, or closed and since unloaded) is a 409 that names which; only an open
    /// event missing from the hot store (being rebuilt) is "unavailable, retry". The
    /// status is read again, as another node may have opened or closed the event.
    async fn not_in_hot_store(&self, event: EventId) -> EngineError {
        match self.reload_event(event).await.map(|e| e.event.status) {
            Ok(SaleStatus::Scheduled) => EngineError::SaleNotOpen,
            Ok(SaleStatus::Closed) => EngineError::SaleClosed,
            Ok(SaleStatus::Open) => ArbiterError::UnknownEvent.into(),
            Err(e) => e,
        }
    }
}

/// Seats whose bit differs between two snapshots: (now free, now taken).
pub fn availability_delta(before: &[u8], after: &[u8]) -> (Vec<u32>, Vec<u32>) {
    let (mut freed, mut taken) = (Vec::new(), Vec::new());
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        let changed = a ^ b;
        if changed == 0 {
            continue;
        }
        for bit in 0..8 {
            if changed & (0x80 >> bit) != 0 {
                let seat = (i * 8 + bit) as u32;
                if b & (0x80 >> bit) != 0 {
                    freed.push(seat)
                } else {
                    taken.push(seat)
                }
            }
        }
    }
    (freed, taken)
}

#[cfg(test)]
mod tests {
    use super::availability_delta;

    #[test]
    fn a_delta_names_each_seat_that_was_freed_or_taken() {
        let before = [0b1010_0000, 0b0000_0001];
        let after = [0b0110_0000, 0b0000_0000];
        assert_eq!(availability_delta(&before, &after), (vec![1], vec![0, 15]));
        assert_eq!(availability_delta(&after, &after), (vec![], vec![]));
    }
}

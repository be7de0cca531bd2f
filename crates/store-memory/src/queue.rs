//! `InMemoryQueue`: the waiting room's line for the embedded deployment.
//!
//! One map of buyer → position per event behind its own mutex. A `HashMap<BuyerId, u64>`
//! costs about 40 bytes per buyer once growth slack is counted (16-byte key, 8-byte
//! value, control byte, load factor ≤ 7/8, capacity doubling), so 2,000,000 buyers fit
//! in well under 100 MB (measured: `cargo bench -p boxoffice-store-memory --bench
//! queue_memory`). Pool members sit in the map at position 0 until the pool is placed,
//! plus 16 bytes each in the pool list, kept so the order can be verified. Each
//! admission batch adds 16 bytes (where it ended, and when), so that an admission token
//! can expire a fixed time after the batch that admitted its buyer.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, RestoredLine, StoreError};
use parking_lot::{Mutex, RwLock};

use crate::hash::FxHashMap;

/// Position of a pool member before the pool is placed.
const UNPLACED: u64 = 0;

/// Human checks remembered per event, about 60 bytes each: 32 MB at most. Reached only
/// by more than this many checks within their remembered lifetime; then the half
/// nearest its end is forgotten (the providers refuse a second redemption themselves).
pub const MAX_REMEMBERED_CHECKS: usize = 1 << 19;

#[derive(Default)]
struct Line {
    /// Buyer ids are minted by the server, so the fast hasher is safe here.
    positions: FxHashMap<BuyerId, u64>,
    /// The pre-opening pool in arrival order, kept for the published verification.
    pool: Vec<BuyerId>,
    finished: HashSet<BuyerId>,
    settings: HashMap<String, String>,
    state: QueueState,
    /// (serving_up_to, when) after every advance, in order: one entry per batch.
    admissions: Vec<(u64, Millis)>,
    /// Human-check token digest → (the buyer it let in, remembered until).
    checks: HashMap<[u8; 32], (BuyerId, Millis)>,
    /// Who holds the right to open or put back this line, and until when.
    claim: Option<(String, Instant)>,
}

impl Line {
    /// Makes room for one more remembered check: first the lapsed ones, then, if that
    /// was not enough, the half nearest its end (amortized O(1) per check).
    fn room_for_check(&mut self, now: Millis, cap: usize) {
        if self.checks.len() < cap {
            return;
        }
        self.checks.retain(|_, (_, until)| *until > now);
        if self.checks.len() < cap {
            return;
        }
        let mut ends: Vec<Millis> = self.checks.values().map(|(_, until)| *until).collect();
        let mid = ends.len() / 2;
        let (_, cutoff, _) = ends.select_nth_unstable(mid);
        let cutoff = *cutoff;
        self.checks.retain(|_, (_, until)| *until > cutoff);
    }
}

fn place_of(position: u64, new: bool) -> Place {
    let position = (position != UNPLACED).then_some(position);
    Place { position, new }
}

pub struct InMemoryQueue {
    events: RwLock<HashMap<EventId, Arc<Mutex<Line>>>>,
    max_checks: usize,
}

impl Default for InMemoryQueue {
    fn default() -> Self {
        InMemoryQueue {
            events: RwLock::default(),
            max_checks: MAX_REMEMBERED_CHECKS,
        }
    }
}

impl InMemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// A queue remembering at most `max` human checks per event (tests of the bound).
    pub fn with_max_checks(max: usize) -> Self {
        InMemoryQueue {
            max_checks: max.max(1),
            ..Self::default()
        }
    }

    fn line(&self, event: EventId) -> Arc<Mutex<Line>> {
        if let Some(line) = self.events.read().get(&event) {
            return line.clone();
        }
        self.events.write().entry(event).or_default().clone()
    }

    fn existing(&self, event: EventId) -> Option<Arc<Mutex<Line>>> {
        self.events.read().get(&event).cloned()
    }
}

#[async_trait]
impl QueueStore for InMemoryQueue {
    async fn join(
        &self,
        event: EventId,
        buyer: BuyerId,
        sale_open: bool,
    ) -> Result<Place, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        line.state.opened |= sale_open;
        if let Some(&position) = line.positions.get(&buyer) {
            return Ok(place_of(position, false));
        }
        line.state.queue_length += 1;
        let position = if line.state.opened {
            line.state.queue_length
        } else {
            line.pool.push(buyer);
            line.state.pool_size += 1;
            UNPLACED
        };
        line.positions.insert(buyer, position);
        Ok(place_of(position, true))
    }

    async fn join_line(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        if !line.state.opened {
            return Ok(None);
        }
        if let Some(&position) = line.positions.get(&buyer) {
            return Ok(Some(place_of(position, false)));
        }
        line.state.queue_length += 1;
        let position = line.state.queue_length;
        line.positions.insert(buyer, position);
        Ok(Some(place_of(position, true)))
    }

    /// Exclusive within the process: the admission ticker, a join and a status read can
    /// all find the line unopened at once, and two of them opening it together would
    /// each draw or put back a line the other is still writing.
    async fn claim_line(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        let now = Instant::now();
        if line.claim.as_ref().is_some_and(|(_, until)| *until > now) {
            return Ok(false);
        }
        line.claim = Some((
            holder.to_owned(),
            now + Duration::from_millis(ttl_ms.max(1)),
        ));
        Ok(true)
    }

    async fn renew_line_claim(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        let Some(line) = self.existing(event) else {
            return Ok(false);
        };
        let mut line = line.lock();
        let now = Instant::now();
        match &mut line.claim {
            Some((who, until)) if who == holder && *until > now => {
                *until = now + Duration::from_millis(ttl_ms.max(1));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_line_claim(&self, event: EventId, holder: &str) -> Result<(), StoreError> {
        if let Some(line) = self.existing(event) {
            let mut line = line.lock();
            if line.claim.as_ref().is_some_and(|(who, _)| who == holder) {
                line.claim = None;
            }
        }
        Ok(())
    }

    async fn restore_line(
        &self,
        event: EventId,
        restored: &RestoredLine,
    ) -> Result<(), StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        let len = restored
            .positions
            .iter()
            .map(|&(_, p)| p)
            .max()
            .unwrap_or(0);
        let (serving, at) = restored
            .batches
            .last()
            .map_or((0, Millis(0)), |&(to, at)| (to.min(len), at));
        line.positions = restored.positions.iter().copied().collect();
        line.pool = restored.pool.clone();
        line.finished.clear();
        line.admissions = restored.batches.clone();
        line.state = QueueState {
            serving_up_to: serving,
            queue_length: len,
            sold_out: false,
            advanced_at: at,
            pool_size: restored.pool.len() as u64,
            opened: true,
            placed: true,
            finished: 0,
        };
        Ok(())
    }

    async fn place(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        let Some(line) = self.existing(event) else {
            return Ok(None);
        };
        let line = line.lock();
        Ok(line.positions.get(&buyer).map(|&p| place_of(p, false)))
    }

    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        Ok(self
            .existing(event)
            .map(|l| l.lock().state)
            .unwrap_or_default())
    }

    async fn advance(
        &self,
        event: EventId,
        to: u64,
        now: Millis,
    ) -> Result<QueueState, StoreError> {
        // Nobody in line means nothing to advance; do not create a line for it.
        let Some(line) = self.existing(event) else {
            return Ok(QueueState::default());
        };
        let mut line = line.lock();
        let target = to.min(line.state.queue_length);
        if target > line.state.serving_up_to {
            line.state.serving_up_to = target;
            line.state.advanced_at = now;
            line.admissions.push((target, now));
        }
        Ok(line.state)
    }

    async fn admitted_at(
        &self,
        event: EventId,
        position: u64,
    ) -> Result<Option<Millis>, StoreError> {
        let Some(line) = self.existing(event) else {
            return Ok(None);
        };
        let line = line.lock();
        // The first batch whose end reached the position admitted it.
        let first = line.admissions.partition_point(|&(to, _)| to < position);
        let admitted = position > 0 && position <= line.state.serving_up_to;
        Ok(line
            .admissions
            .get(first)
            .filter(|_| admitted)
            .map(|&(_, at)| at))
    }

    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        self.line(event).lock().state.sold_out = sold_out;
        Ok(())
    }

    async fn seal_pool(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        line.state.opened = true;
        if line.state.placed {
            return Ok(Vec::new());
        }
        Ok(line.pool.clone())
    }

    async fn place_pool(&self, event: EventId, ordered: &[BuyerId]) -> Result<(), StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        if line.state.placed {
            return Ok(());
        }
        if !line.state.opened || ordered.len() as u64 != line.state.pool_size {
            return Err(StoreError(
                "place_pool needs the sealed pool, each member once".into(),
            ));
        }
        // Check everything before writing anything: a refused order changes nothing.
        let mut seen = HashSet::with_capacity(ordered.len());
        for buyer in ordered {
            if line.positions.get(buyer) != Some(&UNPLACED) || !seen.insert(buyer) {
                return Err(StoreError(format!(
                    "{buyer} is not an unplaced pool member"
                )));
            }
        }
        for (i, buyer) in ordered.iter().enumerate() {
            line.positions.insert(*buyer, i as u64 + 1);
        }
        line.pool.shrink_to_fit();
        line.state.placed = true;
        Ok(())
    }

    async fn pool_members(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<BuyerId>, StoreError> {
        let Some(line) = self.existing(event) else {
            return Ok(Vec::new());
        };
        let line = line.lock();
        let start = (offset as usize).min(line.pool.len());
        let end = start.saturating_add(limit as usize).min(line.pool.len());
        Ok(line.pool[start..end].to_vec())
    }

    async fn finish(&self, event: EventId, buyer: BuyerId) -> Result<bool, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        let counted = line.finished.insert(buyer);
        if counted {
            line.state.finished += 1;
        }
        Ok(counted)
    }

    async fn set_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        if only_if_absent && let Some(v) = line.settings.get(name) {
            return Ok(v.clone());
        }
        line.settings.insert(name.to_owned(), value.to_owned());
        Ok(value.to_owned())
    }

    async fn settings(&self, event: EventId) -> Result<HashMap<String, String>, StoreError> {
        Ok(self
            .existing(event)
            .map(|l| l.lock().settings.clone())
            .unwrap_or_default())
    }

    async fn remember_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        owner: BuyerId,
        until: Millis,
        now: Millis,
    ) -> Result<BuyerId, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        if let Some(&(first, at)) = line.checks.get(digest)
            && at > now
        {
            return Ok(first);
        }
        line.room_for_check(now, self.max_checks);
        line.checks.insert(*digest, (owner, until));
        Ok(owner)
    }

    async fn remembered_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        now: Millis,
    ) -> Result<Option<BuyerId>, StoreError> {
        Ok(self.existing(event).and_then(|l| {
            l.lock()
                .checks
                .get(digest)
                .filter(|(_, until)| *until > now)
                .map(|(owner, _)| *owner)
        }))
    }

    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        self.events.write().remove(&event);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u32) -> [u8; 32] {
        let mut d = [0u8; 32];
        d[..4].copy_from_slice(&n.to_le_bytes());
        d
    }

    #[tokio::test]
    async fn remembered_checks_stay_bounded_and_the_newest_are_kept() {
        const CAP: usize = 64;
        let q = InMemoryQueue::with_max_checks(CAP);
        let event = EventId(1);
        let now = Millis(1_000);
        // Each check lives a little longer than the one before it.
        for n in 0..10 * CAP as u32 {
            let owner = BuyerId::random();
            let until = now.plus_millis(60_000 + i64::from(n));
            assert_eq!(
                q.remember_check(event, &digest(n), owner, until, now).await,
                Ok(owner)
            );
            let held = q.line(event).lock().checks.len();
            assert!(held <= CAP, "{held} checks held, cap {CAP}");
        }
        let last = 10 * CAP as u32 - 1;
        assert!(
            q.remembered_check(event, &digest(last), now)
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(
            q.remembered_check(event, &digest(0), now).await,
            Ok(None),
            "the check nearest its end went first"
        );
    }

    #[tokio::test]
    async fn lapsed_checks_make_room_before_live_ones_are_forgotten() {
        const CAP: usize = 8;
        let q = InMemoryQueue::with_max_checks(CAP);
        let event = EventId(1);
        let now = Millis(1_000);
        let keeper = BuyerId::random();
        q.remember_check(event, &digest(0), keeper, now.plus_secs(600), now)
            .await
            .unwrap();
        for n in 1..CAP as u32 {
            q.remember_check(
                event,
                &digest(n),
                BuyerId::random(),
                now.plus_millis(10),
                now,
            )
            .await
            .unwrap();
        }
        let later = now.plus_secs(1);
        q.remember_check(
            event,
            &digest(99),
            BuyerId::random(),
            later.plus_secs(60),
            later,
        )
        .await
        .unwrap();
        assert_eq!(
            q.remembered_check(event, &digest(0), later).await,
            Ok(Some(keeper)),
            "the lapsed ones went, the live one stayed"
        );
        assert_eq!(q.line(event).lock().checks.len(), 2);
    }
}

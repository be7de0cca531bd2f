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

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, RestoredLine, StoreError};
use parking_lot::{Mutex, RwLock};

use crate::hash::FxHashMap;

/// Position of a pool member before the pool is placed.
const UNPLACED: u64 = 0;

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
}

fn place_of(position: u64, new: bool) -> Place {
    let position = (position != UNPLACED).then_some(position);
    Place { position, new }
}

#[derive(Default)]
pub struct InMemoryQueue {
    events: RwLock<HashMap<EventId, Arc<Mutex<Line>>>>,
}

impl InMemoryQueue {
    pub fn new() -> Self {
        Self::default()
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

    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        self.events.write().remove(&event);
        Ok(())
    }
}

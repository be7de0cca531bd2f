//! Events: creating them, opening and closing the sale, and keeping the hot store in
//! step with the ledger. Catalogs are read-mostly, so each node caches them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use boxoffice_domain::{Event, EventId, EventSpec, Millis, SaleStatus, SeatIndex, SectionKind};
use parking_lot::RwLock;

use crate::ports::{ArbiterLayout, LayoutSeat, LayoutSection, RebuildClaim, SoldSeat};
use crate::tail_hash::TailMap;
use crate::{Engine, EngineError, Resource};

/// How long the readiness probe's answer about the ledger is kept (`ledger_answers`).
const READINESS_TTL_MS: i64 = 1_000;

/// The last ask of `ledger_answers`: when, and the ledger's answer. Behind an async
/// lock, so that probes arriving together wait for one ask rather than each making one.
#[derive(Default)]
pub(crate) struct Readiness(tokio::sync::Mutex<Option<(Millis, Result<(), String>)>>);

/// A cached event with its seat-label index.
pub struct EventEntry {
    pub event: Event,
    pub seat_index: HashMap<String, SeatIndex>,
}

impl EventEntry {
    pub fn new(event: Event) -> EventEntry {
        let seat_index = event.seat_lookup();
        EventEntry { event, seat_index }
    }

    pub fn layout(&self) -> ArbiterLayout {
        let e = &self.event;
        ArbiterLayout {
            event: e.id,
            max_per_buyer: e.sale.max_tickets_per_buyer,
            seats: e
                .seats
                .iter()
                .enumerate()
                .map(|(i, s)| LayoutSeat {
                    section: s.section,
                    row: s.row,
                    rank: s.rank,
                    price: e.price_of(i as SeatIndex),
                })
                .collect(),
            sections: e
                .sections
                .iter()
                .map(|s| LayoutSection {
                    seated: s.kind == SectionKind::Seated,
                })
                .collect(),
        }
    }
}

#[derive(Default)]
pub(crate) struct CatalogCache {
    events: RwLock<TailMap<EventId, Arc<EventEntry>>>,
}

impl Engine {
    #[tracing::instrument(skip_all)]
    pub async fn create_event(&self, spec: &EventSpec) -> Result<Arc<EventEntry>, EngineError> {
        // Validate before touching the ledger so bad input changes nothing.
        spec.build(EventId(1), self.now())
            .map_err(|e| EngineError::Invalid(e.to_string()))?;
        let event = self.ports.ledger.create_event(spec, self.now()).await?;
        Ok(self.cache(event))
    }

    /// The event, from the cache or the ledger.
    pub async fn event(&self, id: EventId) -> Result<Arc<EventEntry>, EngineError> {
        if let Some(e) = self.catalog.events.read().get(&id) {
            return Ok(e.clone());
        }
        let event = self
            .ports
            .ledger
            .event(id)
            .await?
            .ok_or(EngineError::NotFound(Resource::Event))?;
        Ok(self.cache(event))
    }

    /// The event as the ledger has it now, refreshing the cache (another node may have
    /// opened or closed the sale since this node cached it).
    pub async fn reload_event(&self, id: EventId) -> Result<Arc<EventEntry>, EngineError> {
        let event = self
            .ports
            .ledger
            .event(id)
            .await?
            .ok_or(EngineError::NotFound(Resource::Event))?;
        Ok(self.cache(event))
    }

    fn cache(&self, event: Event) -> Arc<EventEntry> {
        let entry = Arc::new(EventEntry::new(event));
        self.catalog
            .events
            .write()
            .insert(entry.event.id, entry.clone());
        entry
    }

    /// Opens the sale, building the event in the hot store from the ledger. Opening an
    /// open event (a double click, a retried script, another node) changes nothing: a
    /// rebuild would drop every hold, live and pinned. The ledger, not this node's
    /// cache, says whether it is open.
    #[tracing::instrument(skip_all, fields(event = %id))]
    pub async fn open_sale(&self, id: EventId) -> Result<Arc<EventEntry>, EngineError> {
        let entry = self.reload_event(id).await?;
        match entry.event.status {
            SaleStatus::Closed => return Err(EngineError::SaleClosed),
            SaleStatus::Open if self.ports.arbiter.is_loaded(id).await? => return Ok(entry),
            _ => {}
        }
        self.rebuild(id).await?;
        self.set_status(entry, SaleStatus::Open).await
    }

    #[tracing::instrument(skip_all, fields(event = %id))]
    pub async fn close_sale(&self, id: EventId) -> Result<Arc<EventEntry>, EngineError> {
        let entry = self.event(id).await?;
        self.set_status(entry, SaleStatus::Closed).await
    }

    async fn set_status(
        &self,
        entry: Arc<EventEntry>,
        status: SaleStatus,
    ) -> Result<Arc<EventEntry>, EngineError> {
        if entry.event.status == status {
            return Ok(entry);
        }
        self.ports
            .ledger
            .set_sale_status(entry.event.id, status)
            .await?;
        // An opening may bring the event's settings back into the queue store (a line
        // restored): the next check reads them rather than this node's copy.
        self.waiting.settings.forget(entry.event.id);
        let mut event = entry.event.clone();
        event.status = status;
        Ok(self.cache(event))
    }

    /// Rebuilds the event in the hot store from the ledger: sold seats sold, all else
    /// free. Holds are lost by design (P5); their buyers get a clear error and retry.
    ///
    /// A commit that lands in the ledger after the sold seats were read and records its
    /// sale while the load runs finds no event to record it in; so once loaded, the
    /// ledger is read again and every seat sold since the first read is marked sold. A
    /// commit landing after that second read records itself in the loaded event, over
    /// whoever holds its seats (`record_sale_in_hot_store`). So no sale is left out,
    /// however the commits in flight interleave with the rebuild (docs/ARCHITECTURE.md
    /// §12).
    ///
    /// The other way round, a sale undone (refunded, cancelled) after the first read
    /// gave its seats back to no event (`return_cancelled_seats` leaves that to the
    /// rebuild): the seats the first read had sold and the second has not go back too.
    /// One of them sold again meanwhile is in a third read and marked sold again, as a
    /// commit landing after a read is.
    pub async fn rebuild(&self, id: EventId) -> Result<(), EngineError> {
        self.rebuild_as(id, false).await
    }

    /// `rebuild`; with `lost`, only if the event is not loaded when the load begins
    /// (`SeatArbiter::load_lost`): another rebuild that finished first is kept.
    #[tracing::instrument(skip_all, fields(event = %id))]
    async fn rebuild_as(&self, id: EventId, lost: bool) -> Result<(), EngineError> {
        let entry = self.event(id).await?;
        let seats = self.ledger_sold_seats(&entry).await?;
        let arbiter = &self.ports.arbiter;
        if lost {
            if !arbiter.load_lost(&entry.layout(), &seats).await? {
                return Ok(());
            }
        } else {
            arbiter.load(&entry.layout(), &seats).await?;
        }
        let known: HashSet<SeatIndex> = seats.iter().map(|s| s.seat).collect();
        let second = self.ledger_sold_seats(&entry).await?;
        let still: HashSet<SeatIndex> = second.iter().map(|s| s.seat).collect();
        let since: Vec<SoldSeat> = (second.into_iter())
            .filter(|s| !known.contains(&s.seat))
            .collect();
        let caught_up = match since.is_empty() {
            true => 0,
            false => self.ports.arbiter.mark_seats_sold(id, &since).await?,
        };
        let undone: Vec<SoldSeat> = (seats.iter())
            .filter(|s| !still.contains(&s.seat))
            .copied()
            .collect();
        if !undone.is_empty() {
            self.ports.arbiter.return_sold_seats(id, &undone).await?;
            let gone: HashSet<SeatIndex> = undone.iter().map(|s| s.seat).collect();
            let again: Vec<SoldSeat> = (self.ledger_sold_seats(&entry).await?.into_iter())
                .filter(|s| gone.contains(&s.seat))
                .collect();
            if !again.is_empty() {
                self.ports.arbiter.mark_seats_sold(id, &again).await?;
            }
            tracing::info!(event = %id, returned = undone.len(), "seats of sales undone during the rebuild back on sale");
        }
        metrics::counter!("boxoffice_hot_store_rebuilds_total").increment(1);
        tracing::info!(event = %id, sold = seats.len(), caught_up, "event rebuilt in the hot store");
        Ok(())
    }

    /// The hot store has lost the event (a restart, a flush, a failover): rebuild it
    /// from the ledger once, whichever nodes notice at the same moment. One caller
    /// claims the rebuild; the others wait until it is loaded, up to `wait`, and then
    /// answer 503 (retry).
    pub(crate) async fn rebuild_lost(&self, id: EventId) -> Result<(), EngineError> {
        let wait = std::time::Duration::from_secs(5);
        let started = std::time::Instant::now();
        loop {
            match self.ports.arbiter.claim_rebuild(id).await? {
                RebuildClaim::Loaded => return Ok(()),
                RebuildClaim::Mine => return self.rebuild_as(id, true).await,
                RebuildClaim::Busy if started.elapsed() < wait => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                RebuildClaim::Busy => {
                    return Err(EngineError::Unavailable(
                        "the event is being rebuilt; retry".into(),
                    ));
                }
            }
        }
    }

    /// At start-up: every open event missing from the hot store is rebuilt.
    pub async fn load_open_events(&self) -> Result<usize, EngineError> {
        let open = self
            .ports
            .ledger
            .events_with_status(SaleStatus::Open)
            .await?;
        for id in &open {
            self.rebuild_lost(*id).await?;
        }
        Ok(open.len())
    }

    /// Brings cached sale statuses in line with the ledger, where another node may have
    /// opened or closed a sale. `open` is the ledger's list of open events.
    pub(crate) async fn sync_catalog(&self, open: &[EventId]) -> Result<(), EngineError> {
        let stale: Vec<EventId> = {
            let cache = self.catalog.events.read();
            cache
                .values()
                .filter(|e| (e.event.status == SaleStatus::Open) != open.contains(&e.event.id))
                .map(|e| e.event.id)
                .collect()
        };
        for id in stale {
            if let Some(event) = self.ports.ledger.event(id).await? {
                self.cache(event);
            }
        }
        Ok(())
    }

    /// Whether the ledger answers, for the readiness probe: asked at most once per
    /// `READINESS_TTL_MS` however often (and however many at once) the probe is called,
    /// and otherwise answered from the last ask. The probe is public and never shed, so
    /// a flood of it must not be a flood of ledger reads.
    pub async fn ledger_answers(&self) -> Result<(), EngineError> {
        let mut last = self.readiness.0.lock().await;
        let now = self.now();
        let fresh = |(at, _): &(Millis, _)| now.0.saturating_sub(at.0) < READINESS_TTL_MS;
        if !last.as_ref().is_some_and(fresh) {
            let answer = self
                .open_events()
                .await
                .map(drop)
                .map_err(|e| e.to_string());
            *last = Some((now, answer));
        }
        match last.as_ref().map(|(_, answer)| answer) {
            Some(Err(e)) => Err(EngineError::Unavailable(format!("the ledger: {e}"))),
            _ => Ok(()),
        }
    }

    pub async fn open_events(&self) -> Result<Vec<EventId>, EngineError> {
        Ok(self
            .ports
            .ledger
            .events_with_status(SaleStatus::Open)
            .await?)
    }

    /// The current time by the engine's clock.
    pub fn now(&self) -> boxoffice_domain::Millis {
        self.ports.clock.now()
    }
}

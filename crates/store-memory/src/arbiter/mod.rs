//! `InMemoryArbiter`: the seat arbiter of the embedded deployment.
//!
//! Each event's state sits behind its own `parking_lot::Mutex`, taken for one short
//! synchronous step per call (no `.await` inside), so two buyers of different events
//! never wait for each other and two buyers of the same event are strictly ordered.
//! The map of events is behind a `RwLock` that only `load`/`unload` write.

mod event;
mod freeset;
mod inventory;
mod lifecycle;
mod pick;
mod repair;
mod retake;

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, Expired, HoldRequest, HoldView, Retake, SeatArbiter, SeatCounts,
    SoldSeat, StoreError,
};
use parking_lot::{Mutex, RwLock};

use crate::hash::FxHashMap;
use event::EventState;

/// Finished holds (sold, released, expired) kept per event so `get` can still say what
/// happened; the oldest are forgotten beyond this.
const KEEP_FINISHED: usize = 100_000;

#[derive(Default)]
pub struct InMemoryArbiter {
    events: RwLock<FxHashMap<EventId, Arc<Mutex<EventState>>>>,
}

impl InMemoryArbiter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the event's state under its lock; `None` if the event is not loaded.
    fn with_event<T>(&self, event: EventId, f: impl FnOnce(&mut EventState) -> T) -> Option<T> {
        let events = self.events.read();
        let state = events.get(&event)?;
        let mut state = state.lock();
        Some(f(&mut state))
    }

    fn on_event<T>(
        &self,
        event: EventId,
        f: impl FnOnce(&mut EventState) -> Result<T, ArbiterError>,
    ) -> Result<T, ArbiterError> {
        self.with_event(event, f)
            .unwrap_or(Err(ArbiterError::UnknownEvent))
    }

    /// A hold's event gone means the hold is gone with it.
    fn on_hold(
        &self,
        hold: HoldId,
        f: impl FnOnce(&mut EventState) -> Result<HoldView, ArbiterError>,
    ) -> Result<HoldView, ArbiterError> {
        self.with_event(hold.event, f)
            .unwrap_or(Err(ArbiterError::UnknownHold))
    }
}

#[async_trait]
impl SeatArbiter for InMemoryArbiter {
    #[tracing::instrument(level = "trace", skip_all)]
    async fn load(&self, layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<(), StoreError> {
        // Built outside the map lock: a 50,000-seat event takes milliseconds to lay out.
        let state = EventState::load(layout, sold, KEEP_FINISHED).map_err(StoreError)?;
        self.events
            .write()
            .insert(layout.event, Arc::new(Mutex::new(state)));
        Ok(())
    }

    #[tracing::instrument(level = "trace", skip_all)]
    async fn load_lost(
        &self,
        layout: &ArbiterLayout,
        sold: &[SoldSeat],
    ) -> Result<bool, StoreError> {
        let state = EventState::load(layout, sold, KEEP_FINISHED).map_err(StoreError)?;
        match self.events.write().entry(layout.event) {
            std::collections::hash_map::Entry::Occupied(_) => Ok(false),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Arc::new(Mutex::new(state)));
                Ok(true)
            }
        }
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn is_loaded(&self, event: EventId) -> Result<bool, StoreError> {
        Ok(self.events.read().contains_key(&event))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn unload(&self, event: EventId) -> Result<(), StoreError> {
        self.events.write().remove(&event);
        Ok(())
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %req.hold))]
    async fn hold(&self, req: &HoldRequest, now: Millis) -> Result<HoldView, ArbiterError> {
        self.on_event(req.hold.event, |s| s.hold(req, now))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold))]
    async fn get(&self, hold: HoldId) -> Result<Option<HoldView>, StoreError> {
        Ok(self.with_event(hold.event, |s| s.get(hold)).flatten())
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold, order = %order))]
    async fn pin(
        &self,
        hold: HoldId,
        order: OrderId,
        pinned_until: Millis,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        self.on_hold(hold, |s| s.pin(hold, order, pinned_until, now))
    }

    #[tracing::instrument(level = "trace", skip_all)]
    async fn retake(&self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError> {
        self.on_event(req.hold.event, |s| s.retake(req, now))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold))]
    async fn mark_uncertain(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.on_hold(hold, |s| s.mark_uncertain(hold))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold))]
    async fn mark_sold(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.on_hold(hold, |s| s.mark_sold(hold))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold))]
    async fn release(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.on_hold(hold, |s| s.release(hold))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(hold = %hold))]
    async fn release_held(
        &self,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<(HoldView, bool), ArbiterError> {
        self.with_event(hold.event, |s| s.release_held(hold, buyer))
            .unwrap_or(Err(ArbiterError::UnknownHold))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn expire_due(
        &self,
        event: EventId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Expired>, StoreError> {
        Ok(self
            .with_event(event, |s| s.expire_due(now, limit))
            .unwrap_or_default())
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn mark_seats_sold(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        self.on_event(event, |s| s.mark_seats_sold(seats))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn return_sold_seats(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        self.on_event(event, |s| s.return_sold_seats(seats))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn give_sold_seat(
        &self,
        event: EventId,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError> {
        self.on_event(event, |s| s.give_sold_seat(seat, from, to))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn availability(&self, event: EventId) -> Result<Vec<u8>, ArbiterError> {
        self.on_event(event, |s| Ok(s.inv.bitmap()))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn counts(&self, event: EventId) -> Result<SeatCounts, ArbiterError> {
        self.on_event(event, |s| Ok(s.counts()))
    }

    #[tracing::instrument(level = "trace", skip_all, fields(event = %event))]
    async fn sold_seats(&self, event: EventId) -> Result<Vec<SeatIndex>, ArbiterError> {
        self.on_event(event, |s| Ok(s.inv.sold_seats()))
    }
}

//! A hot store with a step of a test's own around some of its calls: a lost answer, a
//! competitor that acts between two calls of the code under test. Every call a test
//! does not hook passes straight through to the real store.

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, Expired, HoldRequest, HoldView, RebuildClaim, Retake, SeatArbiter,
    SeatCounts, SoldSeat, StoreError,
};

/// What a test puts around the store's calls; each default is the store's own call.
#[async_trait]
pub trait Hooks: Send + Sync {
    async fn hold(
        &self,
        store: &dyn SeatArbiter,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        store.hold(req, now).await
    }
    async fn release(
        &self,
        store: &dyn SeatArbiter,
        hold: HoldId,
    ) -> Result<HoldView, ArbiterError> {
        store.release(hold).await
    }
    async fn retake(
        &self,
        store: &dyn SeatArbiter,
        req: &Retake,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        store.retake(req, now).await
    }
}

/// The store `inner`, its calls passed through `hooks`.
pub struct Hooked<H> {
    pub inner: Arc<dyn SeatArbiter>,
    pub hooks: H,
}

#[async_trait]
impl<H: Hooks> SeatArbiter for Hooked<H> {
    async fn load(&self, layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<(), StoreError> {
        self.inner.load(layout, sold).await
    }
    async fn load_lost(
        &self,
        layout: &ArbiterLayout,
        sold: &[SoldSeat],
    ) -> Result<bool, StoreError> {
        self.inner.load_lost(layout, sold).await
    }
    async fn is_loaded(&self, event: EventId) -> Result<bool, StoreError> {
        self.inner.is_loaded(event).await
    }
    async fn claim_rebuild(&self, event: EventId) -> Result<RebuildClaim, StoreError> {
        self.inner.claim_rebuild(event).await
    }
    async fn sweep_lease(
        &self,
        event: EventId,
        sweep: &str,
        node: &str,
        ttl_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.inner.sweep_lease(event, sweep, node, ttl_ms).await
    }
    async fn unload(&self, event: EventId) -> Result<(), StoreError> {
        self.inner.unload(event).await
    }
    async fn hold(&self, req: &HoldRequest, now: Millis) -> Result<HoldView, ArbiterError> {
        self.hooks.hold(self.inner.as_ref(), req, now).await
    }
    async fn get(&self, hold: HoldId) -> Result<Option<HoldView>, StoreError> {
        self.inner.get(hold).await
    }
    async fn pin(
        &self,
        hold: HoldId,
        order: OrderId,
        pinned_until: Millis,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        self.inner.pin(hold, order, pinned_until, now).await
    }
    async fn retake(&self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError> {
        self.hooks.retake(self.inner.as_ref(), req, now).await
    }
    async fn mark_uncertain(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.inner.mark_uncertain(hold).await
    }
    async fn mark_sold(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.inner.mark_sold(hold).await
    }
    async fn release(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.hooks.release(self.inner.as_ref(), hold).await
    }
    async fn release_held(
        &self,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<(HoldView, bool), ArbiterError> {
        self.inner.release_held(hold, buyer).await
    }
    async fn expire_due(
        &self,
        event: EventId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Expired>, StoreError> {
        self.inner.expire_due(event, now, limit).await
    }
    async fn mark_seats_sold(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        self.inner.mark_seats_sold(event, seats).await
    }
    async fn return_sold_seats(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        self.inner.return_sold_seats(event, seats).await
    }
    async fn give_sold_seat(
        &self,
        event: EventId,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError> {
        self.inner.give_sold_seat(event, seat, from, to).await
    }
    async fn availability(&self, event: EventId) -> Result<Vec<u8>, ArbiterError> {
        self.inner.availability(event).await
    }
    async fn counts(&self, event: EventId) -> Result<SeatCounts, ArbiterError> {
        self.inner.counts(event).await
    }
    async fn sold_seats(&self, event: EventId) -> Result<Vec<SeatIndex>, ArbiterError> {
        self.inner.sold_seats(event).await
    }
}

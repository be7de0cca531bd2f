//! `Tracked<T>`: a port that counts itself live for the run's cleanup (see `mod.rs`)
//! and otherwise forwards every call (an arbiter through testkit's `Hooked`).

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::*;
use boxoffice_testkit::hooked::{Hooked, Hooks};

pub struct Tracked<T> {
    inner: T,
    urls: String,
}

impl<T> Tracked<T> {
    pub fn new(inner: T, urls: &str) -> Self {
        super::enter();
        Tracked {
            inner,
            urls: urls.to_owned(),
        }
    }
}

impl<T> Drop for Tracked<T> {
    fn drop(&mut self) {
        super::leave(&self.urls);
    }
}

/// An arbiter counted live: its calls pass through untouched.
impl Hooks for Tracked<()> {}

/// `arb`, counted live for the run's cleanup.
pub fn tracked_arbiter(arb: impl SeatArbiter + 'static, urls: &str) -> Arc<dyn SeatArbiter> {
    Arc::new(Hooked {
        inner: Arc::new(arb),
        hooks: Tracked::new((), urls),
    })
}

#[async_trait]
impl<T: QueueStore> QueueStore for Tracked<T> {
    async fn join(
        &self,
        event: EventId,
        buyer: BuyerId,
        sale_open: bool,
    ) -> Result<Place, StoreError> {
        self.inner.join(event, buyer, sale_open).await
    }
    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        self.inner.state(event).await
    }
    async fn advance(
        &self,
        event: EventId,
        to: u64,
        now: Millis,
    ) -> Result<QueueState, StoreError> {
        self.inner.advance(event, to, now).await
    }
    async fn admitted_at(
        &self,
        event: EventId,
        position: u64,
    ) -> Result<Option<Millis>, StoreError> {
        self.inner.admitted_at(event, position).await
    }
    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        self.inner.set_sold_out(event, sold_out).await
    }
    async fn place(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        self.inner.place(event, buyer).await
    }
    async fn join_line(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        self.inner.join_line(event, buyer).await
    }
    async fn claim_line(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        self.inner.claim_line(event, holder, ttl_ms).await
    }
    async fn renew_line_claim(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        self.inner.renew_line_claim(event, holder, ttl_ms).await
    }
    async fn release_line_claim(&self, event: EventId, holder: &str) -> Result<(), StoreError> {
        self.inner.release_line_claim(event, holder).await
    }
    async fn restore_line(&self, event: EventId, line: &RestoredLine) -> Result<(), StoreError> {
        self.inner.restore_line(event, line).await
    }
    async fn seal_pool(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        self.inner.seal_pool(event).await
    }
    async fn place_pool(&self, event: EventId, ordered: &[BuyerId]) -> Result<(), StoreError> {
        self.inner.place_pool(event, ordered).await
    }
    async fn pool_members(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<BuyerId>, StoreError> {
        self.inner.pool_members(event, offset, limit).await
    }
    async fn finish(&self, event: EventId, buyer: BuyerId) -> Result<bool, StoreError> {
        self.inner.finish(event, buyer).await
    }
    async fn set_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, StoreError> {
        self.inner
            .set_setting(event, name, value, only_if_absent)
            .await
    }
    async fn settings(
        &self,
        event: EventId,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        self.inner.settings(event).await
    }
    async fn remember_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        owner: BuyerId,
        until: Millis,
        now: Millis,
    ) -> Result<BuyerId, StoreError> {
        self.inner
            .remember_check(event, digest, owner, until, now)
            .await
    }
    async fn remembered_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        now: Millis,
    ) -> Result<Option<BuyerId>, StoreError> {
        self.inner.remembered_check(event, digest, now).await
    }
    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        self.inner.drop_event(event).await
    }
}

#[async_trait]
impl<T: IdempotencyStore> IdempotencyStore for Tracked<T> {
    async fn begin(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        self.inner.begin(key, fingerprint, now, claimant).await
    }
    async fn finish(
        &self,
        key: &ReplayKey,
        lease: Lease,
        r: &StoredResponse,
    ) -> Result<(), StoreError> {
        self.inner.finish(key, lease, r).await
    }
    async fn abandon(&self, key: &ReplayKey, lease: Lease) -> Result<(), StoreError> {
        self.inner.abandon(key, lease).await
    }
    async fn heartbeat(&self, node: Incarnation, now: Millis) -> Result<(), StoreError> {
        self.inner.heartbeat(node, now).await
    }
    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        self.inner.prune(before, limit).await
    }
}

#[async_trait]
impl<T: VelocityStore> VelocityStore for Tracked<T> {
    async fn check(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Admission, StoreError> {
        self.inner.check(event, counters, now).await
    }
    async fn record(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Vec<u32>, StoreError> {
        self.inner.record(event, counters, now).await
    }
    async fn link(&self, event: EventId, join: &Join<'_>, now: Millis) -> Result<Link, StoreError> {
        self.inner.link(event, join, now).await
    }
    async fn link_all(
        &self,
        event: EventId,
        joins: &[Join<'_>],
        now: Millis,
    ) -> Result<Links, StoreError> {
        self.inner.link_all(event, joins, now).await
    }
    async fn stash(
        &self,
        event: EventId,
        key: &str,
        value: &str,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.inner.stash(event, key, value, ttl_ms, now).await
    }
    async fn take(
        &self,
        event: EventId,
        key: &str,
        now: Millis,
    ) -> Result<Option<String>, StoreError> {
        self.inner.take(event, key, now).await
    }
    async fn clusters(
        &self,
        event: EventId,
        dimension: Dimension,
        limit: usize,
    ) -> Result<Vec<Cluster>, StoreError> {
        self.inner.clusters(event, dimension, limit).await
    }
}

#[async_trait]
impl<T: ProofMemory> ProofMemory for Tracked<T> {
    async fn first_use(
        &self,
        event: EventId,
        jkt: &boxoffice_domain::possession::Thumbprint,
        jti: &str,
        ttl: std::time::Duration,
    ) -> Result<FirstUse, StoreError> {
        self.inner.first_use(event, jkt, jti, ttl).await
    }
}

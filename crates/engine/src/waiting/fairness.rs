//! The verifiable pre-opening pool: the seed is drawn (first writer wins across nodes)
//! before anyone can see the pool, its hash is published, and at opening the pool is
//! ordered by `HMAC(seed, buyer_id)` and placed ahead of later arrivals. Once placed,
//! the seed and the pool's members are public, so anyone can recompute every position.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::fairness::{Seed, order_pool};
use boxoffice_domain::{BuyerId, EventId, SaleStatus};
use serde::Serialize;

use super::claim::{LINE_CLAIM_MS, LineClaim};
use super::settings::SEED;
use crate::ports::{JoinRecord, LinePlace, QueueState, RestoredLine};
use crate::{Engine, EngineError};

/// Drawn places journaled per ledger call.
const JOURNAL_CHUNK: usize = 10_000;

/// The proof of an event's pre-opening draw (GET /v1/events/{id}/queue/fairness).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Fairness)]
pub struct FairnessView {
    pub event_id: EventId,
    /// `hex(sha256(seed))`, published before opening.
    pub commitment: String,
    /// The seed in hex, once the pool is placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// Buyers who joined before opening.
    pub pool_size: u64,
    /// The pool has its drawn positions.
    pub placed: bool,
    /// How to recompute the order from this document alone.
    pub algorithm: &'static str,
    /// Where this page of the pool starts.
    pub pool_offset: u64,
    /// Pool members (buyer ids, arrival order) from `pool_offset`, once placed.
    pub pool: Vec<String>,
}

const ALGORITHM: &str = "check sha256(seed) == commitment; draw(b) = HMAC-SHA256(key = the \
    32 seed bytes, message = b as lowercase hyphenated UUID text); the pool sorted by \
    (draw, buyer id text) ascending takes positions 1..=pool_size; later arrivals follow \
    in arrival order. `boxoffice verify-position` does this.";

/// Pool members read from the queue store at a time when checking it against the
/// ledger before the draw.
const POOL_PAGE: u64 = 10_000;

impl Engine {
    /// The event's seed, drawn now if no node has drawn it yet. The ledger keeps it for
    /// good (first writer wins), so a restart or a lost queue store never draws another
    /// one behind a published commitment; the queue store's copy spares the ledger a
    /// read per join, and puts the commitment in the public document. Read from the
    /// queue store now, so a store that lost its copy gets it back from the ledger.
    pub(crate) async fn fairness_seed(&self, event: EventId) -> Result<Seed, EngineError> {
        let stored = self.event_settings(event).await?.seed.clone();
        self.seed_or_draw(event, stored).await
    }

    /// `fairness_seed` for a join before opening: from this node's copy of the
    /// settings (`cached_settings`), so a join does not read the queue store for it. A
    /// seed never changes once kept, so any copy of it is the store's; a store that
    /// lost its copy gets it back once this node's copy is read again (within
    /// `public_doc_ttl_ms`), as it does when a join finds it missing.
    pub(crate) async fn join_seed(&self, event: EventId) -> Result<Seed, EngineError> {
        let stored = self.cached_settings(event).await?.seed.clone();
        self.seed_or_draw(event, stored).await
    }

    async fn seed_or_draw(
        &self,
        event: EventId,
        stored: Option<String>,
    ) -> Result<Seed, EngineError> {
        let stored = match stored {
            Some(seed) => seed,
            None => {
                let mut bytes = [0u8; 32];
                bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                let fresh = Seed(bytes).to_hex();
                let kept = self.ports.ledger.fairness_seed(event, &fresh).await?;
                self.put_setting(event, SEED, &kept, false).await?
            }
        };
        Seed::from_hex(&stored)
            .map_err(|_| EngineError::Internal(format!("unreadable seed for event {event}")))
    }

    /// At start-up, for each event not yet open: a queue store that lost the
    /// pre-opening pool (the in-process one at every restart) gets it back from the
    /// ledger, in arrival order. Returns how many buyers came back.
    pub async fn restore_pools(&self) -> Result<usize, EngineError> {
        let mut back = 0;
        for event in self
            .ports
            .ledger
            .events_with_status(SaleStatus::Scheduled)
            .await?
        {
            if self.ports.queue.state(event).await?.queue_length > 0 {
                continue;
            }
            for buyer in self.ports.ledger.pool_joins(event).await? {
                self.ports.queue.join(event, buyer, false).await?;
                back += 1;
            }
        }
        Ok(back)
    }

    /// Opens the event's line in the queue store if it is not open there yet: at the
    /// sale's opening, the pool is sealed, drawn and placed; after the store lost the
    /// line, the line is put back from the ledger's journal with every place and every
    /// admission it had. One caller across the nodes does it, under the line's claim
    /// (renewed while it works: `under_line_claim`); the others wait for it. Safe to run
    /// on every node and every tick.
    pub(crate) async fn ensure_line(&self, event: EventId) -> Result<(), EngineError> {
        if self.ports.queue.state(event).await?.placed {
            return Ok(());
        }
        let open = |claim: Arc<LineClaim>| async move { self.open_line(event, &claim).await };
        match self.under_line_claim(event, open).await? {
            Some(()) => Ok(()),
            None => self.await_line(event).await,
        }
    }

    /// Waits while another node opens or restores the line.
    async fn await_line(&self, event: EventId) -> Result<(), EngineError> {
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(LINE_CLAIM_MS) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            if self.ports.queue.state(event).await?.placed {
                return Ok(());
            }
        }
        Err(EngineError::Unavailable(
            "the line is being brought back; retry".into(),
        ))
    }

    /// Under the line claim: restores the journaled line, or draws and places the pool.
    /// Every write first checks that the claim is still held.
    async fn open_line(&self, event: EventId, claim: &LineClaim) -> Result<(), EngineError> {
        // Someone may have finished between our look and our claim.
        let state = self.ports.queue.state(event).await?;
        if state.placed {
            return Ok(());
        }
        if !self.ports.ledger.line_places(event).await?.is_empty() {
            return self.finish_and_restore(event, state, claim).await;
        }
        if !state.opened {
            // A queue store that lost the pool, or part of it (a failover's replica
            // behind the primary), gets the ledger's joins back before the seal: the
            // draw places every buyer the ledger kept, not only those the store still has.
            self.restore_lost_pool(event, claim).await?;
        }
        claim.held()?;
        let pool = self.ports.queue.seal_pool(event).await?;
        let ordered = self.journal_draw(event, &pool, claim).await?;
        claim.held()?;
        self.ports.queue.place_pool(event, &ordered).await?;
        tracing::info!(event = %event, pool = ordered.len(), "pre-opening pool placed");
        // A queue store that lost an open event before anyone joined lost its settings too.
        self.restore_line_settings(event, claim).await
    }

    /// Joins back into the queue store's pool every buyer the ledger kept as a pool
    /// join that the store's pool does not hold (joining is idempotent, so a buyer who
    /// joins meanwhile is harmless). Read a page at a time.
    async fn restore_lost_pool(
        &self,
        event: EventId,
        claim: &LineClaim,
    ) -> Result<(), EngineError> {
        let mut held = std::collections::HashSet::new();
        loop {
            let page = (self.ports.queue)
                .pool_members(event, held.len() as u64, POOL_PAGE)
                .await?;
            let last = (page.len() as u64) < POOL_PAGE;
            held.extend(page);
            if last {
                break;
            }
            claim.held()?;
        }
        let mut back = 0u64;
        for buyer in self.ports.ledger.pool_joins(event).await? {
            if !held.contains(&buyer) {
                claim.held()?;
                self.ports.queue.join(event, buyer, false).await?;
                back += 1;
            }
        }
        if back > 0 {
            tracing::warn!(event = %event, back, "pool joins the queue store had lost were put back before the draw");
        }
        Ok(())
    }

    /// The operator's waiting-room settings (admission override, rules) kept in the
    /// ledger come back into a queue store that lost them with the line; a setting the
    /// store still has (or was given since) stays as it is.
    async fn restore_line_settings(
        &self,
        event: EventId,
        claim: &LineClaim,
    ) -> Result<(), EngineError> {
        for (name, value) in self.ports.ledger.line_settings(event).await? {
            claim.held()?;
            self.put_setting(event, &name, &value, true).await?;
        }
        Ok(())
    }

    /// Places are journaled but the queue store has no placed line. Either the store
    /// lost it, or an opening stopped after sealing the pool (later arrivals already
    /// took, and journaled, the places behind it) and before its draw was journaled
    /// whole. The draw is journaled first (again: the seed and so the order are the
    /// same, and a place journaled twice stands once), from the sealed pool if the
    /// store still holds it, else from the ledger's pool joins that have no place; then
    /// the line is put back from the ledger, so no pool member loses their place.
    async fn finish_and_restore(
        &self,
        event: EventId,
        state: QueueState,
        claim: &LineClaim,
    ) -> Result<(), EngineError> {
        // This node's places still in flight to the ledger must be in what is put back,
        // or their positions are handed out again (seen under a rush: a restore right
        // after the opening, then one more for each place it had dropped).
        self.waiting.journal.settled().await;
        let kept = self.ports.ledger.line_places(event).await?;
        let pool = if state.opened && state.pool_size > 0 {
            claim.held()?;
            self.ports.queue.seal_pool(event).await?
        } else if kept.iter().any(|p| p.pool) {
            Vec::new()
        } else {
            let placed: HashSet<BuyerId> = kept.iter().map(|p| p.buyer).collect();
            let joins = self.ports.ledger.pool_joins(event).await?;
            joins.into_iter().filter(|b| !placed.contains(b)).collect()
        };
        if pool.is_empty() {
            return self.restore_line(event, kept, claim).await;
        }
        self.journal_draw(event, &pool, claim).await?;
        tracing::warn!(event = %event, pool = pool.len(), "an opening that stopped before its draw was journaled is finished");
        let kept = self.ports.ledger.line_places(event).await?;
        self.restore_line(event, kept, claim).await
    }

    /// Orders the pool by the event's seed and journals the drawn places (positions
    /// 1..=pool) before any buyer can see them; returns the order.
    async fn journal_draw(
        &self,
        event: EventId,
        pool: &[BuyerId],
        claim: &LineClaim,
    ) -> Result<Vec<BuyerId>, EngineError> {
        let seed = self.fairness_seed(event).await?;
        let ordered = order_pool(&seed, pool);
        let at = self.now();
        let drawn: Vec<JoinRecord> = ordered
            .iter()
            .enumerate()
            .map(|(i, buyer)| JoinRecord {
                event,
                buyer: *buyer,
                at,
                position: Some(i as u64 + 1),
                pool: true,
            })
            .collect();
        for chunk in drawn.chunks(JOURNAL_CHUNK) {
            // Arrivals after the seal are placed behind the sealed pool, so a drawn
            // place is the first of its position, and a redraw draws the same.
            claim.held()?;
            self.ports.ledger.record_joins(chunk).await?;
        }
        Ok(ordered)
    }

    /// Puts the journaled line back into a queue store that lost it: the same places
    /// (the published draw included), the pool in arrival order, every admission batch,
    /// so whoever was admitted stays admitted until their admission's own end.
    async fn restore_line(
        &self,
        event: EventId,
        kept: Vec<LinePlace>,
        claim: &LineClaim,
    ) -> Result<(), EngineError> {
        let members: HashSet<BuyerId> = kept.iter().filter(|p| p.pool).map(|p| p.buyer).collect();
        let mut pool: Vec<BuyerId> = self
            .ports
            .ledger
            .pool_joins(event)
            .await?
            .into_iter()
            .filter(|b| members.contains(b))
            .collect();
        if pool.len() != members.len() {
            // Every drawn member joined the pool first; if the journal says otherwise,
            // list the pool in drawn order rather than lose a member.
            pool = kept.iter().filter(|p| p.pool).map(|p| p.buyer).collect();
        }
        // A batch may have reached past the journaled places (a join whose journal write
        // had not landed, never confirmed to its buyer). The restored line hands those
        // positions out again, to buyers who join after it: capped at the line, the
        // batches admit only the places they admitted, and a later joiner's admission
        // counts from a batch after their join, not from one before it.
        let len = kept.iter().map(|p| p.position).max().unwrap_or(0);
        let batches = (self.ports.ledger.admissions(event).await?.into_iter())
            .map(|(to, at)| (to.min(len), at))
            .collect();
        let line = RestoredLine {
            positions: kept.iter().map(|p| (p.buyer, p.position)).collect(),
            pool,
            batches,
        };
        claim.held()?;
        self.ports.queue.restore_line(event, &line).await?;
        // The queue store's copy of the seed went with the line; the ledger's comes back,
        // and so do the operator's settings.
        claim.held()?;
        self.fairness_seed(event).await?;
        self.restore_line_settings(event, claim).await?;
        metrics::counter!("boxoffice_lines_restored_total").increment(1);
        tracing::warn!(
            event = %event,
            places = line.positions.len(),
            batches = line.batches.len(),
            "the queue store had lost the line: restored from the ledger"
        );
        Ok(())
    }

    /// Journals a join (batched with the other joins in flight on this node); whether
    /// its record stands.
    pub(crate) async fn journal_join(&self, join: JoinRecord) -> Result<bool, EngineError> {
        let record = self.waiting.journal.record(&self.ports.ledger, join);
        Ok(crate::queue::join_step("journal", record).await?)
    }

    /// The queue store handed out a place the ledger refused: its line is behind the
    /// journal (it was restored while a join's journal write was in flight, or it is a
    /// promoted replica that missed the last joins). One caller across the nodes puts
    /// the journaled line back over it, the others wait for that, as for a lost line.
    pub(crate) async fn restore_line_behind(&self, event: EventId) -> Result<(), EngineError> {
        let restore = |claim: Arc<LineClaim>| async move {
            metrics::counter!("boxoffice_lines_behind_ledger_total").increment(1);
            // This node's places still in flight to the ledger must be in what is put back.
            self.waiting.journal.settled().await;
            let kept = self.ports.ledger.line_places(event).await?;
            self.restore_line(event, kept, &claim).await
        };
        match self.under_line_claim(event, restore).await? {
            Some(()) => Ok(()),
            None => self.await_line(event).await,
        }
    }

    pub async fn fairness(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<FairnessView, EngineError> {
        self.event(event).await?;
        let seed = self.fairness_seed(event).await?;
        let state = self.ports.queue.state(event).await?;
        // Past the end there is nothing to read, however large the offset asked.
        let pool = if state.placed && offset < state.pool_size {
            self.ports.queue.pool_members(event, offset, limit).await?
        } else {
            Vec::new()
        };
        Ok(FairnessView {
            event_id: event,
            commitment: seed.commitment(),
            seed: state.placed.then(|| seed.to_hex()),
            pool_size: state.pool_size,
            placed: state.placed,
            algorithm: ALGORITHM,
            pool_offset: offset,
            pool: pool.iter().map(ToString::to_string).collect(),
        })
    }
}

//! Claims and kept answers of a replay store in the ledger, gathered into batches.
//!
//! A request's claim of its Idempotency-Key (`begin`) and the keeping of its answer
//! (`finish`) are each a ledger write, and each write is a job of the ledger's writer:
//! its queue, its savepoint, its statements, its caller woken. A crowd's joins arrive
//! thousands a second, each with a claim and an answer. `BatchedReplays` hands claims
//! and answers to tasks that take whatever is queued and make it one call of the store
//! (`IdempotencyStore::begin_many`, `finish_many`): one writer job for the batch,
//! set-based where the store can. Every answer is the one the store would have given
//! the call alone; everything else goes straight through.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use boxoffice_domain::{Millis, OrderEvent, OrderId};
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::ports::{
    Answer, Begin, Claimant, IdempotencyStore, Incarnation, KeptMove, KeyClaim, KnownWrite, Lease,
    LedgerError, RenderKept, ReplayKey, StoreError, StoredResponse,
};

/// Claims (or answers) made in one call of the store, at most.
const MAX_BATCH: usize = 512;
/// Claims (or answers) waiting for a batch before their callers wait for room.
const QUEUED: usize = 16_384;
/// Batches of each kind in the store at once: while one is written, the next gathers,
/// and a store with several writers (PostgreSQL) can take two at a time.
const IN_FLIGHT: usize = 2;

struct Claim {
    claim: KeyClaim,
    claimant: Claimant,
    tx: oneshot::Sender<Result<Begin, StoreError>>,
}

struct Queued {
    answer: Answer,
    tx: oneshot::Sender<Result<(), StoreError>>,
}

/// A replay store whose claims and answers go to it in batches.
pub struct BatchedReplays {
    inner: Arc<dyn IdempotencyStore>,
    claims: Lane<Claim>,
    answers: Lane<Queued>,
}

impl BatchedReplays {
    pub fn new(inner: Arc<dyn IdempotencyStore>) -> BatchedReplays {
        BatchedReplays {
            inner,
            claims: Lane::default(),
            answers: Lane::default(),
        }
    }
}

fn stopped() -> StoreError {
    StoreError::new("the replay store's batches stopped")
}

/// One kind of call, queued for its batch tasks (started at the first call, on the
/// caller's runtime; they end with the last sender).
struct Lane<T> {
    tx: OnceLock<mpsc::Sender<T>>,
}

impl<T> Default for Lane<T> {
    fn default() -> Self {
        Lane {
            tx: OnceLock::new(),
        }
    }
}

impl<T: Send + 'static> Lane<T> {
    /// Queues `item`; the first call starts the lane's tasks with what `run` makes.
    async fn send<M, F, Fut>(&self, item: T, run: M) -> Result<(), StoreError>
    where
        M: FnOnce() -> F,
        F: Fn(Vec<T>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tx = self.tx.get_or_init(|| {
            let run = run();
            let (tx, rx) = mpsc::channel(QUEUED);
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..IN_FLIGHT {
                tokio::spawn(drain(rx.clone(), run.clone()));
            }
            tx
        });
        tx.send(item).await.map_err(|_| stopped())
    }
}

/// Takes whatever is queued (up to `MAX_BATCH`) and runs it as one batch, until the
/// last sender has gone.
async fn drain<T, F, Fut>(rx: Arc<Mutex<mpsc::Receiver<T>>>, run: F)
where
    F: Fn(Vec<T>) -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        if rx.lock().await.recv_many(&mut batch, MAX_BATCH).await == 0 {
            return;
        }
        run(batch).await;
    }
}

/// One batch of claims: one `begin_many` per claimant (a node has one), each claim at
/// its own time (the lease it takes is the one its request finishes under).
async fn claim(store: Arc<dyn IdempotencyStore>, mut batch: Vec<Claim>) {
    metrics::histogram!("boxoffice_replay_claim_batch").record(batch.len() as f64);
    while let Some(first) = batch.first() {
        let claimant = first.claimant;
        let (same, rest): (Vec<Claim>, Vec<Claim>) =
            batch.into_iter().partition(|c| c.claimant == claimant);
        batch = rest;
        let (claims, replies): (Vec<_>, Vec<_>) = same.into_iter().map(|c| (c.claim, c.tx)).unzip();
        let begun = store.begin_many(&claims, &claimant).await;
        reply_each(replies, begun);
    }
}

async fn keep(store: Arc<dyn IdempotencyStore>, batch: Vec<Queued>) {
    metrics::histogram!("boxoffice_replay_answer_batch").record(batch.len() as f64);
    let (answers, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|a| (a.answer, a.tx)).unzip();
    let done = store.finish_many(&answers).await;
    reply_each(replies, done);
}

/// Each caller its own answer; a store that answered fewer than it was given fails the
/// rest.
fn reply_each<T>(
    replies: Vec<oneshot::Sender<Result<T, StoreError>>>,
    out: Vec<Result<T, StoreError>>,
) {
    let mut out = out.into_iter();
    for reply in replies {
        let one = out.next().unwrap_or_else(|| {
            Err(StoreError::new(
                "the replay store answered fewer calls than it was given",
            ))
        });
        // The caller may have gone away (request cancelled); nothing to tell.
        let _ = reply.send(one);
    }
}

#[async_trait]
impl IdempotencyStore for BatchedReplays {
    fn fingerprint(&self, parts: &[&[u8]]) -> [u8; 32] {
        self.inner.fingerprint(parts)
    }

    async fn begin(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        let (tx, rx) = oneshot::channel();
        let asked = KeyClaim {
            key: key.clone(),
            fingerprint: *fingerprint,
            now,
        };
        let item = Claim {
            claim: asked,
            claimant: *claimant,
            tx,
        };
        let store = || {
            let store = self.inner.clone();
            move |batch| claim(store.clone(), batch)
        };
        let started = std::time::Instant::now();
        self.claims.send(item, store).await?;
        let begun = rx.await.map_err(|_| stopped())?;
        metrics::histogram!("boxoffice_replay_claim_seconds")
            .record(started.elapsed().as_secs_f64());
        begun
    }

    async fn finish(
        &self,
        key: &ReplayKey,
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        let answer = Answer {
            key: key.clone(),
            lease,
            response: response.clone(),
        };
        let item = Queued { answer, tx };
        let store = || {
            let store = self.inner.clone();
            move |batch| keep(store.clone(), batch)
        };
        self.answers.send(item, store).await?;
        rx.await.map_err(|_| stopped())?
    }

    async fn begin_many(
        &self,
        claims: &[KeyClaim],
        claimant: &Claimant,
    ) -> Vec<Result<Begin, StoreError>> {
        self.inner.begin_many(claims, claimant).await
    }

    async fn finish_many(&self, answers: &[Answer]) -> Vec<Result<(), StoreError>> {
        self.inner.finish_many(answers).await
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

    async fn write_claimed(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
        write: KnownWrite,
        answer: &StoredResponse,
    ) -> Result<Option<Begin>, StoreError> {
        self.inner
            .write_claimed(key, fingerprint, now, claimant, write, answer)
            .await
    }

    async fn apply_kept(
        &self,
        key: &ReplayKey,
        lease: Lease,
        order: OrderId,
        event: OrderEvent,
        now: Millis,
        render: Arc<RenderKept>,
    ) -> Result<Option<KeptMove>, LedgerError> {
        self.inner
            .apply_kept(key, lease, order, event, now, render)
            .await
    }
}

//! `Idempotency-Key`s in the ledger's database, in their own table. Claims go through
//! the ledger's writer, so a claim shares the group commit with the writes it guards.
//! Each claim, finish and abandon locks its key's row alone, and says so
//! (`submit_row`): the writer takes such rows in key order, so two nodes' batches
//! never deadlock over keys. A write that still loses a race is run again from the
//! start after its savepoint was rolled back, so a claim decides on what it finds then
//! (a claim cannot count twice) and a finish writes the same answer again.
//!
//! Every node of a cluster writes here, so a claim records the incarnation of the node
//! that took it, and each node keeps a heartbeat in `node_heartbeats`. A claim whose
//! holder has not beaten for `dead_after_ms` belongs to a dead node and is taken over by
//! the retry at once. Heartbeats and pruning run on the pool, outside the group commit:
//! neither has anything to wait for, nor should a commit wait for them.

use async_trait::async_trait;
use std::sync::Arc;

use boxoffice_domain::{Millis, OrderEvent, OrderId};
use boxoffice_engine::OrderView;
use boxoffice_engine::ports::{
    Begin, Claimant, IdempotencyStore, Incarnation, KeptMove, KnownWrite, LedgerError, RenderKept,
    ReplayKey, StoreError, StoredResponse,
};
use sqlx::{PgConnection, PgPool};

use crate::conn::db;
use crate::writer::{RowKey, Step, Writer};

/// The idempotency store of a [`crate::PostgresLedger`]; get one with `idempotency()`.
#[derive(Clone)]
pub struct PostgresIdempotency {
    pub(crate) writer: Writer,
    pub(crate) pool: PgPool,
    pub(crate) _guards: crate::ledger::Guards,
}

/// The fast path is one statement: a new key is inserted, and a claim with the same
/// fingerprint is taken over when its lease lapsed or its holder is dead (another node
/// with no heartbeat fresher than `$7` ms). Only when neither happened is the row read
/// to tell a replay, a mismatch and a running request apart.
const CLAIM: &str = "
    INSERT INTO idempotency_keys AS k
        (scope, key, fingerprint, state, lease_until, created_at, holder)
    VALUES ($1, $2, $3, 'in_flight', $4, $5, $6)
    ON CONFLICT (scope, key) DO UPDATE
    SET lease_until = excluded.lease_until, holder = excluded.holder
    WHERE k.state = 'in_flight' AND k.fingerprint = excluded.fingerprint
      AND (k.lease_until <= $5
           OR (k.holder IS DISTINCT FROM excluded.holder
               AND NOT EXISTS (SELECT 1 FROM node_heartbeats h
                               WHERE h.node = k.holder AND h.beat_at > $5 - $7)))
    RETURNING 1";

const BEAT: &str = "
    INSERT INTO node_heartbeats (node, beat_at) VALUES ($1, $2)
    ON CONFLICT (node) DO UPDATE SET beat_at = excluded.beat_at";

/// The oldest records first, a bounded batch per statement, so no statement holds
/// locks for long.
const PRUNE: &str = "
    DELETE FROM idempotency_keys WHERE (scope, key) IN (
        SELECT scope, key FROM idempotency_keys WHERE created_at < $1
        ORDER BY created_at LIMIT $2)";

type Claim = (Vec<u8>, String, Option<i32>, Option<Vec<u8>>);

async fn begin(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    fingerprint: &[u8; 32],
    now: Millis,
    claimant: &Claimant,
) -> Result<Begin, StoreError> {
    let claimed: Option<i32> = sqlx::query_scalar(CLAIM)
        .bind(scope)
        .bind(key)
        .bind(fingerprint.as_slice())
        .bind(now.0.saturating_add(claimant.lease_ms))
        .bind(now.0)
        .bind(claimant.node.0.as_slice())
        .bind(claimant.dead_after_ms)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    if claimed.is_some() {
        return Ok(Begin::Proceed);
    }
    let claim: Option<Claim> = sqlx::query_as(
        "SELECT fingerprint, state, status, body FROM idempotency_keys WHERE scope = $1 AND key = $2",
    )
    .bind(scope)
    .bind(key)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    Ok(match claim {
        // Abandoned by another node between the two statements: the caller retries.
        None => Begin::InFlight,
        Some((stored, ..)) if stored != fingerprint.as_slice() => Begin::Mismatch,
        Some((_, state, status, body)) if state == "done" => Begin::Replay(StoredResponse {
            status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(500),
            body: body.unwrap_or_default(),
        }),
        Some(_) => Begin::InFlight,
    })
}

/// Stores `response` as the key's answer. Run again, it writes the same answer again.
async fn finish(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    response: &StoredResponse,
) -> Result<Step<()>, StoreError> {
    let changed = sqlx::query(
        "UPDATE idempotency_keys SET state = 'done', status = $3, body = $4
         WHERE scope = $1 AND key = $2",
    )
    .bind(scope)
    .bind(key)
    .bind(i32::from(response.status))
    .bind(&response.body)
    .execute(&mut *conn)
    .await
    .map_err(db)?
    .rows_affected();
    match changed {
        0 => Err(StoreError::new(format_args!(
            "no claim for idempotency key {key:?} to finish"
        ))),
        _ => Ok(Step::Keep(())),
    }
}

/// `begin`, and when it is granted the write and `finish`, in one job: the claim, the
/// write and the answer share the job's savepoint, so a failure of any undoes all three
/// (and a lost race runs all three again).
async fn write_claimed(
    conn: &mut PgConnection,
    key: (&str, &str),
    fingerprint: &[u8; 32],
    now: Millis,
    claimant: &Claimant,
    write: KnownWrite,
    answer: &StoredResponse,
) -> Result<Begin, StoreError> {
    let begun = begin(conn, key, fingerprint, now, claimant).await?;
    if begun != Begin::Proceed {
        return Ok(begun);
    }
    match write {
        KnownWrite::AnswerOnly => {}
        KnownWrite::SignUp { buyer, at } => {
            crate::events::create_buyer(conn, buyer, at).await?;
        }
    }
    finish(conn, key, answer).await?;
    Ok(Begin::Proceed)
}

/// The order's move and, only when it moved, its rendered answer kept as the key's, in
/// one job (`IdempotencyStore::apply_kept`); run again after a lost race, it decides
/// again on what it finds. A refused move writes nothing and keeps nothing. A key with
/// no running claim (pruned, or finished already) keeps the move and no answer: the
/// move is the ledger's truth, and the caller keeps its answer as it would have.
async fn apply_kept(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    (order, event, now): (OrderId, OrderEvent, Millis),
    render: &RenderKept,
) -> Result<Step<Result<KeptMove, LedgerError>>, StoreError> {
    let order = match crate::moves::apply(conn, order, event, None, now).await? {
        Step::Keep(Ok(order)) => order,
        Step::Keep(Err(e)) | Step::Undo(Err(e)) => return Ok(Step::Undo(Err(e))),
        Step::Undo(Ok(_)) => return Err(StoreError::new("postgres: a move undid itself")),
    };
    let kept = match render(&OrderView::from(&order)) {
        Some(answer) => {
            let claimed = sqlx::query(
                "UPDATE idempotency_keys SET state = 'done', status = $3, body = $4
                 WHERE scope = $1 AND key = $2 AND state = 'in_flight'",
            )
            .bind(scope)
            .bind(key)
            .bind(i32::from(answer.status))
            .bind(&answer.body)
            .execute(&mut *conn)
            .await
            .map_err(db)?
            .rows_affected();
            (claimed == 1).then_some(answer)
        }
        None => None,
    };
    Ok(Step::Keep(Ok(KeptMove { order, kept })))
}

async fn abandon(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
) -> Result<Step<()>, StoreError> {
    // A finished key is kept: abandoning it must not allow a second effect.
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND state = 'in_flight'",
    )
    .bind(scope)
    .bind(key)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(()))
}

#[async_trait]
impl IdempotencyStore for PostgresIdempotency {
    async fn begin(
        &self,
        replay: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        let (fingerprint, claimant) = (*fingerprint, *claimant);
        self.writer
            .submit_row(row.clone(), move |conn| {
                let (scope, key) = row.clone();
                Box::pin(async move {
                    begin(conn, (&scope, &key), &fingerprint, now, &claimant)
                        .await
                        .map(Step::Keep)
                })
            })
            .await
    }

    async fn finish(
        &self,
        replay: &ReplayKey,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        let response = response.clone();
        self.writer
            .submit_row(row.clone(), move |conn| {
                let ((scope, key), response) = (row.clone(), response.clone());
                Box::pin(async move { finish(conn, (&scope, &key), &response).await })
            })
            .await
    }

    async fn abandon(&self, replay: &ReplayKey) -> Result<(), StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        self.writer
            .submit_row(row.clone(), move |conn| {
                let (scope, key) = row.clone();
                Box::pin(async move { abandon(conn, (&scope, &key)).await })
            })
            .await
    }

    async fn write_claimed(
        &self,
        replay: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
        write: KnownWrite,
        answer: &StoredResponse,
    ) -> Result<Option<Begin>, StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        let (fingerprint, claimant, answer) = (*fingerprint, *claimant, answer.clone());
        self.writer
            .submit_row(row.clone(), move |conn| {
                let ((scope, key), answer) = (row.clone(), answer.clone());
                Box::pin(async move {
                    let key = (scope.as_str(), key.as_str());
                    write_claimed(conn, key, &fingerprint, now, &claimant, write, &answer)
                        .await
                        .map(Step::Keep)
                })
            })
            .await
            .map(Some)
    }

    /// A plain job, not one of a key's row (`submit_row`): it locks the order's row as
    /// the ledger's own moves do, and the key's row after it; should that ever meet
    /// another batch in a deadlock, it is undone and run again as any job is.
    async fn apply_kept(
        &self,
        replay: &ReplayKey,
        order: OrderId,
        event: OrderEvent,
        now: Millis,
        render: Arc<RenderKept>,
    ) -> Result<Option<KeptMove>, LedgerError> {
        let (scope, key) = (replay.scope().to_owned(), replay.key().to_owned());
        let moved = self
            .writer
            .submit(move |conn| {
                let (scope, key, render) = (scope.clone(), key.clone(), render.clone());
                Box::pin(async move {
                    let key = (scope.as_str(), key.as_str());
                    apply_kept(conn, key, (order, event, now), &*render).await
                })
            })
            .await?;
        moved.map(Some)
    }

    async fn heartbeat(&self, node: Incarnation, now: Millis) -> Result<(), StoreError> {
        sqlx::query(BEAT)
            .bind(node.0.as_slice())
            .bind(now.0)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        let pruned = sqlx::query(PRUNE)
            .bind(before.0)
            .bind(i64::from(limit))
            .execute(&self.pool)
            .await
            .map_err(db)?
            .rows_affected();
        sqlx::query("DELETE FROM node_heartbeats WHERE beat_at < $1")
            .bind(before.0)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(pruned)
    }
}

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
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use boxoffice_domain::{Millis, OrderEvent, OrderId};
use boxoffice_engine::OrderView;
use boxoffice_engine::ports::{
    Answer, Begin, Claimant, IdempotencyStore, Incarnation, KeptMove, KeyClaim, KnownWrite, Lease,
    LedgerError, RenderKept, ReplayKey, StoreError, StoredResponse,
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

/// When a claim finds its key taken and takes it over anyway: a claim with the same
/// fingerprint whose lease lapsed (the claim's time, `excluded.created_at`, is now) or
/// whose holder is dead (another node with no heartbeat fresher than `$7` ms).
macro_rules! take_over {
    () => {
        "
    ON CONFLICT (scope, key) DO UPDATE
    SET lease_until = excluded.lease_until, holder = excluded.holder
    WHERE k.state = 'in_flight' AND k.fingerprint = excluded.fingerprint
      AND (k.lease_until <= excluded.created_at
           OR (k.holder IS DISTINCT FROM excluded.holder
               AND NOT EXISTS (SELECT 1 FROM node_heartbeats h
                               WHERE h.node = k.holder
                                 AND h.beat_at > excluded.created_at - $7)))"
    };
}

/// The fast path is one statement: a new key is inserted, and a claim is taken over
/// (`take_over`). Only when neither happened is the row read to tell a replay, a
/// mismatch and a running request apart.
const CLAIM: &str = concat!(
    "
    INSERT INTO idempotency_keys AS k
        (scope, key, fingerprint, state, lease_until, created_at, holder)
    VALUES ($1, $2, $3, 'in_flight', $4, $5, $6)",
    take_over!(),
    "
    RETURNING 1"
);

/// `CLAIM` for a batch of distinct keys, each at its own time (`$5`, its lease's end
/// `$4`), in the order given (the caller sorts them, so rows are locked in key order);
/// answers the keys it claimed.
const CLAIM_MANY: &str = concat!(
    "
    INSERT INTO idempotency_keys AS k
        (scope, key, fingerprint, state, lease_until, created_at, holder)
    SELECT u.scope, u.key, u.fingerprint, 'in_flight', u.lease_until, u.created_at, $6
    FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int8[], $5::int8[])
        AS u(scope, key, fingerprint, lease_until, created_at)
    ORDER BY u.scope, u.key",
    take_over!(),
    "
    RETURNING k.scope, k.key"
);

/// The records of a batch's keys that `CLAIM_MANY` did not claim.
const READ_MANY: &str = "
    SELECT k.scope, k.key, k.fingerprint, k.state, k.status, k.body
    FROM idempotency_keys k
    JOIN unnest($1::text[], $2::text[]) AS u(scope, key)
      ON k.scope = u.scope AND k.key = u.key";

/// A batch's answers kept in one statement, each while the claim of its lease holds its
/// key; answers the keys and leases it found.
const FINISH_MANY: &str = "
    UPDATE idempotency_keys AS k SET state = 'done', status = u.status, body = u.body
    FROM unnest($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::bytea[], $6::int8[])
        AS u(scope, key, status, body, holder, lease_until)
    WHERE k.scope = u.scope AND k.key = u.key AND k.state = 'in_flight'
      AND k.holder = u.holder AND k.lease_until = u.lease_until
    RETURNING k.scope, k.key, k.holder, k.lease_until";

/// What `finish` and `abandon` are given beside the key: the claim that must still
/// hold it, by its holder (`$3`) and the end of its lease (`$4`).
macro_rules! held {
    () => {
        "state = 'in_flight' AND holder = $3 AND lease_until = $4"
    };
}

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

/// A claim's record with its scope and key, as `READ_MANY` answers it.
type KeyedClaim = (
    String,
    String,
    Vec<u8>,
    String,
    Option<i32>,
    Option<Vec<u8>>,
);

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
        .bind(claimant.lease_from(now).until.0)
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
    Ok(found(claim, fingerprint))
}

/// What a claim that was neither made nor taken over is told, from the key's record.
fn found(claim: Option<Claim>, fingerprint: &[u8; 32]) -> Begin {
    match claim {
        // Abandoned by another node between the two statements: the caller retries.
        None => Begin::InFlight,
        Some((stored, ..)) if stored != fingerprint.as_slice() => Begin::Mismatch,
        Some((_, state, status, body)) if state == "done" => Begin::Replay(StoredResponse {
            status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(500),
            body: body.unwrap_or_default(),
        }),
        Some(_) => Begin::InFlight,
    }
}

/// A batch's claims (`IdempotencyStore::begin_many`): every key's first claim in one
/// statement, the records of those it did not make in one read; a key's later claims
/// in the batch then begin alone, in turn, seeing the first. The statement takes its
/// keys in key order, as the writer takes single keys' rows: two nodes' batches over
/// the same keys wait for each other instead of deadlocking (each used to lock in its
/// requests' order, and PostgreSQL failed one a `deadlock_timeout` later).
async fn begin_many(
    conn: &mut PgConnection,
    claims: &[Owned],
    claimant: &Claimant,
) -> Result<Vec<Begin>, StoreError> {
    let (firsts, repeats) = firsts_of_each_key(claims);
    let mut out: Vec<Option<Begin>> = vec![None; claims.len()];
    let scopes: Vec<&str> = firsts.iter().map(|&i| claims[i].0.as_str()).collect();
    let keys: Vec<&str> = firsts.iter().map(|&i| claims[i].1.as_str()).collect();
    let prints: Vec<&[u8]> = firsts.iter().map(|&i| claims[i].2.as_slice()).collect();
    let nows: Vec<Millis> = firsts.iter().map(|&i| claims[i].3).collect();
    let untils: Vec<i64> = nows
        .iter()
        .map(|&n| claimant.lease_from(n).until.0)
        .collect();
    let nows: Vec<i64> = nows.iter().map(|n| n.0).collect();
    let claimed: Vec<(String, String)> = sqlx::query_as(CLAIM_MANY)
        .bind(&scopes)
        .bind(&keys)
        .bind(&prints)
        .bind(&untils)
        .bind(&nows)
        .bind(claimant.node.0.as_slice())
        .bind(claimant.dead_after_ms)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let claimed: HashSet<(String, String)> = claimed.into_iter().collect();
    let mut left = Vec::new();
    for &i in &firsts {
        let (scope, key, ..) = &claims[i];
        if claimed.contains(&(scope.clone(), key.clone())) {
            out[i] = Some(Begin::Proceed);
        } else {
            left.push(i);
        }
    }
    if !left.is_empty() {
        let scopes: Vec<&str> = left.iter().map(|&i| claims[i].0.as_str()).collect();
        let keys: Vec<&str> = left.iter().map(|&i| claims[i].1.as_str()).collect();
        let rows: Vec<KeyedClaim> = sqlx::query_as(READ_MANY)
            .bind(&scopes)
            .bind(&keys)
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?;
        let mut records: HashMap<(String, String), Claim> = rows
            .into_iter()
            .map(|(scope, key, fp, state, status, body)| ((scope, key), (fp, state, status, body)))
            .collect();
        for i in left {
            let (scope, key, fingerprint, _) = &claims[i];
            let record = records.remove(&(scope.clone(), key.clone()));
            out[i] = Some(found(record, fingerprint));
        }
    }
    for i in repeats {
        let (scope, key, fingerprint, now) = &claims[i];
        out[i] = Some(begin(conn, (scope, key), fingerprint, *now, claimant).await?);
    }
    Ok(out
        .into_iter()
        .map(|b| b.unwrap_or(Begin::InFlight))
        .collect())
}

/// A claim as a batch carries it: scope, key, fingerprint, time.
type Owned = (String, String, [u8; 32], Millis);

/// The index of each key's first claim, sorted by key (the order rows are locked in),
/// and the indices of the claims that repeat a key, in their order.
fn firsts_of_each_key(claims: &[Owned]) -> (Vec<usize>, Vec<usize>) {
    let mut seen = HashSet::new();
    let (mut firsts, mut repeats) = (Vec::new(), Vec::new());
    for (i, (scope, key, ..)) in claims.iter().enumerate() {
        if seen.insert((scope.as_str(), key.as_str())) {
            firsts.push(i);
        } else {
            repeats.push(i);
        }
    }
    firsts.sort_by(|&a, &b| (&claims[a].0, &claims[a].1).cmp(&(&claims[b].0, &claims[b].1)));
    (firsts, repeats)
}

/// An answer as a batch carries it: scope, key, lease, response.
type OwnedAnswer = (String, String, Lease, StoredResponse);

/// A batch's answers (`IdempotencyStore::finish_many`) in one statement, as `finish`
/// called for each in turn: a key given twice under one lease keeps its first answer
/// (the second finds the claim finished); a key its lease's claim no longer holds is
/// refused alone.
async fn finish_many(
    conn: &mut PgConnection,
    answers: &[OwnedAnswer],
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let mut first: HashMap<(&str, &str, Lease), usize> = HashMap::new();
    for (i, (scope, key, lease, _)) in answers.iter().enumerate() {
        first
            .entry((scope.as_str(), key.as_str(), *lease))
            .or_insert(i);
    }
    let mut kept: Vec<usize> = first.into_values().collect();
    kept.sort_by(|&a, &b| (&answers[a].0, &answers[a].1).cmp(&(&answers[b].0, &answers[b].1)));
    let scopes: Vec<&str> = kept.iter().map(|&i| answers[i].0.as_str()).collect();
    let keys: Vec<&str> = kept.iter().map(|&i| answers[i].1.as_str()).collect();
    let statuses: Vec<i32> = kept
        .iter()
        .map(|&i| i32::from(answers[i].3.status))
        .collect();
    let bodies: Vec<&[u8]> = kept.iter().map(|&i| answers[i].3.body.as_slice()).collect();
    let holders: Vec<&[u8]> = kept.iter().map(|&i| &answers[i].2.holder.0[..]).collect();
    let untils: Vec<i64> = kept.iter().map(|&i| answers[i].2.until.0).collect();
    let found: Vec<(String, String, Vec<u8>, i64)> = sqlx::query_as(FINISH_MANY)
        .bind(&scopes)
        .bind(&keys)
        .bind(&statuses)
        .bind(&bodies)
        .bind(&holders)
        .bind(&untils)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let found: HashSet<(String, String, Vec<u8>, i64)> = found.into_iter().collect();
    let kept: HashSet<usize> = kept.into_iter().collect();
    Ok((answers.iter().enumerate())
        .map(|(i, (scope, key, lease, _))| {
            let held = (
                scope.clone(),
                key.clone(),
                lease.holder.0.to_vec(),
                lease.until.0,
            );
            if kept.contains(&i) && found.contains(&held) {
                Ok(())
            } else {
                Err(not_held(key))
            }
        })
        .collect())
}

/// `finish` or `finish_many` found no claim of the lease it was given.
fn not_held(key: &str) -> StoreError {
    StoreError::new(format_args!(
        "no claim of this request's for idempotency key {key:?} to finish (finished, \
         forgotten, or taken over by a retry)"
    ))
}

/// Stores `response` as the key's answer, while the claim that took `lease` holds it.
/// Run again after a lost race, it writes the same answer again.
async fn finish(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    lease: Lease,
    response: &StoredResponse,
) -> Result<Step<()>, StoreError> {
    let changed = sqlx::query(concat!(
        "UPDATE idempotency_keys SET state = 'done', status = $5, body = $6
         WHERE scope = $1 AND key = $2 AND ",
        held!()
    ))
    .bind(scope)
    .bind(key)
    .bind(lease.holder.0.as_slice())
    .bind(lease.until.0)
    .bind(i32::from(response.status))
    .bind(&response.body)
    .execute(&mut *conn)
    .await
    .map_err(db)?
    .rows_affected();
    match changed {
        0 => Err(not_held(key)),
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
    finish(conn, key, claimant.lease_from(now), answer).await?;
    Ok(Begin::Proceed)
}

/// The order's move and, only when it moved, its rendered answer kept as the key's, in
/// one job (`IdempotencyStore::apply_kept`); run again after a lost race, it decides
/// again on what it finds. A refused move writes nothing and keeps nothing. A key with
/// no running claim of `lease`'s (pruned, finished already, or taken over by a retry)
/// keeps the move and no answer: the move is the ledger's truth, and the caller keeps
/// its answer as it would have.
async fn apply_kept(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    lease: Lease,
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
            let claimed = sqlx::query(concat!(
                "UPDATE idempotency_keys SET state = 'done', status = $5, body = $6
                 WHERE scope = $1 AND key = $2 AND ",
                held!()
            ))
            .bind(scope)
            .bind(key)
            .bind(lease.holder.0.as_slice())
            .bind(lease.until.0)
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
    lease: Lease,
) -> Result<Step<()>, StoreError> {
    // A finished key is kept: abandoning it must not allow a second effect. Nor is a
    // claim a retry took over freed under it.
    sqlx::query(concat!(
        "DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND ",
        held!()
    ))
    .bind(scope)
    .bind(key)
    .bind(lease.holder.0.as_slice())
    .bind(lease.until.0)
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
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        let response = response.clone();
        self.writer
            .submit_row(row.clone(), move |conn| {
                let ((scope, key), response) = (row.clone(), response.clone());
                Box::pin(async move { finish(conn, (&scope, &key), lease, &response).await })
            })
            .await
    }

    /// One writer job for the whole batch, its key the batch's first in key order (the
    /// order its rows are locked in).
    async fn begin_many(
        &self,
        claims: &[KeyClaim],
        claimant: &Claimant,
    ) -> Vec<Result<Begin, StoreError>> {
        let claims: Arc<Vec<Owned>> = Arc::new(
            claims
                .iter()
                .map(|c| {
                    let (scope, key) = (c.key.scope().to_owned(), c.key.key().to_owned());
                    (scope, key, c.fingerprint, c.now)
                })
                .collect(),
        );
        let (n, claimant) = (claims.len(), *claimant);
        let Some(row) = first_row(claims.iter().map(|c| (&c.0, &c.1))) else {
            return Vec::new();
        };
        let begun = self
            .writer
            .submit_row(row, move |conn| {
                let claims = claims.clone();
                Box::pin(async move { begin_many(conn, &claims, &claimant).await.map(Step::Keep) })
            })
            .await;
        match begun {
            Ok(each) => each.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e); n],
        }
    }

    async fn finish_many(&self, answers: &[Answer]) -> Vec<Result<(), StoreError>> {
        let answers: Arc<Vec<OwnedAnswer>> = Arc::new(
            answers
                .iter()
                .map(|a| {
                    let (scope, key) = (a.key.scope().to_owned(), a.key.key().to_owned());
                    (scope, key, a.lease, a.response.clone())
                })
                .collect(),
        );
        let n = answers.len();
        let Some(row) = first_row(answers.iter().map(|a| (&a.0, &a.1))) else {
            return Vec::new();
        };
        let done = self
            .writer
            .submit_row(row, move |conn| {
                let answers = answers.clone();
                Box::pin(async move { finish_many(conn, &answers).await.map(Step::Keep) })
            })
            .await;
        done.unwrap_or_else(|e| vec![Err(e); n])
    }

    async fn abandon(&self, replay: &ReplayKey, lease: Lease) -> Result<(), StoreError> {
        let row: RowKey = (replay.scope().to_owned(), replay.key().to_owned());
        self.writer
            .submit_row(row.clone(), move |conn| {
                let (scope, key) = row.clone();
                Box::pin(async move { abandon(conn, (&scope, &key), lease).await })
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
        lease: Lease,
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
                    apply_kept(conn, key, lease, (order, event, now), &*render).await
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

/// The first of a batch's keys in key order: the row a batch job is sorted by.
fn first_row<'a>(keys: impl Iterator<Item = (&'a String, &'a String)>) -> Option<RowKey> {
    keys.min().map(|(scope, key)| (scope.clone(), key.clone()))
}

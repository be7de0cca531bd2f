//! `Idempotency-Key`s in the ledger's file, in their own table. Claims go through the
//! ledger's writer, so a claim and the write it guards share the group commit and no
//! second writer ever contends for the file's lock.
//!
//! One process at a time opens the file, so a claim of any other incarnation than the
//! caller's was taken by an earlier life of this process, which is dead: a retry after a
//! restart takes it over at once. Records are pruned by age in small batches.

use async_trait::async_trait;
use std::sync::Arc;

use boxoffice_domain::{Millis, OrderEvent, OrderId};
use boxoffice_engine::OrderView;
use boxoffice_engine::ports::{
    Answer, Begin, Claimant, IdempotencyStore, Incarnation, KeptMove, KeyClaim, KnownWrite, Lease,
    LedgerError, RenderKept, ReplayKey, StoreError, StoredResponse,
};
use rusqlite::{Connection, OptionalExtension, params};

use crate::conn::db;
use crate::writer::{Step, Writer};

/// The idempotency store of a [`crate::SqliteLedger`]; get one with `idempotency()`.
#[derive(Clone)]
pub struct SqliteIdempotency {
    pub(crate) writer: Writer,
    pub(crate) _guards: crate::ledger::Guards,
}

struct Claim {
    fingerprint: Vec<u8>,
    done: bool,
    status: Option<u16>,
    body: Option<Vec<u8>>,
    lease_until: i64,
    holder: Option<Vec<u8>>,
}

impl Claim {
    /// Running, in this process, within its lease.
    fn running(&self, now: Millis, me: Incarnation) -> bool {
        self.lease_until > now.0 && self.holder.as_deref() == Some(me.0.as_slice())
    }
}

fn begin(
    conn: &Connection,
    scope: &str,
    key: &str,
    fingerprint: &[u8; 32],
    now: Millis,
    claimant: &Claimant,
) -> Result<Begin, StoreError> {
    let claim = conn
        .prepare_cached("SELECT fingerprint, state, status, body, lease_until, holder FROM idempotency_keys WHERE scope = ?1 AND key = ?2")
        .and_then(|mut s| {
            s.query_row(params![scope, key], |r| {
                let state: String = r.get(1)?;
                Ok(Claim { fingerprint: r.get(0)?, done: state == "done", status: r.get(2)?, body: r.get(3)?, lease_until: r.get(4)?, holder: r.get(5)? })
            })
            .optional()
        })
        .map_err(db)?;
    let lease = claimant.lease_from(now);
    let (lease_until, holder) = (lease.until.0, lease.holder.0.as_slice());
    match claim {
        Some(c) if c.fingerprint != fingerprint.as_slice() => Ok(Begin::Mismatch),
        Some(Claim {
            done: true,
            status,
            body,
            ..
        }) => Ok(Begin::Replay(StoredResponse {
            status: status.unwrap_or(500),
            body: body.unwrap_or_default(),
        })),
        Some(c) if c.running(now, claimant.node) => Ok(Begin::InFlight),
        // Its lease lapsed or its process died: this request takes the claim over.
        Some(_) => {
            conn.execute(
                "UPDATE idempotency_keys SET lease_until = ?3, holder = ?4 WHERE scope = ?1 AND key = ?2",
                params![scope, key, lease_until, holder],
            )
            .map_err(db)?;
            Ok(Begin::Proceed)
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO idempotency_keys (scope, key, fingerprint, state, lease_until, created_at, holder)
                 VALUES (?1, ?2, ?3, 'in_flight', ?4, ?5, ?6)",
            )
            .and_then(|mut s| s.execute(params![scope, key, fingerprint.as_slice(), lease_until, now.0, holder]))
            .map_err(db)?;
            Ok(Begin::Proceed)
        }
    }
}

/// Keeps `response` as the key's answer, while the claim that took `lease` holds it.
fn finish(
    conn: &Connection,
    (scope, key): (&str, &str),
    lease: Lease,
    response: &StoredResponse,
) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE idempotency_keys SET state = 'done', status = ?3, body = ?4
             WHERE scope = ?1 AND key = ?2 AND state = 'in_flight'
               AND holder = ?5 AND lease_until = ?6",
        )
        .and_then(|mut s| {
            let (holder, until) = (lease.holder.0.as_slice(), lease.until.0);
            s.execute(params![
                scope,
                key,
                response.status,
                response.body,
                holder,
                until
            ])
        })
        .map_err(db)?;
    match changed {
        0 => Err(StoreError::new(format_args!(
            "no claim of this request's for idempotency key {key:?} to finish (finished, \
             forgotten, or taken over by a retry)"
        ))),
        _ => Ok(()),
    }
}

/// `begin`, and when it is granted the write and `finish`, in one job: the claim, the
/// write and the answer share the job's savepoint, so a failure of any undoes all three.
fn write_claimed(
    conn: &Connection,
    (scope, key): (&str, &str),
    fingerprint: &[u8; 32],
    now: Millis,
    claimant: &Claimant,
    write: KnownWrite,
    answer: &StoredResponse,
) -> Result<Begin, StoreError> {
    let begun = begin(conn, scope, key, fingerprint, now, claimant)?;
    if begun != Begin::Proceed {
        return Ok(begun);
    }
    match write {
        KnownWrite::AnswerOnly => {}
        KnownWrite::SignUp { buyer, at } => {
            crate::events::create_buyer(conn, buyer, at)?;
        }
    }
    finish(conn, (scope, key), claimant.lease_from(now), answer)?;
    Ok(Begin::Proceed)
}

/// The order's move and, only when it moved, its rendered answer kept as the key's, in
/// one job (`IdempotencyStore::apply_kept`). A refused move writes nothing and keeps
/// nothing. A key with no running claim of `lease`'s (pruned, finished already, or
/// taken over by a retry) keeps the move and no answer: the move is the ledger's truth,
/// and the caller keeps its answer as it would have.
fn apply_kept(
    conn: &Connection,
    (scope, key): (&str, &str),
    lease: Lease,
    (order, event, now): (OrderId, OrderEvent, Millis),
    render: &RenderKept,
) -> Result<Step<Result<KeptMove, LedgerError>>, StoreError> {
    let order = match crate::moves::apply(conn, order, event, None, now)? {
        Step::Keep(Ok(order)) => order,
        Step::Keep(Err(e)) | Step::Undo(Err(e)) => return Ok(Step::Undo(Err(e))),
        Step::Undo(Ok(_)) => return Err(StoreError::new("sqlite: a move undid itself")),
    };
    let kept = match render(&OrderView::from(&order)) {
        Some(answer) => {
            let claimed = conn
                .prepare_cached(
                    "UPDATE idempotency_keys SET state = 'done', status = ?3, body = ?4
                     WHERE scope = ?1 AND key = ?2 AND state = 'in_flight'
                       AND holder = ?5 AND lease_until = ?6",
                )
                .and_then(|mut s| {
                    let (holder, until) = (lease.holder.0.as_slice(), lease.until.0);
                    let (status, body) = (answer.status, &answer.body);
                    s.execute(params![scope, key, status, body, holder, until])
                })
                .map_err(db)?;
            (claimed == 1).then_some(answer)
        }
        None => None,
    };
    Ok(Step::Keep(Ok(KeptMove { order, kept })))
}

/// The oldest records claimed before `before`, at most `limit`, in one short write.
fn prune(conn: &Connection, before: Millis, limit: u32) -> Result<u64, StoreError> {
    conn.prepare_cached(
        "DELETE FROM idempotency_keys WHERE (scope, key) IN (
             SELECT scope, key FROM idempotency_keys WHERE created_at < ?1
             ORDER BY created_at LIMIT ?2)",
    )
    .and_then(|mut s| s.execute(params![before.0, limit]))
    .map(|n| n as u64)
    .map_err(db)
}

#[async_trait]
impl IdempotencyStore for SqliteIdempotency {
    async fn begin(
        &self,
        replay: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        let (scope, key, fingerprint) = (
            replay.scope().to_owned(),
            replay.key().to_owned(),
            *fingerprint,
        );
        let claimant = *claimant;
        self.writer
            .submit(move |conn| {
                begin(conn, &scope, &key, &fingerprint, now, &claimant).map(Step::Keep)
            })
            .await
    }

    async fn finish(
        &self,
        replay: &ReplayKey,
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let (scope, key, response) = (
            replay.scope().to_owned(),
            replay.key().to_owned(),
            response.clone(),
        );
        self.writer
            .submit(move |conn| finish(conn, (&scope, &key), lease, &response).map(Step::Keep))
            .await
    }

    /// One writer job for the whole batch: each claim decides in turn on what the ones
    /// before it left, as separate calls would.
    async fn begin_many(
        &self,
        claims: &[KeyClaim],
        claimant: &Claimant,
    ) -> Vec<Result<Begin, StoreError>> {
        let claims: Vec<_> = claims
            .iter()
            .map(|c| {
                (
                    c.key.scope().to_owned(),
                    c.key.key().to_owned(),
                    c.fingerprint,
                    c.now,
                )
            })
            .collect();
        let (n, claimant) = (claims.len(), *claimant);
        let begun = self
            .writer
            .submit(move |conn| {
                let each = (claims.iter())
                    .map(|(scope, key, fp, now)| begin(conn, scope, key, fp, *now, &claimant));
                Ok(Step::Keep(each.collect::<Vec<_>>()))
            })
            .await;
        begun.unwrap_or_else(|e| vec![Err(e); n])
    }

    async fn finish_many(&self, answers: &[Answer]) -> Vec<Result<(), StoreError>> {
        let answers: Vec<_> = answers
            .iter()
            .map(|a| {
                (
                    a.key.scope().to_owned(),
                    a.key.key().to_owned(),
                    a.lease,
                    a.response.clone(),
                )
            })
            .collect();
        let n = answers.len();
        let done = self
            .writer
            .submit(move |conn| {
                let each = (answers.iter()).map(|(scope, key, lease, response)| {
                    finish(conn, (scope, key), *lease, response)
                });
                Ok(Step::Keep(each.collect::<Vec<_>>()))
            })
            .await;
        done.unwrap_or_else(|e| vec![Err(e); n])
    }

    async fn abandon(&self, replay: &ReplayKey, lease: Lease) -> Result<(), StoreError> {
        let (scope, key) = (replay.scope().to_owned(), replay.key().to_owned());
        self.writer
            .submit(move |conn| {
                // A finished key is kept: abandoning it must not allow a second effect.
                // Nor is a claim a retry took over freed under it.
                let (holder, until) = (lease.holder.0.as_slice(), lease.until.0);
                conn.execute(
                    "DELETE FROM idempotency_keys WHERE scope = ?1 AND key = ?2
                     AND state = 'in_flight' AND holder = ?3 AND lease_until = ?4",
                    params![scope, key, holder, until],
                )
                .map_err(db)?;
                Ok(Step::Keep(()))
            })
            .await
    }

    async fn heartbeat(&self, _node: Incarnation, _now: Millis) -> Result<(), StoreError> {
        Ok(())
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
        let (scope, key) = (replay.scope().to_owned(), replay.key().to_owned());
        let (fingerprint, claimant, answer) = (*fingerprint, *claimant, answer.clone());
        self.writer
            .submit(move |conn| {
                let key = (scope.as_str(), key.as_str());
                write_claimed(conn, key, &fingerprint, now, &claimant, write, &answer)
                    .map(Step::Keep)
            })
            .await
            .map(Some)
    }

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
                let key = (scope.as_str(), key.as_str());
                apply_kept(conn, key, lease, (order, event, now), &*render)
            })
            .await?;
        moved.map(Some)
    }

    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        self.writer
            .submit(move |conn| prune(conn, before, limit).map(Step::Keep))
            .await
    }
}

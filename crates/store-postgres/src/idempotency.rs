//! `Idempotency-Key`s in the ledger's database, in their own table. Claims go through
//! the ledger's writer, so a claim shares the group commit with the writes it guards.

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{Begin, IdempotencyStore, StoreError, StoredResponse};
use sqlx::PgConnection;

use crate::conn::db;
use crate::writer::{Step, Writer};

/// The idempotency store of a [`crate::PostgresLedger`]; get one with `idempotency()`.
#[derive(Clone)]
pub struct PostgresIdempotency {
    pub(crate) writer: Writer,
    pub(crate) _guards: crate::ledger::Guards,
}

/// The fast path is one statement: a new key is inserted, and a lapsed claim with the
/// same fingerprint is taken over (its holder crashed or gave up). Only when neither
/// happened is the row read to tell a replay, a mismatch and a running request apart.
const CLAIM: &str = "
    INSERT INTO idempotency_keys AS k (scope, key, fingerprint, state, lease_until, created_at)
    VALUES ($1, $2, $3, 'in_flight', $4, $5)
    ON CONFLICT (scope, key) DO UPDATE SET lease_until = excluded.lease_until
    WHERE k.state = 'in_flight' AND k.lease_until <= $5 AND k.fingerprint = excluded.fingerprint
    RETURNING 1";

type Claim = (Vec<u8>, String, Option<i32>, Option<Vec<u8>>);

async fn begin(
    conn: &mut PgConnection,
    (scope, key): (&str, &str),
    fingerprint: &[u8; 32],
    now: Millis,
    lease_ms: i64,
) -> Result<Begin, StoreError> {
    let claimed: Option<i32> = sqlx::query_scalar(CLAIM)
        .bind(scope)
        .bind(key)
        .bind(fingerprint.as_slice())
        .bind(now.0.saturating_add(lease_ms))
        .bind(now.0)
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

#[async_trait]
impl IdempotencyStore for PostgresIdempotency {
    async fn begin(
        &self,
        scope: &str,
        key: &str,
        fingerprint: &[u8; 32],
        now: Millis,
        lease_ms: i64,
    ) -> Result<Begin, StoreError> {
        let (scope, key, fingerprint) = (scope.to_owned(), key.to_owned(), *fingerprint);
        self.writer
            .submit(move |conn| {
                Box::pin(async move {
                    begin(conn, (&scope, &key), &fingerprint, now, lease_ms)
                        .await
                        .map(Step::Keep)
                })
            })
            .await
    }

    async fn finish(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let (scope, key, response) = (scope.to_owned(), key.to_owned(), response.clone());
        self.writer
            .submit(move |conn| {
                Box::pin(async move {
                    let changed = sqlx::query(
                        "UPDATE idempotency_keys SET state = 'done', status = $3, body = $4
                         WHERE scope = $1 AND key = $2",
                    )
                    .bind(&scope)
                    .bind(&key)
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
                })
            })
            .await
    }

    async fn abandon(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        self.writer
            .submit(move |conn| {
                Box::pin(async move {
                    // A finished key is kept: abandoning it must not allow a second effect.
                    sqlx::query(
                        "DELETE FROM idempotency_keys
                         WHERE scope = $1 AND key = $2 AND state = 'in_flight'",
                    )
                    .bind(&scope)
                    .bind(&key)
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                    Ok(Step::Keep(()))
                })
            })
            .await
    }
}

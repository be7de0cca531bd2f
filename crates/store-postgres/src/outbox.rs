//! The outbox as the relay sees it (the `Outbox` port): sinks, the deliveries each still
//! has to receive, their claims, and the order history the outbox is written from
//! (migrations/postgres/0007_order_events_out.sql writes both by trigger). These calls
//! run on the pool, beside the commit writer. A claim is one statement: `FOR UPDATE
//! SKIP LOCKED` lets relays on several nodes claim at once without waiting for each
//! other or taking the same delivery.

use async_trait::async_trait;
use boxoffice_domain::{EventId, Millis, OrderId, OrderState};
use boxoffice_engine::ports::{
    ClaimDeliveries, DeadLetter, Delivery, Failure, HistoryLine, NATS_SINK, Outbox, OutboxEvent,
    Sink, SinkKind, StoreError,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::PostgresLedger;
use crate::conn::{corrupt, db};

const HISTORY: &str =
    "SELECT event, from_state, to_state, at FROM order_events WHERE order_id = $1 ORDER BY id";

const CLAIM: &str = "
    WITH due AS (
        SELECT d.sink, d.outbox_id FROM outbox_deliveries d
        WHERE d.dead_at IS NULL AND d.next_attempt_at <= $1 AND d.lease_until <= $1
          AND ($3 OR d.sink <> $4)
          AND NOT EXISTS (SELECT 1 FROM outbox_deliveries e
                          WHERE e.sink = d.sink AND e.order_id = d.order_id
                            AND e.outbox_id < d.outbox_id AND e.dead_at IS NULL)
        ORDER BY d.outbox_id LIMIT $2
        FOR UPDATE SKIP LOCKED
    ), leased AS (
        UPDATE outbox_deliveries d SET lease_owner = $5, lease_until = $6, attempts = d.attempts + 1
        FROM due WHERE d.sink = due.sink AND d.outbox_id = due.outbox_id
        RETURNING d.sink, d.outbox_id, d.attempts
    )
    SELECT l.sink, l.attempts, o.id, o.order_id, o.sale_event_id, o.seq, o.kind, o.payload::text, o.created_at
    FROM leased l JOIN outbox o ON o.id = l.outbox_id ORDER BY o.id";

/// A failed attempt, and (unless it died) the later deliveries of its order to the same
/// sink moved to its retry: they wait for it anyway (`CLAIM`'s earlier-event check),
/// and left due they were read by every claim, so a claim cost the whole backlog of a
/// failing sink.
const FAILED: &str = "
    WITH head AS (
        UPDATE outbox_deliveries SET lease_owner = NULL, lease_until = 0, next_attempt_at = $4,
            last_error = $5, dead_at = CASE WHEN $6 THEN $7 END
        WHERE sink = $1 AND outbox_id = $2 AND lease_owner = $3
        RETURNING order_id)
    UPDATE outbox_deliveries f SET next_attempt_at = $4
    FROM head
    WHERE NOT $6 AND f.sink = $1 AND f.order_id = head.order_id AND f.outbox_id > $2
      AND f.dead_at IS NULL AND f.next_attempt_at < $4";

const DEAD: &str = "
    SELECT d.attempts, d.last_error, d.dead_at, o.id, o.order_id, o.sale_event_id, o.seq, o.kind,
        o.payload::text, o.created_at
    FROM outbox_deliveries d JOIN outbox o ON o.id = d.outbox_id
    WHERE d.sink = $1 AND d.dead_at IS NOT NULL ORDER BY d.outbox_id LIMIT $2";

const RELEASE: &str = "
    UPDATE outbox_deliveries SET lease_owner = NULL, lease_until = 0
    WHERE lease_owner IS NOT NULL AND lease_owner <> $1";

const REPLAY: &str = "
    UPDATE outbox_deliveries SET dead_at = NULL, attempts = 0, next_attempt_at = $2,
        lease_owner = NULL, lease_until = 0
    WHERE sink = $1 AND dead_at IS NOT NULL";

fn event(row: &PgRow, at: usize) -> Result<OutboxEvent, StoreError> {
    let order: String = row.try_get(at + 1).map_err(db)?;
    Ok(OutboxEvent {
        row: row.try_get(at).map_err(db)?,
        order: order
            .parse()
            .map_err(|_| corrupt("outbox order id", &order))?,
        sale_event: EventId(row.try_get(at + 2).map_err(db)?),
        sequence: u32::try_from(row.try_get::<i32, _>(at + 3).map_err(db)?).unwrap_or(0),
        kind: row.try_get(at + 4).map_err(db)?,
        payload: row.try_get(at + 5).map_err(db)?,
        created_at: Millis(row.try_get(at + 6).map_err(db)?),
    })
}

fn attempts(row: &PgRow, at: usize) -> Result<u32, StoreError> {
    Ok(u32::try_from(row.try_get::<i32, _>(at).map_err(db)?).unwrap_or(0))
}

fn state(s: &str) -> Result<OrderState, StoreError> {
    OrderState::parse(s).ok_or_else(|| corrupt("order state", s))
}

#[async_trait]
impl Outbox for PostgresLedger {
    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn history(&self, order: OrderId) -> Result<Vec<HistoryLine>, StoreError> {
        let rows = sqlx::query(HISTORY)
            .bind(order.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut lines = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let from: Option<String> = row.try_get(1).map_err(db)?;
            lines.push(HistoryLine {
                sequence: u32::try_from(i + 1).unwrap_or(u32::MAX),
                event: row.try_get(0).map_err(db)?,
                from_state: from.as_deref().map(state).transpose()?,
                to_state: state(&row.try_get::<String, _>(2).map_err(db)?)?,
                at: Millis(row.try_get(3).map_err(db)?),
            });
        }
        Ok(lines)
    }

    async fn add_sink(&self, sink: &Sink) -> Result<(), StoreError> {
        let (kind, url, secret) = match &sink.kind {
            SinkKind::Webhook { url, secret } => ("webhook", url.as_str(), secret.as_str()),
            SinkKind::Nats => ("nats", "", ""),
        };
        sqlx::query(
            "INSERT INTO outbox_sinks (id, kind, url, secret, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&sink.id)
        .bind(kind)
        .bind(url)
        .bind(secret)
        .bind(sink.created_at.0)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn sinks(&self) -> Result<Vec<Sink>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, kind, url, secret, created_at FROM outbox_sinks ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get(1).map_err(db)?;
                let kind = if kind == "nats" {
                    SinkKind::Nats
                } else {
                    SinkKind::Webhook {
                        url: r.try_get(2).map_err(db)?,
                        secret: r.try_get(3).map_err(db)?,
                    }
                };
                Ok(Sink {
                    id: r.try_get(0).map_err(db)?,
                    kind,
                    created_at: Millis(r.try_get(4).map_err(db)?),
                })
            })
            .collect()
    }

    async fn remove_sink(&self, id: &str) -> Result<bool, StoreError> {
        // The deliveries go with it (ON DELETE CASCADE).
        let done = sqlx::query("DELETE FROM outbox_sinks WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claim(&self, q: &ClaimDeliveries<'_>) -> Result<Vec<Delivery>, StoreError> {
        let rows = sqlx::query(CLAIM)
            .bind(q.now.0)
            .bind(i64::try_from(q.limit).unwrap_or(i64::MAX))
            .bind(q.nats)
            .bind(NATS_SINK)
            .bind(q.owner)
            .bind(q.lease_until.0)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|r| {
                Ok(Delivery {
                    sink: r.try_get(0).map_err(db)?,
                    attempts: attempts(r, 1)?,
                    event: event(r, 2)?,
                })
            })
            .collect()
    }

    async fn delivered(&self, sink: &str, row: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM outbox_deliveries WHERE sink = $1 AND outbox_id = $2")
            .bind(sink)
            .bind(row)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn failed(&self, sink: &str, row: i64, f: &Failure<'_>) -> Result<(), StoreError> {
        sqlx::query(FAILED)
            .bind(sink)
            .bind(row)
            .bind(f.owner)
            .bind(f.retry_at.0)
            .bind(f.error)
            .bind(f.dead)
            .bind(f.now.0)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn dead_letters(&self, sink: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
        let rows = sqlx::query(DEAD)
            .bind(sink)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|r| {
                Ok(DeadLetter {
                    attempts: attempts(r, 0)?,
                    last_error: r
                        .try_get::<Option<String>, _>(1)
                        .map_err(db)?
                        .unwrap_or_default(),
                    dead_at: Millis(r.try_get(2).map_err(db)?),
                    event: event(r, 3)?,
                })
            })
            .collect()
    }

    async fn release_claims(&self, owner: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(RELEASE)
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(done.rows_affected())
    }

    async fn replay_dead(&self, sink: &str, now: Millis) -> Result<u64, StoreError> {
        let done = sqlx::query(REPLAY)
            .bind(sink)
            .bind(now.0)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(done.rows_affected())
    }
}

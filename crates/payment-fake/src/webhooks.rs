//! The fake's webhook outbox. Every change of a payment writes its webhook in the same
//! SQLite transaction (as many copies as the duplicate rate draws), so a change is never
//! without its webhook, even across a crash. Whoever delivers them (a test, a rehearsal
//! script, or the fake itself with `webhook_url`, see `delivery`) reads the outbox,
//! POSTs each payload with a fresh signature, and marks it delivered; delivering in any
//! order, or twice, is part of what is being tested.

use boxoffice_engine::ports::{WebhookError, WebhookEvent};
use rusqlite::{Connection, params};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use crate::records::{Record, now_ms};
use crate::transitions::state_name;

/// One webhook waiting in the outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeWebhook {
    pub seq: i64,
    pub event_id: String,
    pub payload: String,
}

/// Writes `copies` of one event about `record` (same event id, as a provider retrying).
pub fn enqueue(
    conn: &Connection,
    record: &Record,
    kind: &str,
    copies: u32,
) -> rusqlite::Result<()> {
    let event_id = format!("evt_{}", Uuid::new_v4().simple());
    let payload = json!({
        "id": event_id,
        "object": "event",
        "type": kind,
        "created": now_ms() / 1000,
        "data": {"object": {
            "id": record.reference,
            "object": "payment_intent",
            "amount": record.amount.0,
            "currency": record.currency,
            "status": state_name(record.state),
            "metadata": {"order_id": record.order.to_string()},
        }},
    })
    .to_string();
    for _ in 0..copies {
        conn.execute(
            "INSERT INTO webhooks (event_id, payload) VALUES (?1, ?2)",
            params![event_id, payload],
        )?;
    }
    Ok(())
}

pub fn undelivered(conn: &Connection, limit: usize) -> rusqlite::Result<Vec<FakeWebhook>> {
    undelivered_after(conn, 0, limit)
}

/// Undelivered webhooks with `seq` above `after`, oldest first: the next page.
pub fn undelivered_after(
    conn: &Connection,
    after: i64,
    limit: usize,
) -> rusqlite::Result<Vec<FakeWebhook>> {
    let mut stmt = conn.prepare(
        "SELECT seq, event_id, payload FROM webhooks WHERE delivered = 0 AND seq > ?1 \
         ORDER BY seq LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![after, limit as i64], |r| {
        Ok(FakeWebhook {
            seq: r.get(0)?,
            event_id: r.get(1)?,
            payload: r.get(2)?,
        })
    })?;
    rows.collect()
}

pub fn mark_delivered(conn: &Connection, seq: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE webhooks SET delivered = 1 WHERE seq = ?1",
        params![seq],
    )?;
    Ok(())
}

#[derive(Deserialize)]
struct Envelope {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    object: Object,
}

#[derive(Deserialize)]
struct Object {
    id: String,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
struct Metadata {
    order_id: Option<String>,
}

/// Reads a verified payload. An order id that does not parse is treated as "not ours".
pub fn parse(payload: &[u8]) -> Result<WebhookEvent, WebhookError> {
    let e: Envelope =
        serde_json::from_slice(payload).map_err(|e| WebhookError::Malformed(e.to_string()))?;
    Ok(WebhookEvent {
        id: e.id,
        kind: e.kind,
        order: e.data.object.metadata.order_id.and_then(|o| o.parse().ok()),
        reference: e.data.object.id,
    })
}

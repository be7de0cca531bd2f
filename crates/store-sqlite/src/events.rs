//! The catalog: events and their seats, sale status, buyers, and the sold-seat read
//! a hot-store rebuild starts from.

use boxoffice_domain::{BuyerId, Event, EventId, EventSpec, Millis, SaleStatus};
use boxoffice_engine::ports::{Incarnation, JoinRecord, LinePlace, StoreError};
use rusqlite::{Connection, OptionalExtension, params};

use crate::conn::{corrupt, db};
use crate::writer::Step;

fn parse_status(s: &str) -> Result<SaleStatus, StoreError> {
    SaleStatus::parse(s).ok_or_else(|| corrupt("sale status", s))
}

/// Writer job. The ledger numbers events, so the row is inserted first to learn its
/// id, then the spec is built with it; an invalid spec undoes the insert.
pub(crate) fn create(
    conn: &Connection,
    spec: &EventSpec,
    now: Millis,
) -> Result<Step<Result<Event, StoreError>>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO events (name, currency, status, body, created_at) VALUES (?1, ?2, ?3, '{}', ?4)",
    )
    .and_then(|mut s| s.execute(params![spec.name, spec.currency, SaleStatus::Scheduled.as_str(), now.0]))
    .map_err(db)?;
    let id = EventId(conn.last_insert_rowid());
    let event = match spec.build(id, now) {
        Ok(event) => event,
        Err(e) => {
            return Ok(Step::Undo(Err(StoreError::new(format_args!(
                "invalid event spec: {e}"
            )))));
        }
    };
    let body = serde_json::to_string(&event).map_err(StoreError::new)?;
    conn.execute(
        "UPDATE events SET name = ?2, body = ?3 WHERE id = ?1",
        params![id.0, event.name, body],
    )
    .map_err(db)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO event_seats (event_id, seat_id, seat_index) VALUES (?1, ?2, ?3)",
        )
        .map_err(db)?;
    for (index, seat) in event.seats.iter().enumerate() {
        insert
            .execute(params![id.0, seat.label, index as i64])
            .map_err(db)?;
    }
    Ok(Step::Keep(Ok(event)))
}

pub(crate) fn set_status(
    conn: &Connection,
    id: EventId,
    status: SaleStatus,
) -> Result<Step<()>, StoreError> {
    let changed = conn
        .execute(
            "UPDATE events SET status = ?2 WHERE id = ?1",
            params![id.0, status.as_str()],
        )
        .map_err(db)?;
    if changed == 0 {
        return Err(StoreError::new(format_args!("no event {id}")));
    }
    Ok(Step::Keep(()))
}

/// Idempotent: creating a buyer twice is not an error (a retried sign-up).
/// Writer job: the event's seed, `fresh` if none was stored before.
pub(crate) fn fairness_seed(
    conn: &Connection,
    event: EventId,
    fresh: &str,
) -> Result<Step<String>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO fairness_seeds (event_id, seed) VALUES (?1, ?2) ON CONFLICT (event_id) DO NOTHING",
    )
    .and_then(|mut s| s.execute(params![event.0, fresh]))
    .map_err(db)?;
    let seed = conn
        .prepare_cached("SELECT seed FROM fairness_seeds WHERE event_id = ?1")
        .and_then(|mut s| s.query_row(params![event.0], |r| r.get(0)))
        .map_err(db)?;
    Ok(Step::Keep(seed))
}

/// Writer job: a buyer joined the pre-opening pool (the first record stands).
pub(crate) fn record_pool_join(
    conn: &Connection,
    event: EventId,
    buyer: BuyerId,
    now: Millis,
) -> Result<Step<()>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO pool_joins (event_id, buyer_id, joined_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (event_id, buyer_id) DO NOTHING",
    )
    .and_then(|mut s| s.execute(params![event.0, buyer.to_string(), now.0]))
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The pre-opening pool in arrival order.
pub(crate) fn pool_joins(conn: &Connection, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT buyer_id FROM pool_joins WHERE event_id = ?1 ORDER BY rowid")
        .map_err(db)?;
    let ids: Vec<String> = stmt
        .query_map(params![event.0], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(db)?;
    ids.iter()
        .map(|s| s.parse().map_err(|e| corrupt("pool_joins.buyer_id", e)))
        .collect()
}

/// Writer job: journals a batch of joins (the first record of each buyer stands, and
/// the first buyer of each position); answers whether each one stands.
pub(crate) fn record_joins(
    conn: &Connection,
    joins: &[JoinRecord],
) -> Result<Step<Vec<bool>>, StoreError> {
    let mut answers = Vec::with_capacity(joins.len());
    for j in joins {
        let buyer = j.buyer.to_string();
        let stood = match j.position {
            None => conn
                .prepare_cached(
                    "INSERT INTO pool_joins (event_id, buyer_id, joined_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (event_id, buyer_id) DO NOTHING",
                )
                .and_then(|mut s| s.execute(params![j.event.0, buyer, j.at.0]))
                .map(|_| true),
            Some(position) => place(conn, j, &buyer, position as i64),
        };
        answers.push(stood.map_err(db)?);
    }
    Ok(Step::Keep(answers))
}

/// One place journaled (neither a placed buyer nor a taken position is changed):
/// whether the ledger now holds this buyer at this position.
fn place(conn: &Connection, j: &JoinRecord, buyer: &str, position: i64) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "INSERT INTO line_places (event_id, buyer_id, position, pool, joined_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )?
    .execute(params![j.event.0, buyer, position, j.pool, j.at.0])?;
    let kept: Option<i64> = conn
        .prepare_cached("SELECT position FROM line_places WHERE event_id = ?1 AND buyer_id = ?2")?
        .query_row(params![j.event.0, buyer], |r| r.get(0))
        .optional()?;
    Ok(kept == Some(position))
}

/// The event's journaled places in line, by position.
pub(crate) fn line_places(conn: &Connection, event: EventId) -> Result<Vec<LinePlace>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT buyer_id, position, pool FROM line_places WHERE event_id = ?1
             ORDER BY position",
        )
        .map_err(db)?;
    let rows: Vec<(String, i64, bool)> = stmt
        .query_map(params![event.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .and_then(|rows| rows.collect())
        .map_err(db)?;
    rows.into_iter()
        .map(|(buyer, position, pool)| {
            Ok(LinePlace {
                buyer: buyer
                    .parse()
                    .map_err(|e| corrupt("line_places.buyer_id", e))?,
                position: position as u64,
                pool,
            })
        })
        .collect()
}

/// Writer job: journals an admission batch (the first record of a batch end stands).
pub(crate) fn record_admission(
    conn: &Connection,
    event: EventId,
    serving_up_to: u64,
    at: Millis,
) -> Result<Step<()>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO line_admissions (event_id, serving_up_to, admitted_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (event_id, serving_up_to) DO NOTHING",
    )
    .and_then(|mut s| s.execute(params![event.0, serving_up_to as i64, at.0]))
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The event's admission batches, ascending.
pub(crate) fn admissions(
    conn: &Connection,
    event: EventId,
) -> Result<Vec<(u64, Millis)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT serving_up_to, admitted_at FROM line_admissions WHERE event_id = ?1
             ORDER BY serving_up_to",
        )
        .map_err(db)?;
    let rows: Vec<(i64, i64)> = stmt
        .query_map(params![event.0], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|(to, at)| (to as u64, Millis(at)))
        .collect())
}

/// Writer job: keeps an operator's waiting-room setting (the last write wins).
pub(crate) fn keep_line_setting(
    conn: &Connection,
    event: EventId,
    name: &str,
    value: &str,
) -> Result<Step<()>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO line_settings (event_id, name, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (event_id, name) DO UPDATE SET value = excluded.value",
    )
    .and_then(|mut s| s.execute(params![event.0, name, value]))
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The event's kept waiting-room settings, by name.
pub(crate) fn line_settings(
    conn: &Connection,
    event: EventId,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT name, value FROM line_settings WHERE event_id = ?1 ORDER BY name")
        .map_err(db)?;
    stmt.query_map(params![event.0], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(db)
}

/// Writer job: claims a webhook id (see `Ledger::claim_webhook`).
/// One process opens the file at a time, so an unfinished claim of another incarnation
/// is an earlier life's, dead: it is taken over at once.
pub(crate) fn claim_webhook(
    conn: &Connection,
    id: &str,
    by: Incarnation,
    now: Millis,
    stale_before: Millis,
) -> Result<Step<bool>, StoreError> {
    let claimed = conn
        .prepare_cached(
            "INSERT INTO processed_webhooks (id, claimed_at, claimed_by) VALUES (?1, ?2, ?4)
             ON CONFLICT (id) DO UPDATE
               SET claimed_at = excluded.claimed_at, claimed_by = excluded.claimed_by
               WHERE NOT processed_webhooks.handled
                 AND (processed_webhooks.claimed_at < ?3 OR processed_webhooks.claimed_by <> ?4)",
        )
        .and_then(|mut s| s.execute(params![id, now.0, stale_before.0, by.to_hex()]))
        .map_err(db)?;
    Ok(Step::Keep(claimed == 1))
}

/// Writer job: ends a webhook claim (see `Ledger::finish_webhook`).
pub(crate) fn finish_webhook(
    conn: &Connection,
    id: &str,
    handled: bool,
) -> Result<Step<()>, StoreError> {
    let sql = match handled {
        true => "UPDATE processed_webhooks SET handled = 1 WHERE id = ?1",
        false => "DELETE FROM processed_webhooks WHERE id = ?1 AND NOT handled",
    };
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute(params![id]))
        .map_err(db)?;
    Ok(Step::Keep(()))
}

/// Writer job: forgets webhook ids claimed before `before`, `limit` at most (see
/// `Ledger::prune_webhooks`).
pub(crate) fn prune_webhooks(
    conn: &Connection,
    before: Millis,
    limit: u32,
) -> Result<Step<u64>, StoreError> {
    let gone = conn
        .prepare_cached(
            "DELETE FROM processed_webhooks WHERE id IN
               (SELECT id FROM processed_webhooks WHERE claimed_at < ?1 LIMIT ?2)",
        )
        .and_then(|mut s| s.execute(params![before.0, limit]))
        .map_err(db)?;
    Ok(Step::Keep(gone as u64))
}

pub(crate) fn create_buyer(
    conn: &Connection,
    buyer: BuyerId,
    now: Millis,
) -> Result<Step<()>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO buyers (id, created_at) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
    )
    .and_then(|mut s| s.execute(params![buyer.to_string(), now.0]))
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The stored event with its current sale status (the column is the truth; the JSON
/// body keeps the status it was built with).
pub(crate) fn read(conn: &Connection, id: EventId) -> Result<Option<Event>, StoreError> {
    let row: Option<(String, String)> = conn
        .prepare_cached("SELECT body, status FROM events WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row([id.0], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(db)?;
    let Some((body, status)) = row else {
        return Ok(None);
    };
    let mut event: Event = serde_json::from_str(&body).map_err(|e| corrupt("event", e))?;
    event.status = parse_status(&status)?;
    Ok(Some(event))
}

pub(crate) fn with_status(
    conn: &Connection,
    status: SaleStatus,
) -> Result<Vec<EventId>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT id FROM events WHERE status = ?1 ORDER BY id")
        .map_err(db)?;
    let ids = stmt
        .query_map([status.as_str()], |r| r.get(0).map(EventId))
        .map_err(db)?;
    ids.collect::<Result<_, _>>().map_err(db)
}

/// Sold seats in seat order, so a rebuild walks the event's seat list once.
pub(crate) fn sold_seats(
    conn: &Connection,
    id: EventId,
) -> Result<Vec<(String, BuyerId)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT s.seat_id, s.buyer_id FROM sold_seats s
             LEFT JOIN event_seats e ON e.event_id = s.event_id AND e.seat_id = s.seat_id
             WHERE s.event_id = ?1 ORDER BY e.seat_index, s.seat_id",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([id.0], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(db)?;
    rows.map(|r| {
        let (seat, buyer) = r.map_err(db)?;
        Ok((seat, buyer.parse().map_err(|e| corrupt("buyer id", e))?))
    })
    .collect()
}

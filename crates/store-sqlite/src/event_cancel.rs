//! An event's cancellation: the sale closed and the cancellation job recorded in one
//! transaction, the job's progress saved only over the progress it was computed from,
//! and the event's orders read in id order from the job's cursor.

use boxoffice_domain::{EventId, Millis, OrderState, SaleStatus};
use boxoffice_engine::ports::{
    CancellationCounts, EventCancellation, EventOrders, Order, StoreError,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::conn::{corrupt, db};
use crate::orders::{self, ORDER_COLUMNS};
use crate::writer::Step;

const COLUMNS: &str =
    "event_id, started_at, pass, cursor, seen, returned, unsold, pending, updated_at, finished_at";

/// Writer job: closes the sale and records the job, or returns the job already there.
pub(crate) fn start(
    conn: &Connection,
    event: EventId,
    now: Millis,
) -> Result<Step<EventCancellation>, StoreError> {
    if let Some(job) = read(conn, event)? {
        return Ok(Step::Undo(job));
    }
    let changed = conn
        .prepare_cached("UPDATE events SET status = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![event.0, SaleStatus::Closed.as_str()]))
        .map_err(db)?;
    if changed == 0 {
        return Err(StoreError::new(format_args!("no event {event}")));
    }
    let job = EventCancellation::new(event, now);
    conn.prepare_cached(
        "INSERT INTO event_cancellations (event_id, started_at, pass, updated_at) VALUES (?1, ?2, ?3, ?2)",
    )
    .and_then(|mut s| s.execute(params![event.0, now.0, job.pass]))
    .map_err(db)?;
    Ok(Step::Keep(job))
}

pub(crate) fn read(
    conn: &Connection,
    event: EventId,
) -> Result<Option<EventCancellation>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM event_cancellations WHERE event_id = ?1");
    let raw = conn
        .prepare_cached(&sql)
        .and_then(|mut s| s.query_row([event.0], parse).optional())
        .map_err(db)?;
    raw.transpose()
}

pub(crate) fn running(conn: &Connection) -> Result<Vec<EventCancellation>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM event_cancellations WHERE finished_at IS NULL ORDER BY event_id"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt.query_map([], parse).map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(|j| j)).collect()
}

/// Writer job: stores `next` if the job is still at `read`'s pass and cursor.
pub(crate) fn save(
    conn: &Connection,
    read: &EventCancellation,
    next: &EventCancellation,
) -> Result<Step<bool>, StoreError> {
    let c = &next.counts;
    let changed = conn
        .prepare_cached(
            "UPDATE event_cancellations SET pass = ?4, cursor = ?5, seen = ?6, returned = ?7,
                unsold = ?8, pending = ?9, updated_at = ?10, finished_at = ?11
             WHERE event_id = ?1 AND pass = ?2 AND cursor IS ?3 AND finished_at IS NULL",
        )
        .and_then(|mut s| {
            s.execute(params![
                read.event.0,
                read.pass,
                read.cursor.map(|o| o.to_string()),
                next.pass,
                next.cursor.map(|o| o.to_string()),
                count(c.seen),
                count(c.returned),
                count(c.unsold),
                count(c.pending),
                next.updated_at.0,
                next.finished_at.map(|t| t.0),
            ])
        })
        .map_err(db)?;
    Ok(if changed == 1 {
        Step::Keep(true)
    } else {
        Step::Undo(false)
    })
}

pub(crate) fn orders_of_event(
    conn: &Connection,
    q: &EventOrders,
) -> Result<Vec<Order>, StoreError> {
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE event_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
    );
    let after = q.after.map(|o| o.to_string()).unwrap_or_default();
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
    orders::query(conn, &sql, params![q.event.0, after, limit])
}

/// How many of the event's orders are in each state (by the `orders_by_event` index).
pub(crate) fn order_states(
    conn: &Connection,
    event: EventId,
) -> Result<Vec<(OrderState, u64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT state, COUNT(*) FROM orders WHERE event_id = ?1 GROUP BY state")
        .map_err(db)?;
    let rows = stmt
        .query_map(params![event.0], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(db)?;
    let mut out = Vec::new();
    for row in rows {
        let (state, n) = row.map_err(db)?;
        let state = OrderState::parse(&state).ok_or_else(|| corrupt("order state", &state))?;
        out.push((state, u64::try_from(n).unwrap_or(0)));
    }
    Ok(out)
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn parse(row: &Row<'_>) -> rusqlite::Result<Result<EventCancellation, StoreError>> {
    let cursor: Option<String> = row.get(3)?;
    let number = |i: usize| row.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
    let job = EventCancellation {
        event: EventId(row.get(0)?),
        started_at: Millis(row.get(1)?),
        pass: row.get(2)?,
        cursor: None,
        counts: CancellationCounts {
            seen: number(4)?,
            returned: number(5)?,
            unsold: number(6)?,
            pending: number(7)?,
        },
        updated_at: Millis(row.get(8)?),
        finished_at: row.get::<_, Option<i64>>(9)?.map(Millis),
    };
    Ok(match cursor.map(|c| c.parse()) {
        None => Ok(job),
        Some(Ok(id)) => Ok(EventCancellation {
            cursor: Some(id),
            ..job
        }),
        Some(Err(e)) => Err(corrupt("cancellation cursor", e)),
    })
}

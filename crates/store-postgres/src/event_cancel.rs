//! An event's cancellation: the sale closed and the cancellation job recorded in one
//! statement, the job's progress saved only over the progress it was computed from.

use boxoffice_domain::{EventId, Millis, SaleStatus};
use boxoffice_engine::ports::{CancellationCounts, EventCancellation, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgExecutor, Row};

use crate::conn::{corrupt, db};
use crate::writer::Step;

macro_rules! columns {
    () => {
        "event_id, started_at, pass, cursor, seen, returned, unsold, pending, updated_at, finished_at"
    };
}

const READ: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM event_cancellations WHERE event_id = $1"
);
const RUNNING: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM event_cancellations WHERE finished_at IS NULL ORDER BY event_id"
);

/// Closes the sale and records the job; a job already there (another node, a retry)
/// stays as it is.
const START: &str = "
    WITH closed AS (
        UPDATE events SET status = $3::text WHERE id = $1 RETURNING id
    )
    INSERT INTO event_cancellations (event_id, started_at, pass, updated_at)
    SELECT id, $2::bigint, 1, $2::bigint FROM closed
    ON CONFLICT (event_id) DO NOTHING";

/// Writer job.
pub(crate) async fn start(
    conn: &mut PgConnection,
    event: EventId,
    now: Millis,
) -> Result<Step<EventCancellation>, StoreError> {
    if let Some(job) = read(&mut *conn, event).await? {
        return Ok(Step::Undo(job));
    }
    sqlx::query(START)
        .bind(event.0)
        .bind(now.0)
        .bind(SaleStatus::Closed.as_str())
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    match read(&mut *conn, event).await? {
        Some(job) => Ok(Step::Keep(job)),
        None => Err(StoreError::new(format_args!("no event {event}"))),
    }
}

pub(crate) async fn read<'e>(
    conn: impl PgExecutor<'e>,
    event: EventId,
) -> Result<Option<EventCancellation>, StoreError> {
    let row = sqlx::query(READ)
        .bind(event.0)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    row.as_ref().map(parse).transpose()
}

pub(crate) async fn running<'e>(
    conn: impl PgExecutor<'e>,
) -> Result<Vec<EventCancellation>, StoreError> {
    let rows = sqlx::query(RUNNING).fetch_all(conn).await.map_err(db)?;
    rows.iter().map(parse).collect()
}

const SAVE: &str = "
    UPDATE event_cancellations SET pass = $4, cursor = $5, seen = $6, returned = $7,
        unsold = $8, pending = $9, updated_at = $10, finished_at = $11
    WHERE event_id = $1 AND pass = $2 AND cursor IS NOT DISTINCT FROM $3::text
        AND finished_at IS NULL";

/// Writer job: stores `next` if the job is still at `read`'s pass and cursor.
pub(crate) async fn save(
    conn: &mut PgConnection,
    read: &EventCancellation,
    next: &EventCancellation,
) -> Result<Step<bool>, StoreError> {
    let c = &next.counts;
    let done = sqlx::query(SAVE)
        .bind(read.event.0)
        .bind(pass(read.pass))
        .bind(read.cursor.map(|o| o.to_string()))
        .bind(pass(next.pass))
        .bind(next.cursor.map(|o| o.to_string()))
        .bind(count(c.seen))
        .bind(count(c.returned))
        .bind(count(c.unsold))
        .bind(count(c.pending))
        .bind(next.updated_at.0)
        .bind(next.finished_at.map(|t| t.0))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    Ok(if done.rows_affected() == 1 {
        Step::Keep(true)
    } else {
        Step::Undo(false)
    })
}

fn pass(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn parse(row: &PgRow) -> Result<EventCancellation, StoreError> {
    let int = |i: usize| row.try_get::<i64, _>(i).map_err(db);
    let number = |i: usize| int(i).map(|n| u64::try_from(n).unwrap_or(0));
    let cursor = row
        .try_get::<Option<String>, _>(3)
        .map_err(db)?
        .map(|c| c.parse().map_err(|e| corrupt("cancellation cursor", e)))
        .transpose()?;
    Ok(EventCancellation {
        event: EventId(int(0)?),
        started_at: Millis(int(1)?),
        pass: u32::try_from(row.try_get::<i32, _>(2).map_err(db)?).unwrap_or(0),
        cursor,
        counts: CancellationCounts {
            seen: number(4)?,
            returned: number(5)?,
            unsold: number(6)?,
            pending: number(7)?,
        },
        updated_at: Millis(int(8)?),
        finished_at: row.try_get::<Option<i64>, _>(9).map_err(db)?.map(Millis),
    })
}

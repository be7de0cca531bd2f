//! The catalog: events and their seats, sale status, buyers, and the sold-seat read
//! a hot-store rebuild starts from.

use boxoffice_domain::{BuyerId, Event, EventId, EventSpec, Millis, SaleStatus};
use boxoffice_engine::ports::{Incarnation, JoinRecord, LinePlace, StoreError};
use sqlx::{PgConnection, PgExecutor, Row};

use crate::conn::{corrupt, db};
use crate::writer::Step;

fn parse_status(s: &str) -> Result<SaleStatus, StoreError> {
    SaleStatus::parse(s).ok_or_else(|| corrupt("sale status", s))
}

/// Writer job. The ledger numbers events, so the row is inserted first to learn its
/// id, then the spec is built with it; an invalid spec undoes the insert.
pub(crate) async fn create(
    conn: &mut PgConnection,
    spec: &EventSpec,
    now: Millis,
) -> Result<Step<Result<Event, StoreError>>, StoreError> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO events (name, currency, status, body, created_at)
         VALUES ($1, $2, $3, '{}', $4) RETURNING id",
    )
    .bind(&spec.name)
    .bind(&spec.currency)
    .bind(SaleStatus::Scheduled.as_str())
    .bind(now.0)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    let event = match spec.build(EventId(id), now) {
        Ok(event) => event,
        Err(e) => {
            return Ok(Step::Undo(Err(StoreError::new(format_args!(
                "invalid event spec: {e}"
            )))));
        }
    };
    let body = serde_json::to_string(&event).map_err(StoreError::new)?;
    // One statement for every seat: a stadium is 50,000 rows, not 50,000 round trips.
    let labels: Vec<&str> = event.seats.iter().map(|s| s.label.as_str()).collect();
    sqlx::query(
        "WITH body AS (UPDATE events SET name = $2, body = $3::jsonb WHERE id = $1)
         INSERT INTO event_seats (event_id, seat_id, seat_index)
         SELECT $1, s.label, s.ord - 1 FROM UNNEST($4::text[]) WITH ORDINALITY AS s (label, ord)",
    )
    .bind(id)
    .bind(&event.name)
    .bind(body)
    .bind(&labels)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(Ok(event)))
}

pub(crate) async fn set_status(
    conn: &mut PgConnection,
    id: EventId,
    status: SaleStatus,
) -> Result<Step<()>, StoreError> {
    let changed = sqlx::query("UPDATE events SET status = $2 WHERE id = $1")
        .bind(id.0)
        .bind(status.as_str())
        .execute(&mut *conn)
        .await
        .map_err(db)?
        .rows_affected();
    if changed == 0 {
        return Err(StoreError::new(format_args!("no event {id}")));
    }
    Ok(Step::Keep(()))
}

/// Idempotent: creating a buyer twice is not an error (a retried sign-up).
pub(crate) async fn create_buyer(
    conn: &mut PgConnection,
    buyer: BuyerId,
    now: Millis,
) -> Result<Step<()>, StoreError> {
    sqlx::query("INSERT INTO buyers (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING")
        .bind(buyer.to_string())
        .bind(now.0)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    Ok(Step::Keep(()))
}

/// Writer job: the event's seed, `fresh` if none was stored before.
pub(crate) async fn fairness_seed(
    conn: &mut PgConnection,
    event: EventId,
    fresh: &str,
) -> Result<Step<String>, StoreError> {
    let stored: Option<String> = sqlx::query_scalar(
        "INSERT INTO fairness_seeds (event_id, seed) VALUES ($1, $2)
         ON CONFLICT (event_id) DO NOTHING RETURNING seed",
    )
    .bind(event.0)
    .bind(fresh)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    if let Some(seed) = stored {
        return Ok(Step::Keep(seed));
    }
    // Another writer's seed: read by a statement of its own, whose snapshot sees it. The
    // insert waited for that writer to commit, but a read in the same statement (a
    // `WITH` beside it) would have its snapshot from before, and find nothing.
    let seed: String = sqlx::query_scalar("SELECT seed FROM fairness_seeds WHERE event_id = $1")
        .bind(event.0)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    Ok(Step::Keep(seed))
}

/// Writer job: a buyer joined the pre-opening pool (the first record stands).
pub(crate) async fn record_pool_join(
    conn: &mut PgConnection,
    event: EventId,
    buyer: BuyerId,
    now: Millis,
) -> Result<Step<()>, StoreError> {
    sqlx::query(
        "INSERT INTO pool_joins (event_id, buyer_id, joined_at) VALUES ($1, $2, $3)
         ON CONFLICT (event_id, buyer_id) DO NOTHING",
    )
    .bind(event.0)
    .bind(buyer.to_string())
    .bind(now.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The pre-opening pool in arrival order.
pub(crate) async fn pool_joins(
    conn: impl PgExecutor<'_>,
    event: EventId,
) -> Result<Vec<BuyerId>, StoreError> {
    let ids: Vec<String> =
        sqlx::query_scalar("SELECT buyer_id FROM pool_joins WHERE event_id = $1 ORDER BY seq")
            .bind(event.0)
            .fetch_all(conn)
            .await
            .map_err(db)?;
    ids.iter()
        .map(|s| s.parse().map_err(|e| corrupt("pool_joins.buyer_id", e)))
        .collect()
}

/// Writer job: journals a batch of joins in one statement per kind (the first record
/// of each stands). Ordered by position so the pool keeps the batch's arrival order.
pub(crate) async fn record_joins(
    conn: &mut PgConnection,
    joins: &[JoinRecord],
) -> Result<Step<Vec<bool>>, StoreError> {
    let (pool, line): (Vec<&JoinRecord>, Vec<&JoinRecord>) =
        joins.iter().partition(|j| j.position.is_none());
    if !pool.is_empty() {
        sqlx::query(
            "INSERT INTO pool_joins (event_id, buyer_id, joined_at)
             SELECT event_id, buyer_id, joined_at
             FROM unnest($1::bigint[], $2::text[], $3::bigint[]) WITH ORDINALITY
               AS j(event_id, buyer_id, joined_at, n)
             ORDER BY n
             ON CONFLICT (event_id, buyer_id) DO NOTHING",
        )
        .bind(pool.iter().map(|j| j.event.0).collect::<Vec<_>>())
        .bind(pool.iter().map(|j| j.buyer.to_string()).collect::<Vec<_>>())
        .bind(pool.iter().map(|j| j.at.0).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    if line.is_empty() {
        return Ok(Step::Keep(vec![true; joins.len()]));
    }
    let events: Vec<i64> = line.iter().map(|j| j.event.0).collect();
    let buyers: Vec<String> = line.iter().map(|j| j.buyer.to_string()).collect();
    let positions: Vec<i64> = line
        .iter()
        .map(|j| j.position.unwrap_or(0) as i64)
        .collect();
    // No conflict target: a buyer already placed and a position already taken are
    // both left as they are. Rows are never changed once written, so what the second
    // statement reads is what stands.
    sqlx::query(
        "INSERT INTO line_places (event_id, buyer_id, position, pool, joined_at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bool[], $5::bigint[])
         ON CONFLICT DO NOTHING",
    )
    .bind(&events)
    .bind(&buyers)
    .bind(&positions)
    .bind(line.iter().map(|j| j.pool).collect::<Vec<_>>())
    .bind(line.iter().map(|j| j.at.0).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    let stood: Vec<bool> = sqlx::query_scalar(
        "SELECT coalesce(l.position = j.position, false)
         FROM unnest($1::bigint[], $2::text[], $3::bigint[]) WITH ORDINALITY
           AS j(event_id, buyer_id, position, n)
         LEFT JOIN line_places l ON l.event_id = j.event_id AND l.buyer_id = j.buyer_id
         ORDER BY j.n",
    )
    .bind(&events)
    .bind(&buyers)
    .bind(&positions)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let mut stood = stood.into_iter();
    let answers = joins
        .iter()
        .map(|j| j.position.is_none() || stood.next().unwrap_or(false))
        .collect();
    Ok(Step::Keep(answers))
}

/// The event's journaled places in line, by position.
pub(crate) async fn line_places(
    conn: impl PgExecutor<'_>,
    event: EventId,
) -> Result<Vec<LinePlace>, StoreError> {
    let rows: Vec<(String, i64, bool)> = sqlx::query_as(
        "SELECT buyer_id, position, pool FROM line_places WHERE event_id = $1 ORDER BY position",
    )
    .bind(event.0)
    .fetch_all(conn)
    .await
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
pub(crate) async fn record_admission(
    conn: &mut PgConnection,
    event: EventId,
    serving_up_to: u64,
    at: Millis,
) -> Result<Step<()>, StoreError> {
    sqlx::query(
        "INSERT INTO line_admissions (event_id, serving_up_to, admitted_at) VALUES ($1, $2, $3)
         ON CONFLICT (event_id, serving_up_to) DO NOTHING",
    )
    .bind(event.0)
    .bind(serving_up_to as i64)
    .bind(at.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The event's admission batches, ascending.
pub(crate) async fn admissions(
    conn: impl PgExecutor<'_>,
    event: EventId,
) -> Result<Vec<(u64, Millis)>, StoreError> {
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT serving_up_to, admitted_at FROM line_admissions WHERE event_id = $1
         ORDER BY serving_up_to",
    )
    .bind(event.0)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|(to, at)| (to as u64, Millis(at)))
        .collect())
}

/// Writer job: keeps an operator's waiting-room setting (the last write wins).
pub(crate) async fn keep_line_setting(
    conn: &mut PgConnection,
    event: EventId,
    name: &str,
    value: &str,
) -> Result<Step<()>, StoreError> {
    sqlx::query(
        "INSERT INTO line_settings (event_id, name, value) VALUES ($1, $2, $3)
         ON CONFLICT (event_id, name) DO UPDATE SET value = EXCLUDED.value",
    )
    .bind(event.0)
    .bind(name)
    .bind(value)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(()))
}

/// The event's kept waiting-room settings, by name.
pub(crate) async fn line_settings(
    conn: impl PgExecutor<'_>,
    event: EventId,
) -> Result<Vec<(String, String)>, StoreError> {
    sqlx::query_as("SELECT name, value FROM line_settings WHERE event_id = $1 ORDER BY name")
        .bind(event.0)
        .fetch_all(conn)
        .await
        .map_err(db)
}

/// Writer job: claims a webhook id (see `Ledger::claim_webhook`).
/// Several nodes share the database, so another incarnation's unfinished claim may be
/// alive: it is taken over only once it is older than the lease.
pub(crate) async fn claim_webhook(
    conn: &mut PgConnection,
    id: &str,
    by: Incarnation,
    now: Millis,
    stale_before: Millis,
) -> Result<Step<bool>, StoreError> {
    let claimed = sqlx::query(
        "INSERT INTO processed_webhooks (id, claimed_at, claimed_by) VALUES ($1, $2, $4)
         ON CONFLICT (id) DO UPDATE
           SET claimed_at = EXCLUDED.claimed_at, claimed_by = EXCLUDED.claimed_by
           WHERE NOT processed_webhooks.handled AND processed_webhooks.claimed_at < $3",
    )
    .bind(id)
    .bind(now.0)
    .bind(stale_before.0)
    .bind(by.to_hex())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(claimed.rows_affected() == 1))
}

/// Writer job: ends a webhook claim (see `Ledger::finish_webhook`).
pub(crate) async fn finish_webhook(
    conn: &mut PgConnection,
    id: &str,
    handled: bool,
) -> Result<Step<()>, StoreError> {
    let sql = match handled {
        true => "UPDATE processed_webhooks SET handled = TRUE WHERE id = $1",
        false => "DELETE FROM processed_webhooks WHERE id = $1 AND NOT handled",
    };
    sqlx::query(sql)
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    Ok(Step::Keep(()))
}

/// Writer job: forgets webhook ids claimed before `before`, `limit` at most (see
/// `Ledger::prune_webhooks`).
pub(crate) async fn prune_webhooks(
    conn: &mut PgConnection,
    before: Millis,
    limit: u32,
) -> Result<Step<u64>, StoreError> {
    let gone = sqlx::query(
        "DELETE FROM processed_webhooks WHERE id IN
           (SELECT id FROM processed_webhooks WHERE claimed_at < $1 LIMIT $2)",
    )
    .bind(before.0)
    .bind(i64::from(limit))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Step::Keep(gone.rows_affected()))
}

/// The stored event with its current sale status (the column is the truth; the JSON
/// body keeps the status it was built with).
pub(crate) async fn read<'e>(
    conn: impl PgExecutor<'e>,
    id: EventId,
) -> Result<Option<Event>, StoreError> {
    let row = sqlx::query("SELECT body::text, status FROM events WHERE id = $1")
        .bind(id.0)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let body: String = row.try_get(0).map_err(db)?;
    let status: String = row.try_get(1).map_err(db)?;
    let mut event: Event = serde_json::from_str(&body).map_err(|e| corrupt("event", e))?;
    event.status = parse_status(&status)?;
    Ok(Some(event))
}

pub(crate) async fn with_status<'e>(
    conn: impl PgExecutor<'e>,
    status: SaleStatus,
) -> Result<Vec<EventId>, StoreError> {
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM events WHERE status = $1 ORDER BY id")
        .bind(status.as_str())
        .fetch_all(conn)
        .await
        .map_err(db)?;
    Ok(ids.into_iter().map(EventId).collect())
}

/// Sold seats in seat order, so a rebuild walks the event's seat list once.
pub(crate) async fn sold_seats<'e>(
    conn: impl PgExecutor<'e>,
    id: EventId,
) -> Result<Vec<(String, BuyerId)>, StoreError> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT s.seat_id, s.buyer_id FROM sold_seats s
         LEFT JOIN event_seats e ON e.event_id = s.event_id AND e.seat_id = s.seat_id
         WHERE s.event_id = $1 ORDER BY e.seat_index, s.seat_id",
    )
    .bind(id.0)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    rows.into_iter()
        .map(|(seat, buyer)| Ok((seat, buyer.parse().map_err(|e| corrupt("buyer id", e))?)))
        .collect()
}

//! The four ways to sell from one stock counter in SQL that the experiment compares:
//! read-then-write, one conditional UPDATE, optimistic versioning with retries, and
//! sub-counters. Each buyer's attempt is one call; what it returns is whether it won
//! and how many conflicts or empty sub-counters it met on the way.

use rand::Rng;
use sqlx::PgPool;

use super::Attempt;

/// Sub-counters the sharded variant splits the stock into.
pub const BUCKETS: i32 = 10;

pub async fn schema(pool: &PgPool) -> sqlx::Result<()> {
    for statement in [
        "CREATE SCHEMA experiment",
        "CREATE TABLE experiment.events (event_id int PRIMARY KEY, remaining int NOT NULL, \
         version int NOT NULL DEFAULT 0)",
        "CREATE TABLE experiment.event_stock (event_id int NOT NULL, bucket int NOT NULL, \
         remaining int NOT NULL, PRIMARY KEY (event_id, bucket))",
        "CREATE TABLE experiment.holds (hold_id bigserial PRIMARY KEY, event_id int NOT NULL, \
         user_id text NOT NULL, status text NOT NULL DEFAULT 'held', \
         created_at timestamptz NOT NULL DEFAULT now())",
    ] {
        sqlx::query(statement).execute(pool).await?;
    }
    Ok(())
}

/// Puts `units` back on sale: in the counter, and split over the sub-counters.
pub async fn reset(pool: &PgPool, units: i32) -> sqlx::Result<()> {
    sqlx::query("TRUNCATE experiment.holds")
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM experiment.events")
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM experiment.event_stock")
        .execute(pool)
        .await?;
    sqlx::query("INSERT INTO experiment.events (event_id, remaining) VALUES (1, $1)")
        .bind(units)
        .execute(pool)
        .await?;
    for bucket in 0..BUCKETS {
        let share = units / BUCKETS + i32::from(bucket < units % BUCKETS);
        sqlx::query(
            "INSERT INTO experiment.event_stock (event_id, bucket, remaining) VALUES (1, $1, $2)",
        )
        .bind(bucket)
        .bind(share)
        .execute(pool)
        .await?;
    }
    Ok(())
}

/// (holds written, what the counter says is left) after a variant ran.
pub async fn tally(pool: &PgPool, sharded: bool) -> sqlx::Result<(i64, i64)> {
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM experiment.holds")
        .fetch_one(pool)
        .await?;
    let left: i64 = if sharded {
        sqlx::query_scalar("SELECT COALESCE(sum(remaining), 0)::bigint FROM experiment.event_stock")
            .fetch_one(pool)
            .await?
    } else {
        sqlx::query_scalar("SELECT remaining::bigint FROM experiment.events WHERE event_id = 1")
            .fetch_one(pool)
            .await?
    };
    Ok((holds, left))
}

const INSERT_HOLD: &str = "INSERT INTO experiment.holds (event_id, user_id) VALUES (1, $1)";

/// Read, check, write: nothing stops two buyers from reading the same number, and each
/// writes "what I read − 1" as an absolute value (the lost update).
pub async fn naive(pool: &PgPool, user: &str) -> sqlx::Result<Attempt> {
    let mut c = pool.acquire().await?;
    let remaining: i32 =
        sqlx::query_scalar("SELECT remaining FROM experiment.events WHERE event_id = 1")
            .fetch_one(&mut *c)
            .await?;
    if remaining <= 0 {
        return Ok(Attempt::lost(0));
    }
    sqlx::query("UPDATE experiment.events SET remaining = $1 WHERE event_id = 1")
        .bind(remaining - 1)
        .execute(&mut *c)
        .await?;
    sqlx::query(INSERT_HOLD).bind(user).execute(&mut *c).await?;
    Ok(Attempt::won(0))
}

/// Check and decrement in one statement, the hold written in the same transaction.
pub async fn atomic(pool: &PgPool, user: &str) -> sqlx::Result<Attempt> {
    let mut tx = pool.begin().await?;
    let taken = sqlx::query(
        "UPDATE experiment.events SET remaining = remaining - 1 WHERE event_id = 1 AND remaining > 0",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if taken == 0 {
        return Ok(Attempt::lost(0));
    }
    sqlx::query(INSERT_HOLD)
        .bind(user)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Attempt::won(0))
}

/// Succeeds only if nobody changed the row since it was read; retries otherwise.
pub async fn optimistic(pool: &PgPool, user: &str) -> sqlx::Result<Attempt> {
    let mut c = pool.acquire().await?;
    let mut conflicts = 0;
    loop {
        let (remaining, version): (i32, i32) =
            sqlx::query_as("SELECT remaining, version FROM experiment.events WHERE event_id = 1")
                .fetch_one(&mut *c)
                .await?;
        if remaining <= 0 {
            return Ok(Attempt::lost(conflicts));
        }
        let written = sqlx::query(
            "UPDATE experiment.events SET remaining = $1, version = version + 1 \
             WHERE event_id = 1 AND version = $2",
        )
        .bind(remaining - 1)
        .bind(version)
        .execute(&mut *c)
        .await?
        .rows_affected();
        if written == 1 {
            sqlx::query(INSERT_HOLD).bind(user).execute(&mut *c).await?;
            return Ok(Attempt::won(conflicts));
        }
        conflicts += 1;
    }
}

/// A random sub-counter first, then the others in turn until one has stock: the lock
/// contention is divided by the number of sub-counters. Empty ones tried count as
/// retries.
pub async fn sharded(pool: &PgPool, user: &str) -> sqlx::Result<Attempt> {
    let start = rand::rng().random_range(0..BUCKETS);
    for tried in 0..BUCKETS {
        let bucket = (start + tried) % BUCKETS;
        let mut tx = pool.begin().await?;
        let taken = sqlx::query(
            "UPDATE experiment.event_stock SET remaining = remaining - 1 \
             WHERE event_id = 1 AND bucket = $1 AND remaining > 0",
        )
        .bind(bucket)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if taken == 1 {
            sqlx::query(INSERT_HOLD)
                .bind(user)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            return Ok(Attempt::won(tried as u64));
        }
    }
    Ok(Attempt::lost(BUCKETS as u64))
}

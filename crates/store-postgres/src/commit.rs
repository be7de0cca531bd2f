//! The commit point (P1, P2, P6): an authorized order's seats become sold, the buyer's
//! ticket count grows, a history line is written (the outbox trigger announces it), and
//! the order becomes `committed`, or none of it happens. The work is the server
//! function `ledger_commit_batch` (migrations/postgres/0002_commit_batch.sql, replaced
//! by 0008_ticket_transfers.sql without its old outbox notice): a whole
//! batch of commits in one round trip, each in its own subtransaction, the order read
//! folded into its conditional move. The database decides conflicts: the
//! `sold_seats_pkey` primary key refuses a second sale and the `buyer_within_limit`
//! CHECK refuses a buyer over the limit; this file turns those named refusals into
//! outcomes.

use boxoffice_domain::OrderEvent;
use boxoffice_engine::ports::{Commit, CommitOutcome, LedgerError, Order, StoreError};
use sqlx::PgConnection;

use crate::conn::db;
use crate::moves;
use crate::orders::parse_state;
use crate::writer::Step;

const BATCH: &str =
    "SELECT outcome, state, refused_by, detail FROM ledger_commit_batch($1, $2, $3)";

/// (outcome, state, refused_by, detail): see the function's header comment.
type Row = (String, Option<String>, Option<String>, Option<String>);

/// What became of one commit of the call.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Its answer, which stands once the caller's transaction commits. An Err is a
    /// commit that failed (and was undone) while the others stand.
    Done(Result<CommitOutcome, StoreError>),
    /// Undone after waiting too long for rows another transaction holds (see the
    /// function's header): run it again in a later transaction.
    Retry,
}

/// Runs `commits` in the caller's transaction, which the caller must still COMMIT.
/// Err means the call failed as a whole and nothing of it stands.
pub(crate) async fn commit_batch<'a>(
    conn: &mut PgConnection,
    commits: impl IntoIterator<Item = &'a Commit>,
) -> Result<Vec<Answer>, StoreError> {
    let (mut ids, mut limits, mut times) = (Vec::new(), Vec::new(), Vec::new());
    for c in commits {
        ids.push(c.order.to_string());
        limits.push(i32::try_from(c.max_per_buyer).unwrap_or(i32::MAX));
        times.push(c.now.0);
    }
    // fetch_all, not fetch_one: the rows are trusted only with the statement's end.
    let rows: Vec<Row> = sqlx::query_as(BATCH)
        .bind(&ids)
        .bind(&limits)
        .bind(&times)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    if rows.len() != ids.len() {
        return Err(StoreError::new(format_args!(
            "postgres: ledger_commit_batch answered {} of {} commits",
            rows.len(),
            ids.len()
        )));
    }
    Ok(rows
        .into_iter()
        .zip(&ids)
        .map(|(row, id)| outcome(row, id))
        .collect())
}

/// Writer job: a live checkout's authorization, then its commit through the same
/// function (which runs it in a subtransaction of its own, so a refused commit undoes
/// only itself and the order stays `authorized` for the caller to void). A refused move
/// writes nothing. A commit the function undid to wait for held rows makes the whole job
/// a lost race, run again from the start in a later batch.
pub(crate) async fn authorize_and_commit(
    conn: &mut PgConnection,
    c: &Commit,
    reference: &str,
) -> Result<Step<Result<(Order, CommitOutcome), LedgerError>>, StoreError> {
    let moved = moves::apply(
        conn,
        c.order,
        OrderEvent::Authorized,
        Some(reference),
        c.now,
    );
    let authorized = match moved.await? {
        Step::Keep(Ok(order)) => order,
        Step::Keep(Err(e)) | Step::Undo(Err(e)) => return Ok(Step::Undo(Err(e))),
        Step::Undo(Ok(_)) => {
            return Err(StoreError::new("postgres: an authorization undid itself"));
        }
    };
    match commit_batch(conn, [c]).await?.pop() {
        Some(Answer::Done(out)) => Ok(Step::Keep(Ok((authorized, out?)))),
        // SQLSTATE 55P03 (lock_not_available) is what the function waited out: the
        // writer runs a job that lost such a race again.
        Some(Answer::Retry) => Err(StoreError::new(
            "postgres: a commit waited too long for rows another transaction holds (SQLSTATE 55P03)",
        )),
        None => Err(StoreError::new(
            "postgres: ledger_commit_batch answered nothing",
        )),
    }
}

/// One row of the function as the port's answer; the named constraints are the only
/// refusals that are business outcomes, anything else is a store error.
fn outcome((outcome, state, refused_by, detail): Row, id: &str) -> Answer {
    if outcome == "retry" {
        return Answer::Retry;
    }
    Answer::Done(match (outcome.as_str(), refused_by.as_deref()) {
        ("committed", _) => Ok(CommitOutcome::Committed),
        ("not_committable", _) => {
            parse_state(state.as_deref().unwrap_or_default()).map(CommitOutcome::NotCommittable)
        }
        ("missing", _) => Err(StoreError::new(format_args!("no order {id} to commit"))),
        ("refused", Some("sold_seats_pkey")) => Ok(CommitOutcome::SeatTaken {
            seat_id: detail.unwrap_or_default(),
        }),
        ("refused", Some("buyer_within_limit")) => Ok(CommitOutcome::LimitExceeded),
        _ => Err(StoreError::new(format_args!(
            "postgres: committing order {id}: {}",
            detail.as_deref().unwrap_or(&outcome)
        ))),
    })
}

//! Attendee names in SQLite: a rename is one writer job (so one transaction, never
//! racing another write on this file) whose update is conditional on the version the
//! holder saw and, for a counted change, on the count being under the limit. A refusal
//! undoes the job's savepoint.

use boxoffice_domain::{Millis, OrderEvent, OrderState};
use boxoffice_engine::ports::{Rename, RenameRefusal, StoreError, TicketFacts, TicketRow};
use rusqlite::{Connection, params};

use crate::conn::db;
use crate::ticket_rows::ticket;
use crate::transfer_rows::listed;
use crate::writer::Step;

type Answer = Step<Result<TicketRow, RenameRefusal>>;

/// Writer job: the rename, all of it or nothing.
pub(crate) fn rename(conn: &Connection, r: &Rename) -> Result<Answer, StoreError> {
    let facts = match renamable(conn, r)? {
        Ok(f) => f,
        Err(no) => return Ok(Step::Undo(Err(no))),
    };
    let (counted, limit) = match r.counted {
        Some(limit) => (1, limit),
        None => (0, 0),
    };
    let renamed = conn
        .prepare_cached(
            "UPDATE tickets SET attendee = ?3, version = version + 1, issued_at = ?4,
                 name_changes = name_changes + ?5
             WHERE id = ?1 AND version = ?2 AND (?5 = 0 OR name_changes < ?6)
               AND ((?5 = 0 AND attendee IS NULL) OR (?5 = 1 AND attendee IS NOT NULL))",
        )
        .and_then(|mut s| {
            s.execute(params![
                r.ticket.to_string(),
                r.version,
                r.attendee.as_str(),
                r.now.0,
                counted,
                limit
            ])
        })
        .map_err(db)?;
    if renamed != 1 {
        return Ok(Step::Undo(Err(RenameRefusal::Superseded)));
    }
    history(conn, &facts.ticket, r, r.now)?;
    let row = ticket(conn, r.ticket)?
        .ok_or_else(|| StoreError::new("sqlite: renamed ticket vanished"))?
        .ticket;
    Ok(Step::Keep(Ok(row)))
}

/// The ticket, if the renamer holds it at the version renamed, unscanned, with its
/// order paid for and, for a counted change, changes left.
fn renamable(
    conn: &Connection,
    r: &Rename,
) -> Result<Result<TicketFacts, RenameRefusal>, StoreError> {
    let Some(facts) = ticket(conn, r.ticket)? else {
        return Ok(Err(RenameRefusal::NotFound));
    };
    if let Some(no) = r.refusal(&facts) {
        return Ok(Err(no));
    }
    if listed(conn, r.ticket)? {
        return Ok(Err(RenameRefusal::Listed));
    }
    Ok(Ok(facts))
}

/// The `renamed` line of the order's history, which the outbox trigger announces.
fn history(conn: &Connection, t: &TicketRow, r: &Rename, now: Millis) -> Result<(), StoreError> {
    let detail = serde_json::json!({
        "ticket_id": t.id,
        "seat_id": t.seat.as_str(),
        "version": r.version + 1,
        "attendee": r.attendee.as_str(),
    });
    let confirmed = OrderState::Confirmed.as_str();
    conn.prepare_cached(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| {
        s.execute(params![
            t.order.to_string(),
            confirmed,
            OrderEvent::RENAMED,
            now.0,
            detail.to_string()
        ])
    })
    .map(drop)
    .map_err(db)
}

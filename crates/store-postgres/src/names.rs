//! Attendee names in PostgreSQL: a rename is one transaction that locks the ticket's
//! row first (as a check-in and a transfer do), so renames, transfers and scans of one
//! ticket take turns on every node; its update is conditional on the version the holder
//! saw and, for a counted change, on the count being under the limit. A refusal rolls
//! the transaction back: nothing is written.

use boxoffice_domain::{Millis, OrderEvent};
use boxoffice_engine::ports::{Rename, RenameRefusal, StoreError, TicketRow};
use sqlx::PgConnection;

use crate::PostgresLedger;
use crate::conn::db;
use crate::handover::{history_line, kept, locked_ticket};
use crate::ticket_rows::version;
use crate::transfers::listed;

type Answer = Result<Result<TicketRow, RenameRefusal>, StoreError>;

impl PostgresLedger {
    pub(crate) async fn rename_ticket_tx(&self, r: &Rename) -> Answer {
        let r = r.clone();
        self.apart(move |c| {
            let r = r.clone();
            Box::pin(async move { rename(c, &r).await.map(kept) })
        })
        .await
    }
}

async fn rename(conn: &mut PgConnection, r: &Rename) -> Answer {
    let Some(facts) = locked_ticket(conn, r.ticket).await? else {
        return Ok(Err(RenameRefusal::NotFound));
    };
    if let Some(no) = r.refusal(&facts) {
        return Ok(Err(no));
    }
    if listed(conn, r.ticket).await? {
        return Ok(Err(RenameRefusal::Listed));
    }
    let (counted, limit) = match r.counted {
        Some(limit) => (1_i32, i64::from(limit)),
        None => (0, 0),
    };
    let renamed = sqlx::query(
        "UPDATE tickets SET attendee = $3, version = version + 1, issued_at = $4,
             name_changes = name_changes + $5
         WHERE id = $1 AND version = $2 AND ($5 = 0 OR name_changes < $6)
           AND (($5 = 0 AND attendee IS NULL) OR ($5 = 1 AND attendee IS NOT NULL))",
    )
    .bind(r.ticket.to_string())
    .bind(version(r.version))
    .bind(r.attendee.as_str())
    .bind(r.now.0)
    .bind(counted)
    .bind(limit)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    if renamed.rows_affected() != 1 {
        return Ok(Err(RenameRefusal::Superseded));
    }
    history(conn, &facts.ticket, r, r.now).await?;
    let row = locked_ticket(conn, r.ticket)
        .await?
        .ok_or_else(|| StoreError::new("postgres: renamed ticket vanished"))?
        .ticket;
    Ok(Ok(row))
}

/// The `renamed` line of the order's history, which the outbox trigger announces.
async fn history(
    conn: &mut PgConnection,
    t: &TicketRow,
    r: &Rename,
    now: Millis,
) -> Result<(), StoreError> {
    let detail = serde_json::json!({
        "ticket_id": t.id,
        "seat_id": t.seat.as_str(),
        "version": r.version + 1,
        "attendee": r.attendee.as_str(),
    });
    history_line(conn, t.order, OrderEvent::RENAMED, &detail, now).await
}

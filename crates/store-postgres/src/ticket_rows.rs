//! The after-sale's rows in PostgreSQL: how tickets, gates and keys are read back, and
//! the check-in transaction. Nothing here is on the sale's hot path, so it runs on the
//! read pool's connections in plain transactions rather than through the group-commit
//! writer.

use boxoffice_domain::ticket::{AttendeeName, KeyId, SeatLabel};
use boxoffice_domain::{EventId, Millis, OrderState, Secret};
use boxoffice_engine::ports::{
    CheckIn, FirstScan, Gate, ScanAttempt, StoreError, StoredKey, TicketFacts, TicketRow,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::conn::{corrupt, db};
use crate::orders::parse_state;

pub(crate) const KEYS: &str = "SELECT kid, seed, created_at FROM ticket_keys
    WHERE event_id = $1 AND retired_at IS NULL ORDER BY kid";

/// The query `facts` parses, without its WHERE clause.
macro_rules! facts_sql {
    () => {
        "SELECT t.id, t.event_id, t.order_id, t.seat_id, t.holder_id,
            t.version, t.attendee, t.issued_at, COALESCE(t.own_state, o.state), c.gate_id, g.name, c.at,
            t.name_changes
        FROM tickets t JOIN orders o ON o.id = t.order_id
        LEFT JOIN checkins c ON c.ticket_id = t.id LEFT JOIN gates g ON g.id = c.gate_id "
    };
}
pub(crate) use facts_sql;

/// The query `gate` parses, without its WHERE clause.
macro_rules! gates_sql {
    () => {
        "SELECT id, event_id, name, digest, revoked, created_at FROM gates "
    };
}
pub(crate) use gates_sql;

pub(crate) fn key(row: &PgRow) -> Result<StoredKey, StoreError> {
    let kid: i32 = row.try_get(0).map_err(db)?;
    let seed: Vec<u8> = row.try_get(1).map_err(db)?;
    Ok(StoredKey {
        kid: KeyId(u32::try_from(kid).map_err(|e| corrupt("key id", e))?),
        seed: Secret::new(bytes32(&seed, "key seed")?),
        created_at: Millis(row.try_get(2).map_err(db)?),
    })
}

pub(crate) fn facts(row: &PgRow) -> Result<TicketFacts, StoreError> {
    let text = |i: usize| row.try_get::<String, _>(i).map_err(db);
    let version: i32 = row.try_get(5).map_err(db)?;
    let attendee: Option<String> = row.try_get(6).map_err(db)?;
    let ticket = TicketRow {
        id: text(0)?.parse().map_err(|e| corrupt("ticket id", e))?,
        event: EventId(row.try_get(1).map_err(db)?),
        order: text(2)?.parse().map_err(|e| corrupt("order id", e))?,
        seat: SeatLabel::try_from(text(3)?).map_err(|e| corrupt("seat label", e))?,
        holder: text(4)?.parse().map_err(|e| corrupt("holder id", e))?,
        version: u32::try_from(version).map_err(|e| corrupt("ticket version", e))?,
        attendee: attendee
            .map(AttendeeName::try_from)
            .transpose()
            .map_err(|e| corrupt("attendee", e))?,
        issued_at: Millis(row.try_get(7).map_err(db)?),
    };
    let gate: Option<String> = row.try_get(9).map_err(db)?;
    let at: Option<i64> = row.try_get(11).map_err(db)?;
    let checked_in = match (gate, at) {
        (Some(gate), Some(at)) => Some(FirstScan {
            gate: gate.parse().map_err(|e| corrupt("gate id", e))?,
            gate_name: row
                .try_get::<Option<String>, _>(10)
                .map_err(db)?
                .unwrap_or_default(),
            at: Millis(at),
        }),
        _ => None,
    };
    let name_changes: i32 = row.try_get(12).map_err(db)?;
    Ok(TicketFacts {
        ticket,
        order_state: parse_state(&text(8)?)?,
        checked_in,
        name_changes: u32::try_from(name_changes).map_err(|e| corrupt("name changes", e))?,
    })
}

pub(crate) fn gate(row: &PgRow) -> Result<Gate, StoreError> {
    let id: String = row.try_get(0).map_err(db)?;
    let digest: Vec<u8> = row.try_get(3).map_err(db)?;
    Ok(Gate {
        id: id.parse().map_err(|e| corrupt("gate id", e))?,
        event: EventId(row.try_get(1).map_err(db)?),
        name: row.try_get(2).map_err(db)?,
        digest: bytes32(&digest, "gate digest")?,
        revoked: row.try_get(4).map_err(db)?,
        created_at: Millis(row.try_get(5).map_err(db)?),
    })
}

/// Writes the tickets that do not exist yet (by id), in one statement.
pub(crate) async fn insert_tickets(
    conn: &mut PgConnection,
    tickets: &[TicketRow],
) -> Result<(), StoreError> {
    let col = |f: fn(&TicketRow) -> String| tickets.iter().map(f).collect::<Vec<_>>();
    let events: Vec<i64> = tickets.iter().map(|t| t.event.0).collect();
    let versions: Vec<i32> = tickets.iter().map(|t| version(t.version)).collect();
    let attendees: Vec<Option<String>> = (tickets.iter())
        .map(|t| t.attendee.as_ref().map(|a| a.as_str().to_owned()))
        .collect();
    let issued: Vec<i64> = tickets.iter().map(|t| t.issued_at.0).collect();
    sqlx::query(
        "INSERT INTO tickets (id, event_id, order_id, seat_id, holder_id, version, attendee, issued_at)
         SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[],
                              $6::int[], $7::text[], $8::bigint[])
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(col(|t| t.id.to_string()))
    .bind(events)
    .bind(col(|t| t.order.to_string()))
    .bind(col(|t| t.seat.as_str().to_owned()))
    .bind(col(|t| t.holder.to_string()))
    .bind(versions)
    .bind(attendees)
    .bind(issued)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Inside a transaction: locks the ticket's row (so the check-ins of one ticket, from
/// any node, take turns), decides, and logs the scan.
pub(crate) async fn check_in(
    conn: &mut PgConnection,
    scan: &ScanAttempt,
) -> Result<CheckIn, StoreError> {
    let outcome = decide(conn, scan).await?;
    sqlx::query(
        "INSERT INTO scans (ticket_id, version, gate_id, at, offline, outcome)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(scan.ticket.to_string())
    .bind(version(scan.version))
    .bind(scan.gate.to_string())
    .bind(scan.at.0)
    .bind(scan.offline)
    .bind(outcome.as_str())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(outcome)
}

async fn decide(conn: &mut PgConnection, scan: &ScanAttempt) -> Result<CheckIn, StoreError> {
    // The lock first, then the read in a statement of its own: under read committed
    // that read starts after the lock was granted, so it sees the check-in of whoever
    // held it before.
    let locked = sqlx::query("SELECT 1 FROM tickets WHERE id = $1 FOR UPDATE")
        .bind(scan.ticket.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    if locked.is_none() {
        return Ok(CheckIn::Unknown);
    }
    let row = sqlx::query(concat!(facts_sql!(), "WHERE t.id = $1"))
        .bind(scan.ticket.to_string())
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let facts = facts(&row)?;
    if facts.ticket.version != scan.version {
        return Ok(CheckIn::OldVersion {
            current: facts.ticket.version,
        });
    }
    if facts.order_state != OrderState::Confirmed {
        return Ok(CheckIn::NotPaid(facts.order_state));
    }
    // Online: only a ticket nobody admitted. Offline: an earlier scan replaces a later.
    let sql = if scan.offline {
        "INSERT INTO checkins (ticket_id, version, gate_id, at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (ticket_id) DO UPDATE SET version = excluded.version,
             gate_id = excluded.gate_id, at = excluded.at WHERE excluded.at < checkins.at"
    } else {
        "INSERT INTO checkins (ticket_id, version, gate_id, at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (ticket_id) DO NOTHING"
    };
    let written = sqlx::query(sql)
        .bind(scan.ticket.to_string())
        .bind(version(scan.version))
        .bind(scan.gate.to_string())
        .bind(scan.at.0)
        .execute(&mut *conn)
        .await
        .map_err(db)?
        .rows_affected();
    Ok(match (written, facts.checked_in) {
        (1, replaced) => CheckIn::Admitted { replaced },
        (_, Some(first)) => CheckIn::AlreadyScanned(first),
        (_, None) => {
            return Err(StoreError::new(
                "postgres: check-in refused with no check-in",
            ));
        }
    })
}

pub(crate) fn version(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

pub(crate) fn bytes32(b: &[u8], what: &str) -> Result<[u8; 32], StoreError> {
    b.try_into().map_err(|_| corrupt(what, "not 32 bytes"))
}

//! The after-sale's rows in SQLite: keys, settings, tickets, gates and check-in, read
//! and written by the functions the `Tickets` port calls (`tickets.rs`).

use boxoffice_domain::ticket::{AttendeeName, KeyId, SeatLabel, TicketId};
use boxoffice_domain::{EventId, GateId, Millis, OrderState, Secret};
use boxoffice_engine::ports::{
    BarcodeSetting, CheckIn, FirstScan, Gate, ScanAttempt, StoreError, StoredKey, TicketFacts,
    TicketRow,
};
use rusqlite::{Connection, OptionalExtension, Params, Row, params};

use crate::conn::{corrupt, db};
use crate::orders::parse_state;
use crate::writer::Step;

pub(crate) fn keys(conn: &Connection, event: EventId) -> Result<Vec<StoredKey>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT kid, seed, created_at FROM ticket_keys
             WHERE event_id = ?1 AND retired_at IS NULL ORDER BY kid",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([event.0], |r| {
            Ok((r.get::<_, u32>(0)?, r.get::<_, Vec<u8>>(1)?, r.get(2)?))
        })
        .map_err(db)?;
    rows.map(|r| {
        let (kid, seed, at) = r.map_err(db)?;
        Ok(StoredKey {
            kid: KeyId(kid),
            seed: Secret::new(bytes32(&seed, "key seed")?),
            created_at: Millis(at),
        })
    })
    .collect()
}

pub(crate) fn add_key(
    conn: &Connection,
    event: EventId,
    key: &StoredKey,
) -> Result<Step<bool>, StoreError> {
    let added = conn
        .prepare_cached(
            "INSERT INTO ticket_keys (event_id, kid, seed, created_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (event_id, kid) DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                event.0,
                key.kid.0,
                &key.seed.expose()[..],
                key.created_at.0
            ])
        })
        .map_err(db)?;
    Ok(keep_if(added == 1))
}

pub(crate) fn retire_key(
    conn: &Connection,
    event: EventId,
    kid: KeyId,
    now: Millis,
) -> Result<Step<bool>, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE ticket_keys SET retired_at = ?3
             WHERE event_id = ?1 AND kid = ?2 AND retired_at IS NULL",
        )
        .and_then(|mut s| s.execute(params![event.0, kid.0, now.0]))
        .map_err(db)?;
    Ok(keep_if(changed == 1))
}

pub(crate) fn setting(
    conn: &Connection,
    event: EventId,
) -> Result<Option<BarcodeSetting>, StoreError> {
    let row = conn
        .prepare_cached("SELECT rotating, rotation_secret FROM ticket_settings WHERE event_id = ?1")
        .and_then(|mut s| {
            s.query_row([event.0], |r| {
                Ok((r.get::<_, bool>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .optional()
        })
        .map_err(db)?;
    row.map(|(rotating, secret)| {
        Ok(BarcodeSetting {
            rotating,
            rotation_secret: Secret::new(bytes32(&secret, "rotation secret")?),
        })
    })
    .transpose()
}

pub(crate) fn set_rotating(
    conn: &Connection,
    event: EventId,
    rotating: bool,
    secret: [u8; 32],
) -> Result<Step<BarcodeSetting>, StoreError> {
    conn.prepare_cached(
        "INSERT INTO ticket_settings (event_id, rotating, rotation_secret) VALUES (?1, ?2, ?3)
         ON CONFLICT (event_id) DO UPDATE SET rotating = excluded.rotating",
    )
    .and_then(|mut s| s.execute(params![event.0, rotating, &secret[..]]))
    .map_err(db)?;
    let stored =
        setting(conn, event)?.ok_or_else(|| StoreError::new("sqlite: ticket setting vanished"))?;
    Ok(Step::Keep(stored))
}

pub(crate) fn insert_tickets(
    conn: &Connection,
    rows: &[TicketRow],
) -> Result<Step<()>, StoreError> {
    insert_rows(conn, rows).map(Step::Keep)
}

/// Writes the tickets that do not exist yet (by id).
pub(crate) fn insert_rows(conn: &Connection, rows: &[TicketRow]) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO tickets (id, event_id, order_id, seat_id, holder_id, version, attendee, issued_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING",
        )
        .map_err(db)?;
    for t in rows {
        stmt.execute(params![
            t.id.to_string(),
            t.event.0,
            t.order.to_string(),
            t.seat.as_str(),
            t.holder.to_string(),
            t.version,
            t.attendee.as_ref().map(AttendeeName::as_str),
            t.issued_at.0
        ])
        .map_err(db)?;
    }
    Ok(())
}

/// The columns `facts` reads, in its order.
const FACTS: &str = "SELECT t.id, t.event_id, t.order_id, t.seat_id, t.holder_id, t.version,
        t.attendee, t.issued_at, COALESCE(t.own_state, o.state), c.gate_id, g.name, c.at, t.name_changes
    FROM tickets t JOIN orders o ON o.id = t.order_id
    LEFT JOIN checkins c ON c.ticket_id = t.id LEFT JOIN gates g ON g.id = c.gate_id";

pub(crate) fn facts_where(
    conn: &Connection,
    clause: &str,
    params: impl Params,
) -> Result<Vec<TicketFacts>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!("{FACTS} {clause}"))
        .map_err(db)?;
    let rows = stmt.query_map(params, raw_facts).map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(RawFacts::parse))
        .collect()
}

pub(crate) fn ticket(conn: &Connection, id: TicketId) -> Result<Option<TicketFacts>, StoreError> {
    Ok(facts_where(conn, "WHERE t.id = ?1", [id.to_string()])?
        .into_iter()
        .next())
}

type RawFacts = (
    (
        String,
        i64,
        String,
        String,
        String,
        u32,
        Option<String>,
        i64,
    ),
    (String, Option<String>, Option<String>, Option<i64>, u32),
);

fn raw_facts(r: &Row<'_>) -> rusqlite::Result<RawFacts> {
    Ok((
        (
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
        ),
        (r.get(8)?, r.get(9)?, r.get(10)?, r.get(11)?, r.get(12)?),
    ))
}

trait Parse {
    fn parse(self) -> Result<TicketFacts, StoreError>;
}

impl Parse for RawFacts {
    fn parse(self) -> Result<TicketFacts, StoreError> {
        let ((id, event, order, seat, holder, version, attendee, issued), rest) = self;
        let (state, gate, gate_name, at, name_changes) = rest;
        let ticket = TicketRow {
            id: id.parse().map_err(|e| corrupt("ticket id", e))?,
            event: EventId(event),
            order: order.parse().map_err(|e| corrupt("order id", e))?,
            seat: SeatLabel::try_from(seat).map_err(|e| corrupt("seat label", e))?,
            holder: holder.parse().map_err(|e| corrupt("holder id", e))?,
            version,
            attendee: attendee
                .map(AttendeeName::try_from)
                .transpose()
                .map_err(|e| corrupt("attendee", e))?,
            issued_at: Millis(issued),
        };
        let checked_in = match (gate, at) {
            (Some(gate), Some(at)) => Some(FirstScan {
                gate: gate.parse().map_err(|e| corrupt("gate id", e))?,
                gate_name: gate_name.unwrap_or_default(),
                at: Millis(at),
            }),
            _ => None,
        };
        Ok(TicketFacts {
            ticket,
            order_state: parse_state(&state)?,
            checked_in,
            name_changes,
        })
    }
}

const GATE_COLUMNS: &str = "SELECT id, event_id, name, digest, revoked, created_at FROM gates";

fn gate_where(
    conn: &Connection,
    clause: &str,
    params: impl Params,
) -> Result<Option<Gate>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("{GATE_COLUMNS} {clause}"))
        .and_then(|mut s| {
            s.query_row(params, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                    r.get::<_, bool>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .optional()
        })
        .map_err(db)?;
    raw.map(|(id, event, name, digest, revoked, at)| {
        Ok(Gate {
            id: id.parse().map_err(|e| corrupt("gate id", e))?,
            event: EventId(event),
            name,
            digest: bytes32(&digest, "gate digest")?,
            revoked,
            created_at: Millis(at),
        })
    })
    .transpose()
}

pub(crate) fn gate(conn: &Connection, id: GateId) -> Result<Option<Gate>, StoreError> {
    gate_where(conn, "WHERE id = ?1", [id.to_string()])
}

pub(crate) fn gate_by_digest(
    conn: &Connection,
    digest: [u8; 32],
) -> Result<Option<Gate>, StoreError> {
    gate_where(conn, "WHERE digest = ?1", [&digest[..]])
}

pub(crate) fn add_gate(
    conn: &Connection,
    g: &Gate,
    key: &str,
) -> Result<Step<Option<Gate>>, StoreError> {
    let added = conn
        .prepare_cached(
            "INSERT INTO gates (id, event_id, name, digest, revoked, creation_key, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (event_id, creation_key) DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                g.id.to_string(),
                g.event.0,
                g.name,
                &g.digest[..],
                g.revoked,
                key,
                g.created_at.0
            ])
        })
        .map_err(db)?;
    if added == 1 {
        return Ok(Step::Keep(None));
    }
    let first = gate_where(
        conn,
        "WHERE event_id = ?1 AND creation_key = ?2",
        params![g.event.0, key],
    )?;
    Ok(Step::Undo(first))
}

pub(crate) fn revoke_gate(conn: &Connection, id: GateId) -> Result<Step<Option<Gate>>, StoreError> {
    conn.prepare_cached("UPDATE gates SET revoked = 1 WHERE id = ?1")
        .and_then(|mut s| s.execute([id.to_string()]))
        .map_err(db)?;
    Ok(Step::Keep(gate(conn, id)?))
}

/// Writer job: decides the scan against the ticket and its order as they are inside
/// this transaction (the writer is the only one), then logs it.
pub(crate) fn check_in(conn: &Connection, scan: &ScanAttempt) -> Result<Step<CheckIn>, StoreError> {
    let outcome = decide(conn, scan)?;
    conn.prepare_cached(
        "INSERT INTO scans (ticket_id, version, gate_id, at, offline, outcome)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![
            scan.ticket.to_string(),
            scan.version,
            scan.gate.to_string(),
            scan.at.0,
            scan.offline,
            outcome.as_str()
        ])
    })
    .map_err(db)?;
    Ok(Step::Keep(outcome))
}

fn decide(conn: &Connection, scan: &ScanAttempt) -> Result<CheckIn, StoreError> {
    let Some(facts) = ticket(conn, scan.ticket)? else {
        return Ok(CheckIn::Unknown);
    };
    if facts.ticket.version != scan.version {
        return Ok(CheckIn::OldVersion {
            current: facts.ticket.version,
        });
    }
    if facts.order_state != OrderState::Confirmed {
        return Ok(CheckIn::NotPaid(facts.order_state));
    }
    let id = scan.ticket.to_string();
    let gate = scan.gate.to_string();
    // Online: only a ticket nobody admitted. Offline: an earlier scan replaces a later.
    let sql = if scan.offline {
        "INSERT INTO checkins (ticket_id, version, gate_id, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (ticket_id) DO UPDATE SET version = excluded.version,
             gate_id = excluded.gate_id, at = excluded.at WHERE excluded.at < checkins.at"
    } else {
        "INSERT INTO checkins (ticket_id, version, gate_id, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (ticket_id) DO NOTHING"
    };
    let written = conn
        .prepare_cached(sql)
        .and_then(|mut s| s.execute(params![id, scan.version, gate, scan.at.0]))
        .map_err(db)?;
    Ok(match (written, facts.checked_in) {
        (1, replaced) => CheckIn::Admitted { replaced },
        (_, Some(first)) => CheckIn::AlreadyScanned(first),
        (_, None) => return Err(StoreError::new("sqlite: check-in refused with no check-in")),
    })
}

fn keep_if(done: bool) -> Step<bool> {
    if done {
        Step::Keep(true)
    } else {
        Step::Undo(false)
    }
}

fn bytes32(b: &[u8], what: &str) -> Result<[u8; 32], StoreError> {
    b.try_into().map_err(|_| corrupt(what, "not 32 bytes"))
}

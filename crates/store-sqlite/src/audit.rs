//! The audit's facts, each a query that lists violations rather than trusting the
//! constraints that should prevent them: a fact is only worth checking if it is
//! computed independently of the mechanism it audits. All queries read one snapshot.

use boxoffice_domain::{BuyerId, EventId, OrderId, order::ALL_STATES};
use boxoffice_engine::ports::{AuditFacts, EventFacts, StoreError};
use rusqlite::{Connection, Params, Row};

use crate::conn::{corrupt, db};
use crate::orders::{parse_state, state_list};

const EVENTS: &str = "
    SELECT x.id,
           (SELECT COUNT(*) FROM event_seats es WHERE es.event_id = x.id),
           (SELECT COUNT(*) FROM sold_seats s WHERE s.event_id = x.id)
    FROM (SELECT id FROM events UNION SELECT event_id FROM sold_seats) x ORDER BY x.id";

const UNKNOWN_SEATS: &str = "
    SELECT s.event_id, s.seat_id FROM sold_seats s
    WHERE NOT EXISTS (SELECT 1 FROM event_seats es WHERE es.event_id = s.event_id AND es.seat_id = s.seat_id)
    ORDER BY s.event_id, s.seat_id";

/// A sold seat belongs to its order's buyer, or to the holder its ticket was
/// transferred to; its order owns seats, unless its ticket was sold on through the
/// exchange (it stands apart, `confirmed` on its own, whatever its order became).
const SOLD_WITHOUT_ORDER: &str = "
    SELECT s.event_id, s.seat_id FROM sold_seats s LEFT JOIN orders o ON o.id = s.order_id
    WHERE o.id IS NULL OR o.event_id != s.event_id
       OR s.buyer_id != COALESCE((SELECT t.holder_id FROM tickets t
            WHERE t.order_id = s.order_id AND t.seat_id = s.seat_id), o.buyer_id)
       OR (o.state NOT IN (SELECT value FROM json_each(?1)) AND NOT EXISTS (
            SELECT 1 FROM tickets t WHERE t.order_id = s.order_id AND t.seat_id = s.seat_id
              AND t.own_state = 'confirmed'))
    ORDER BY s.event_id, s.seat_id";

/// An order owning seats must own exactly its own seats: as many sold rows as seats,
/// and each of its seats sold to it, but for the seats of its tickets cancelled on
/// their own (or refunded with the event after the exchange), given back already.
const ORDERS_MISSING_SEATS: &str = "
    SELECT o.id FROM orders o
    WHERE o.state IN (SELECT value FROM json_each(?1))
      AND (json_array_length(o.seats) - (SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id
            AND t.own_state IN ('refunding', 'cancelled', 'refunded'))
          != (SELECT COUNT(*) FROM sold_seats s WHERE s.order_id = o.id)
        OR json_array_length(o.seats) - (SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id
            AND t.own_state IN ('refunding', 'cancelled', 'refunded')) != (
            SELECT COUNT(*) FROM json_each(o.seats) j JOIN sold_seats s
              ON s.event_id = o.event_id AND s.seat_id = json_extract(j.value, '$.seat_id') AND s.order_id = o.id))
    ORDER BY o.id";

const SEATS_OF_UNSOLD_ORDERS: &str = "
    SELECT DISTINCT s.order_id FROM sold_seats s JOIN orders o ON o.id = s.order_id
    WHERE o.state NOT IN (SELECT value FROM json_each(?1))
      AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = s.order_id
            AND t.seat_id = s.seat_id AND t.own_state = 'confirmed')
    ORDER BY s.order_id";

/// Buyers over the event's limit by their sold seats, plus every buyer whose guard row
/// is over its own max or no longer equals their sold seats: a drifted guard stops
/// guarding (P6), so it is reported with the larger of the two counts.
const BUYERS_OVER_LIMIT: &str = "
    WITH sold AS (SELECT event_id, buyer_id, COUNT(*) AS n FROM sold_seats GROUP BY event_id, buyer_id)
    SELECT event_id, buyer_id, MAX(n) FROM (
        SELECT s.event_id, s.buyer_id, s.n FROM sold s JOIN events e ON e.id = s.event_id
        WHERE s.n > json_extract(e.body, '$.sale.max_tickets_per_buyer')
        UNION ALL
        SELECT g.event_id, g.buyer_id, MAX(g.tickets, COALESCE(s.n, 0)) FROM buyer_tickets g
        LEFT JOIN sold s ON s.event_id = g.event_id AND s.buyer_id = g.buyer_id
        WHERE g.tickets > g.max_tickets OR g.tickets != COALESCE(s.n, 0)
        UNION ALL
        SELECT s.event_id, s.buyer_id, s.n FROM sold s
        WHERE NOT EXISTS (SELECT 1 FROM buyer_tickets g WHERE g.event_id = s.event_id AND g.buyer_id = s.buyer_id)
    ) GROUP BY event_id, buyer_id ORDER BY event_id, buyer_id";

const ORDERS: &str = "SELECT id, state, payment_ref FROM orders ORDER BY created_at, id";

pub(crate) fn facts(conn: &Connection) -> Result<AuditFacts, StoreError> {
    // One read transaction: every fact describes the same instant.
    conn.execute_batch("BEGIN").map_err(db)?;
    let facts = gather(conn);
    let _ = conn.execute_batch("COMMIT");
    facts
}

fn gather(conn: &Connection) -> Result<AuditFacts, StoreError> {
    let owning = state_list(ALL_STATES.into_iter().filter(|s| s.holds_seats()));
    let mut events = all(conn, EVENTS, [], |r| {
        Ok(EventFacts {
            event: EventId(r.get(0)?),
            capacity: r.get(1)?,
            sold: r.get(2)?,
            unknown_seats: vec![],
        })
    })?;
    for (event, seat) in all(conn, UNKNOWN_SEATS, [], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })? {
        if let Some(facts) = events.iter_mut().find(|f| f.event.0 == event) {
            facts.unknown_seats.push(seat);
        }
    }
    let sold_without_order = all(conn, SOLD_WITHOUT_ORDER, [&owning], |r| {
        Ok((EventId(r.get(0)?), r.get(1)?))
    })?;
    let buyers = all(conn, BUYERS_OVER_LIMIT, [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, u32>(2)?,
        ))
    })?;
    let orders = all(conn, ORDERS, [], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?))
    })?;
    Ok(AuditFacts {
        events,
        sold_without_order,
        orders_missing_seats: order_ids(all(conn, ORDERS_MISSING_SEATS, [&owning], |r| r.get(0))?)?,
        seats_of_unsold_orders: order_ids(all(conn, SEATS_OF_UNSOLD_ORDERS, [&owning], |r| {
            r.get(0)
        })?)?,
        buyers_over_limit: buyers
            .into_iter()
            .map(|(e, b, n)| {
                Ok((
                    EventId(e),
                    b.parse::<BuyerId>().map_err(|e| corrupt("buyer id", e))?,
                    n,
                ))
            })
            .collect::<Result<_, StoreError>>()?,
        orders: orders
            .into_iter()
            .map(|(id, state, pref)| Ok((order_id(&id)?, parse_state(&state)?, pref)))
            .collect::<Result<_, StoreError>>()?,
    })
}

fn all<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let rows = stmt.query_map(params, f).map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}

fn order_id(s: &str) -> Result<OrderId, StoreError> {
    s.parse().map_err(|e| corrupt("order id", e))
}

fn order_ids(ids: Vec<String>) -> Result<Vec<OrderId>, StoreError> {
    ids.iter().map(|s| order_id(s)).collect()
}

//! The audit's facts, each a query that lists violations rather than trusting the
//! constraints that should prevent them: a fact is only worth checking if it is
//! computed independently of the mechanism it audits. All queries read one snapshot
//! (a repeatable-read, read-only transaction), so every fact describes one instant.

use boxoffice_domain::{BuyerId, EventId, OrderId, order::ALL_STATES};
use boxoffice_engine::ports::{AuditFacts, EventFacts, StoreError};
use sqlx::{PgConnection, PgPool};

use crate::conn::{corrupt, db};
use crate::orders::parse_state;

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
       OR (o.state != ALL($1) AND NOT EXISTS (
            SELECT 1 FROM tickets t WHERE t.order_id = s.order_id AND t.seat_id = s.seat_id
              AND t.own_state = 'confirmed'))
    ORDER BY s.event_id, s.seat_id";

/// An order owning seats must own exactly its own seats: as many sold rows as seats,
/// and each of its seats sold to it, but for the seats of its tickets cancelled on
/// their own (or refunded with the event after the exchange), given back already.
const ORDERS_MISSING_SEATS: &str = "
    SELECT o.id FROM orders o
    WHERE o.state = ANY($1)
      AND (jsonb_array_length(o.seats) - (SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id
            AND t.own_state IN ('refunding', 'cancelled', 'refunded'))
          != (SELECT COUNT(*) FROM sold_seats s WHERE s.order_id = o.id)
        OR jsonb_array_length(o.seats) - (SELECT COUNT(*) FROM tickets t WHERE t.order_id = o.id
            AND t.own_state IN ('refunding', 'cancelled', 'refunded')) != (
            SELECT COUNT(*) FROM jsonb_array_elements(o.seats) j JOIN sold_seats s
              ON s.event_id = o.event_id AND s.seat_id = j->>'seat_id' AND s.order_id = o.id))
    ORDER BY o.id";

const SEATS_OF_UNSOLD_ORDERS: &str = "
    SELECT DISTINCT s.order_id FROM sold_seats s JOIN orders o ON o.id = s.order_id
    WHERE o.state != ALL($1)
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
        WHERE s.n > (e.body -> 'sale' ->> 'max_tickets_per_buyer')::bigint
        UNION ALL
        SELECT g.event_id, g.buyer_id, GREATEST(g.tickets, COALESCE(s.n, 0)) FROM buyer_tickets g
        LEFT JOIN sold s ON s.event_id = g.event_id AND s.buyer_id = g.buyer_id
        WHERE g.tickets > g.max_tickets OR g.tickets != COALESCE(s.n, 0)
        UNION ALL
        SELECT s.event_id, s.buyer_id, s.n FROM sold s
        WHERE NOT EXISTS (SELECT 1 FROM buyer_tickets g WHERE g.event_id = s.event_id AND g.buyer_id = s.buyer_id)
    ) v GROUP BY event_id, buyer_id ORDER BY event_id, buyer_id";

const ORDERS: &str = "SELECT id, state, payment_ref FROM orders ORDER BY created_at, id";

pub(crate) async fn facts(pool: &PgPool) -> Result<AuditFacts, StoreError> {
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .await
        .map_err(db)?;
    let facts = gather(&mut tx).await;
    // Nothing was written; ending the snapshot is all that is left to do.
    let _ = tx.rollback().await;
    facts
}

fn count(n: i64) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|e| corrupt("count", e))
}

async fn gather(conn: &mut PgConnection) -> Result<AuditFacts, StoreError> {
    let owning: Vec<&str> = ALL_STATES
        .into_iter()
        .filter(|s| s.holds_seats())
        .map(|s| s.as_str())
        .collect();
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(EVENTS)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let mut events = rows
        .into_iter()
        .map(|(id, capacity, sold)| {
            Ok(EventFacts {
                event: EventId(id),
                capacity: count(capacity)?,
                sold: count(sold)?,
                unknown_seats: vec![],
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let unknown: Vec<(i64, String)> = sqlx::query_as(UNKNOWN_SEATS)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    for (event, seat) in unknown {
        if let Some(facts) = events.iter_mut().find(|f| f.event.0 == event) {
            facts.unknown_seats.push(seat);
        }
    }
    let sold_without_order: Vec<(i64, String)> = sqlx::query_as(SOLD_WITHOUT_ORDER)
        .bind(&owning)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let missing: Vec<String> = sqlx::query_scalar(ORDERS_MISSING_SEATS)
        .bind(&owning)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let unsold: Vec<String> = sqlx::query_scalar(SEATS_OF_UNSOLD_ORDERS)
        .bind(&owning)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let buyers: Vec<(i64, String, i64)> = sqlx::query_as(BUYERS_OVER_LIMIT)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let orders: Vec<(String, String, Option<String>)> = sqlx::query_as(ORDERS)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    Ok(AuditFacts {
        events,
        sold_without_order: sold_without_order
            .into_iter()
            .map(|(e, s)| (EventId(e), s))
            .collect(),
        orders_missing_seats: order_ids(missing)?,
        seats_of_unsold_orders: order_ids(unsold)?,
        buyers_over_limit: buyers
            .into_iter()
            .map(|(e, b, n)| {
                let buyer = b.parse::<BuyerId>().map_err(|e| corrupt("buyer id", e))?;
                Ok((EventId(e), buyer, count(n)?))
            })
            .collect::<Result<_, StoreError>>()?,
        orders: orders
            .into_iter()
            .map(|(id, state, pref)| Ok((order_id(&id)?, parse_state(&state)?, pref)))
            .collect::<Result<_, StoreError>>()?,
    })
}

fn order_id(s: &str) -> Result<OrderId, StoreError> {
    s.parse().map_err(|e| corrupt("order id", e))
}

fn order_ids(ids: Vec<String>) -> Result<Vec<OrderId>, StoreError> {
    ids.iter().map(|s| order_id(s)).collect()
}

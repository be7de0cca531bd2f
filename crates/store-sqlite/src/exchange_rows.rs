//! The exchange in SQLite: listings, swaps, and the writer jobs that move them. Every
//! job runs on the one writer, so a reservation's checks and its writes see no other
//! write in between; a refusal undoes the job's savepoint.

use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{
    BuyerId, EventId, ListingId, Millis, Money, OrderEvent, OrderId, OrderState, SwapId,
};
use boxoffice_engine::ports::{Listing, ListingRefusal, Moved, Reserve, StoreError, Swap};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::conn::{corrupt, db};
use crate::ticket_rows::ticket;
use crate::writer::Step;

type Answer<T> = Step<Result<T, ListingRefusal>>;

const LISTING: &str = "SELECT l.id, l.ticket_id, l.event_id, l.seat_id, l.seller, l.version,
    l.price, l.state, l.created_at, l.ended_at FROM exchange_listings l";

pub(crate) const SWAP: &str =
    "SELECT id, listing_id, ticket_id, event_id, seller, buyer, seller_order,
    charge, charge_ref, price, currency, payout, payment_method, state, created_at, updated_at
    FROM exchange_swaps";

/// A stored id read back; one that does not parse is a corrupt row.
fn parse<T: std::str::FromStr>(s: String) -> rusqlite::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    s.parse::<T>().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn bad(what: &'static str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnName(format!("unknown {what}"))
}

fn listing_of(r: &Row<'_>) -> rusqlite::Result<Listing> {
    let state: String = r.get(7)?;
    Ok(Listing {
        id: parse(r.get(0)?)?,
        ticket: parse(r.get(1)?)?,
        event: EventId(r.get(2)?),
        seat: r.get(3)?,
        seller: parse(r.get(4)?)?,
        version: r.get(5)?,
        price: Money(r.get(6)?),
        state: ListingState::parse(&state).ok_or_else(|| bad("listing state"))?,
        created_at: Millis(r.get(8)?),
        ended_at: r.get::<_, Option<i64>>(9)?.map(Millis),
    })
}

pub(crate) fn swap_of(r: &Row<'_>) -> rusqlite::Result<Swap> {
    let state: String = r.get(13)?;
    Ok(Swap {
        id: parse(r.get(0)?)?,
        listing: parse(r.get(1)?)?,
        ticket: parse(r.get(2)?)?,
        event: EventId(r.get(3)?),
        seller: parse(r.get(4)?)?,
        buyer: parse(r.get(5)?)?,
        seller_order: parse(r.get(6)?)?,
        charge: parse(r.get(7)?)?,
        charge_ref: r.get(8)?,
        price: Money(r.get(9)?),
        currency: r.get(10)?,
        payout: Money(r.get(11)?),
        payment_method: r.get(12)?,
        state: SwapState::parse(&state).ok_or_else(|| bad("swap state"))?,
        created_at: Millis(r.get(14)?),
        updated_at: Millis(r.get(15)?),
    })
}

pub(crate) fn listing(conn: &Connection, id: ListingId) -> Result<Option<Listing>, StoreError> {
    conn.prepare_cached(&format!("{LISTING} WHERE l.id = ?1"))
        .and_then(|mut s| s.query_row([id.to_string()], listing_of).optional())
        .map_err(db)
}

pub(crate) fn swap(conn: &Connection, id: SwapId) -> Result<Option<Swap>, StoreError> {
    conn.prepare_cached(&format!("{SWAP} WHERE id = ?1"))
        .and_then(|mut s| s.query_row([id.to_string()], swap_of).optional())
        .map_err(db)
}

pub(crate) fn swap_by_charge(
    conn: &Connection,
    charge: OrderId,
) -> Result<Option<Swap>, StoreError> {
    conn.prepare_cached(&format!("{SWAP} WHERE charge = ?1"))
        .and_then(|mut s| s.query_row([charge.to_string()], swap_of).optional())
        .map_err(db)
}

/// Open listings whose ticket is still the seller's at the listed version, unscanned,
/// its order confirmed.
pub(crate) fn open_listings(
    conn: &Connection,
    event: EventId,
    after: Option<ListingId>,
    limit: u32,
) -> Result<Vec<Listing>, StoreError> {
    let sql = format!(
        "{LISTING} JOIN tickets t ON t.id = l.ticket_id JOIN orders o ON o.id = t.order_id
         WHERE l.event_id = ?1 AND l.state = 'open' AND l.id > ?2
           AND t.version = l.version AND t.holder_id = l.seller
           AND COALESCE(t.own_state, o.state) = ?4
           AND NOT EXISTS (SELECT 1 FROM checkins c WHERE c.ticket_id = l.ticket_id)
         ORDER BY l.id LIMIT ?3"
    );
    let after = after.map(|a| a.to_string()).unwrap_or_default();
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt
        .query_map(
            params![event.0, after, limit, OrderState::Confirmed.as_str()],
            listing_of,
        )
        .map_err(db)?;
    rows.collect::<rusqlite::Result<_>>().map_err(db)
}

pub(crate) fn unfinished(
    conn: &Connection,
    before: Millis,
    limit: u32,
) -> Result<Vec<Swap>, StoreError> {
    let sql = format!(
        "{SWAP} WHERE state NOT IN ('done', 'undone') AND updated_at < ?1
         ORDER BY updated_at, id LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt
        .query_map(params![before.0, limit], swap_of)
        .map_err(db)?;
    rows.collect::<rusqlite::Result<_>>().map_err(db)
}

pub(crate) fn charges(conn: &Connection) -> Result<Vec<(OrderId, SwapState)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT charge, state FROM exchange_swaps")
        .map_err(db)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(db)?;
    rows.map(|r| {
        let (charge, state) = r.map_err(db)?;
        Ok((
            charge.parse().map_err(|e| corrupt("swap charge", e))?,
            SwapState::parse(&state).ok_or_else(|| corrupt("swap state", &state))?,
        ))
    })
    .collect()
}

/// Whether `seller` still holds the ticket at `version`, unscanned, its order paid.
fn movable(
    conn: &Connection,
    id: TicketId,
    seller: BuyerId,
    version: u32,
) -> Result<Result<OrderId, ListingRefusal>, StoreError> {
    let Some(facts) = ticket(conn, id)? else {
        return Ok(Err(ListingRefusal::NotFound));
    };
    Ok(
        if facts.ticket.holder != seller || facts.ticket.version != version {
            Err(ListingRefusal::Superseded)
        } else if facts.checked_in.is_some() {
            Err(ListingRefusal::CheckedIn)
        } else if facts.order_state != OrderState::Confirmed {
            Err(ListingRefusal::NotPaid(facts.order_state))
        } else {
            Ok(facts.ticket.order)
        },
    )
}

/// Writer job: opens a listing, unless the ticket has a live listing or an open offer.
pub(crate) fn list(conn: &Connection, l: &Listing) -> Result<Answer<()>, StoreError> {
    if let Err(no) = movable(conn, l.ticket, l.seller, l.version)? {
        return Ok(Step::Undo(Err(no)));
    }
    // Sold on once, its order's payment paid its seller back already: a second sale
    // would pay out of it again (and back to its first buyer, whoever holds it now).
    let sold_on: bool = conn
        .prepare_cached("SELECT own_state IS NOT NULL FROM tickets WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![l.ticket.to_string()], |r| r.get(0)))
        .map_err(db)?;
    if sold_on {
        return Ok(Step::Undo(Err(ListingRefusal::SoldOn)));
    }
    let offered: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM ticket_transfers
             WHERE ticket_id = ?1 AND state = 'offered' AND expires_at > ?2)",
        )
        .and_then(|mut s| s.query_row(params![l.ticket.to_string(), l.created_at.0], |r| r.get(0)))
        .map_err(db)?;
    if offered {
        return Ok(Step::Undo(Err(ListingRefusal::AlreadyListed)));
    }
    let added = conn
        .prepare_cached(
            "INSERT INTO exchange_listings (id, ticket_id, event_id, seat_id, seller, version,
                 price, state, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'open', ?8) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                l.id.to_string(),
                l.ticket.to_string(),
                l.event.0,
                l.seat,
                l.seller.to_string(),
                l.version,
                l.price.0,
                l.created_at.0
            ])
        })
        .map_err(db)?;
    Ok(if added == 1 {
        Step::Keep(Ok(()))
    } else {
        Step::Undo(Err(ListingRefusal::AlreadyListed))
    })
}

/// Writer job: the seller withdraws an open listing.
pub(crate) fn withdraw(
    conn: &Connection,
    id: ListingId,
    by: BuyerId,
    now: Millis,
) -> Result<Answer<Listing>, StoreError> {
    let ended = end_listing(conn, id, ListingState::Open, ListingState::Withdrawn, now)?;
    let found = listing(conn, id)?.filter(|l| l.seller == by);
    Ok(match found {
        Some(l) if ended => Step::Keep(Ok(l)),
        Some(l) => Step::Undo(Err(ListingRefusal::NotOpen(l.state))),
        None => Step::Undo(Err(ListingRefusal::NotFound)),
    })
}

fn end_listing(
    conn: &Connection,
    id: ListingId,
    from: ListingState,
    to: ListingState,
    now: Millis,
) -> Result<bool, StoreError> {
    let ended = (to != ListingState::Open).then_some(now.0);
    conn.prepare_cached(
        "UPDATE exchange_listings SET state = ?3, ended_at = ?4 WHERE id = ?1 AND state = ?2",
    )
    .and_then(|mut s| s.execute(params![id.to_string(), from.as_str(), to.as_str(), ended]))
    .map(|n| n == 1)
    .map_err(db)
}

/// The buyer's tickets of the event plus their swaps in flight.
fn buyer_load(conn: &Connection, event: EventId, buyer: BuyerId) -> Result<u32, StoreError> {
    conn.prepare_cached(
        "SELECT COALESCE((SELECT tickets FROM buyer_tickets WHERE event_id = ?1 AND buyer_id = ?2), 0)
              + (SELECT COUNT(*) FROM exchange_swaps WHERE event_id = ?1 AND buyer = ?2
                   AND state NOT IN ('done', 'undone'))",
    )
    .and_then(|mut s| s.query_row(params![event.0, buyer.to_string()], |r| r.get(0)))
    .map_err(db)
}

/// Writer job: reserves the listing and writes the swap, or refuses.
pub(crate) fn reserve(conn: &Connection, r: &Reserve) -> Result<Answer<()>, StoreError> {
    let s = &r.swap;
    let Some(l) = listing(conn, s.listing)? else {
        return Ok(Step::Undo(Err(ListingRefusal::NotFound)));
    };
    let refusal = if l.seller == s.buyer {
        Some(ListingRefusal::OwnListing)
    } else if l.state != ListingState::Open {
        Some(ListingRefusal::NotOpen(l.state))
    } else if let Err(no) = movable(conn, l.ticket, l.seller, l.version)? {
        Some(no)
    } else if buyer_load(conn, l.event, s.buyer)? >= r.max_per_buyer {
        Some(ListingRefusal::LimitExceeded)
    } else {
        None
    };
    if let Some(no) = refusal {
        return Ok(Step::Undo(Err(no)));
    }
    if !end_listing(
        conn,
        l.id,
        ListingState::Open,
        ListingState::Reserved,
        s.created_at,
    )? {
        return Ok(Step::Undo(Err(ListingRefusal::NotOpen(l.state))));
    }
    conn.prepare_cached(
        "INSERT INTO exchange_swaps (id, listing_id, ticket_id, event_id, seller, buyer,
             seller_order, charge, charge_ref, price, currency, payout, payment_method, state,
             created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?9, ?10, ?11, ?12, 'reserved', ?13, ?13)",
    )
    .and_then(|mut st| {
        st.execute(params![
            s.id.to_string(),
            l.id.to_string(),
            l.ticket.to_string(),
            l.event.0,
            l.seller.to_string(),
            s.buyer.to_string(),
            s.seller_order.to_string(),
            s.charge.to_string(),
            s.price.0,
            s.currency,
            s.payout.0,
            s.payment_method,
            s.created_at.0
        ])
    })
    .map_err(db)?;
    Ok(Step::Keep(Ok(())))
}

/// Writer job: one conditional move of a swap, and the listing's that goes with it.
pub(crate) fn advance(
    conn: &Connection,
    id: SwapId,
    from: SwapState,
    to: SwapState,
    charge_ref: Option<&str>,
    now: Millis,
) -> Result<Step<bool>, StoreError> {
    if !from.can_move_to(to) {
        return Err(StoreError::new(format_args!(
            "sqlite: a swap cannot move from {} to {}",
            from.as_str(),
            to.as_str()
        )));
    }
    let moved = set_state(conn, id, from, to, charge_ref, now)?;
    if moved && from == SwapState::Reserved && to == SwapState::Undone {
        let s = swap(conn, id)?.ok_or_else(|| StoreError::new("sqlite: swap vanished"))?;
        end_listing(
            conn,
            s.listing,
            ListingState::Reserved,
            ListingState::Open,
            now,
        )?;
    }
    Ok(Step::Keep(moved))
}

fn set_state(
    conn: &Connection,
    id: SwapId,
    from: SwapState,
    to: SwapState,
    charge_ref: Option<&str>,
    now: Millis,
) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "UPDATE exchange_swaps SET state = ?3, updated_at = ?4, charge_ref = COALESCE(?5, charge_ref)
         WHERE id = ?1 AND state = ?2",
    )
    .and_then(|mut s| {
        s.execute(params![id.to_string(), from.as_str(), to.as_str(), now.0, charge_ref])
    })
    .map(|n| n == 1)
    .map_err(db)
}

/// Writer job: moves the ticket of a charged swap to its buyer, or sends the swap to
/// `refunding` when the ticket cannot move.
pub(crate) fn move_ticket(
    conn: &Connection,
    id: SwapId,
    max: u32,
    now: Millis,
) -> Result<Step<Moved>, StoreError> {
    let s = swap(conn, id)?.ok_or_else(|| StoreError::new("sqlite: no such swap"))?;
    if s.state != SwapState::Charged {
        return Ok(Step::Keep(Moved::NotCharged(s.state)));
    }
    let l = listing(conn, s.listing)?.ok_or_else(|| StoreError::new("sqlite: listing vanished"))?;
    let refusal = match movable(conn, s.ticket, s.seller, l.version)? {
        Err(no) => Some(no),
        Ok(_) if buyer_tickets(conn, s.event, s.buyer)? >= max => {
            Some(ListingRefusal::LimitExceeded)
        }
        Ok(_) => None,
    };
    if let Some(no) = refusal {
        // The ticket stays with its seller; the listing is open again only if it still
        // could be sold.
        let to = if no == ListingRefusal::LimitExceeded {
            ListingState::Open
        } else {
            ListingState::Withdrawn
        };
        set_state(
            conn,
            id,
            SwapState::Charged,
            SwapState::Refunding,
            None,
            now,
        )?;
        end_listing(conn, l.id, ListingState::Reserved, to, now)?;
        return Ok(Step::Keep(Moved::Refused(no)));
    }
    let holder = hand_over(conn, &s, l.version, &l.seat, max, now)?;
    end_listing(conn, l.id, ListingState::Reserved, ListingState::Sold, now)?;
    set_state(conn, id, SwapState::Charged, SwapState::Moved, None, now)?;
    Ok(Step::Keep(Moved::Moved(holder)))
}

fn buyer_tickets(conn: &Connection, event: EventId, buyer: BuyerId) -> Result<u32, StoreError> {
    conn.prepare_cached(
        "SELECT COALESCE((SELECT tickets FROM buyer_tickets WHERE event_id = ?1 AND buyer_id = ?2), 0)",
    )
    .and_then(|mut s| s.query_row(params![event.0, buyer.to_string()], |r| r.get(0)))
    .map_err(db)
}

/// The ticket to the buyer at the next version, its sold seat and both counts, and the
/// `exchanged` history line; any failure here fails the whole job.
fn hand_over(
    conn: &Connection,
    s: &Swap,
    version: u32,
    seat: &str,
    max: u32,
    now: Millis,
) -> Result<boxoffice_engine::ports::TicketRow, StoreError> {
    let (buyer, seller) = (s.buyer.to_string(), s.seller.to_string());
    let moved = conn
        .prepare_cached(
            "UPDATE tickets SET holder_id = ?3, version = version + 1, attendee = NULL,
                 issued_at = ?4, own_state = 'confirmed' WHERE id = ?1 AND version = ?2",
        )
        .and_then(|mut st| st.execute(params![s.ticket.to_string(), version, buyer, now.0]))
        .map_err(db)?;
    let sold = conn
        .prepare_cached(
            "UPDATE sold_seats SET buyer_id = ?4
             WHERE event_id = ?1 AND seat_id = ?2 AND order_id = ?3 AND buyer_id = ?5",
        )
        .and_then(|mut st| {
            st.execute(params![
                s.event.0,
                seat,
                s.seller_order.to_string(),
                buyer,
                seller
            ])
        })
        .map_err(db)?;
    if moved != 1 || sold != 1 {
        return Err(StoreError::new(
            "sqlite: the exchanged ticket changed under the writer",
        ));
    }
    conn.prepare_cached(
        "UPDATE buyer_tickets SET tickets = tickets - 1 WHERE event_id = ?1 AND buyer_id = ?2",
    )
    .and_then(|mut st| st.execute(params![s.event.0, seller]))
    .map_err(db)?;
    conn.prepare_cached(
        "INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (event_id, buyer_id)
         DO UPDATE SET tickets = tickets + 1, max_tickets = excluded.max_tickets",
    )
    .and_then(|mut st| st.execute(params![s.event.0, buyer, max]))
    .map_err(db)?;
    history(conn, s, seat, version + 1, now)?;
    Ok(ticket(conn, s.ticket)?
        .ok_or_else(|| StoreError::new("sqlite: exchanged ticket vanished"))?
        .ticket)
}

fn history(
    conn: &Connection,
    s: &Swap,
    seat: &str,
    version: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let detail = serde_json::json!({
        "swap_id": s.id,
        "ticket_id": s.ticket,
        "seat_id": seat,
        "from_buyer_id": s.seller,
        "to_buyer_id": s.buyer,
        "version": version,
        "price": s.price,
        "payout": s.payout,
    });
    let confirmed = OrderState::Confirmed.as_str();
    conn.prepare_cached(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut st| {
        st.execute(params![
            s.seller_order.to_string(),
            confirmed,
            OrderEvent::EXCHANGED,
            now.0,
            detail.to_string()
        ])
    })
    .map(drop)
    .map_err(db)
}

//! The exchange in PostgreSQL. Each write is one transaction on the pool that locks the
//! ticket's row first (as transfers and check-ins do), so a listing, a reservation, a
//! ticket move and a scan of one ticket take turns on every node; a reservation also
//! takes a lock on its buyer for the event, so one buyer's reservations are counted
//! one at a time. Every move is conditional on the state it leaves.

use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, ListingId, Millis, Money, OrderEvent, SwapId};
use boxoffice_engine::ports::{
    Listing, ListingRefusal, Moved, Reserve, StoreError, Swap, TicketFacts,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::conn::{corrupt, db};
use crate::handover::{self, Handover, count_move, history_line, locked_ticket};
use crate::ticket_rows::version;

pub(crate) type Answer<T> = Result<Result<T, ListingRefusal>, StoreError>;

/// A listing's columns in `listing_of`'s order, up to the FROM.
macro_rules! listing_sql {
    () => {
        "SELECT l.id, l.ticket_id, l.event_id, l.seat_id, l.seller, l.version, l.price,
            l.state, l.created_at, l.ended_at FROM exchange_listings l "
    };
}
pub(crate) use listing_sql;

/// A swap's columns in `swap_of`'s order, up to the FROM.
macro_rules! swap_sql {
    () => {
        "SELECT id, listing_id, ticket_id, event_id, seller, buyer, seller_order, charge,
            charge_ref, price, currency, payout, payment_method, state, created_at, updated_at
         FROM exchange_swaps "
    };
}
pub(crate) use swap_sql;

pub(crate) fn listing_of(row: &PgRow) -> Result<Listing, StoreError> {
    let text = |i: usize| row.try_get::<String, _>(i).map_err(db);
    let v: i32 = row.try_get(5).map_err(db)?;
    let state = text(7)?;
    Ok(Listing {
        id: text(0)?.parse().map_err(|e| corrupt("listing id", e))?,
        ticket: text(1)?.parse().map_err(|e| corrupt("ticket id", e))?,
        event: EventId(row.try_get(2).map_err(db)?),
        seat: text(3)?,
        seller: text(4)?.parse().map_err(|e| corrupt("seller", e))?,
        version: u32::try_from(v).map_err(|e| corrupt("listing version", e))?,
        price: Money(row.try_get(6).map_err(db)?),
        state: ListingState::parse(&state).ok_or_else(|| corrupt("listing state", &state))?,
        created_at: Millis(row.try_get(8).map_err(db)?),
        ended_at: row.try_get::<Option<i64>, _>(9).map_err(db)?.map(Millis),
    })
}

pub(crate) fn swap_of(row: &PgRow) -> Result<Swap, StoreError> {
    let text = |i: usize| row.try_get::<String, _>(i).map_err(db);
    let state = text(13)?;
    Ok(Swap {
        id: text(0)?.parse().map_err(|e| corrupt("swap id", e))?,
        listing: text(1)?.parse().map_err(|e| corrupt("listing id", e))?,
        ticket: text(2)?.parse().map_err(|e| corrupt("ticket id", e))?,
        event: EventId(row.try_get(3).map_err(db)?),
        seller: text(4)?.parse().map_err(|e| corrupt("seller", e))?,
        buyer: text(5)?.parse().map_err(|e| corrupt("buyer", e))?,
        seller_order: text(6)?.parse().map_err(|e| corrupt("order id", e))?,
        charge: text(7)?.parse().map_err(|e| corrupt("charge", e))?,
        charge_ref: row.try_get(8).map_err(db)?,
        price: Money(row.try_get(9).map_err(db)?),
        currency: text(10)?,
        payout: Money(row.try_get(11).map_err(db)?),
        payment_method: text(12)?,
        state: SwapState::parse(&state).ok_or_else(|| corrupt("swap state", &state))?,
        created_at: Millis(row.try_get(14).map_err(db)?),
        updated_at: Millis(row.try_get(15).map_err(db)?),
    })
}

pub(crate) async fn read_listing(
    conn: &mut PgConnection,
    id: ListingId,
) -> Result<Option<Listing>, StoreError> {
    let row = sqlx::query(concat!(listing_sql!(), "WHERE l.id = $1"))
        .bind(id.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(listing_of).transpose()
}

pub(crate) async fn read_swap(
    conn: &mut PgConnection,
    id: SwapId,
) -> Result<Option<Swap>, StoreError> {
    let row = sqlx::query(concat!(swap_sql!(), "WHERE id = $1"))
        .bind(id.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(swap_of).transpose()
}

/// Locks the ticket and says whether `seller` still holds it at `v`, unscanned, paid.
async fn movable(
    conn: &mut PgConnection,
    id: TicketId,
    seller: BuyerId,
    v: u32,
) -> Answer<TicketFacts> {
    Ok(handover::movable(conn, id, seller, v)
        .await?
        .map_err(Into::into))
}

pub(crate) async fn list(conn: &mut PgConnection, l: &Listing) -> Answer<()> {
    if let Err(no) = movable(conn, l.ticket, l.seller, l.version).await? {
        return Ok(Err(no));
    }
    // Sold on once, its order's payment paid its seller back already: a second sale
    // would pay out of it again (and back to its first buyer, whoever holds it now).
    let sold_on: bool =
        sqlx::query_scalar("SELECT own_state IS NOT NULL FROM tickets WHERE id = $1")
            .bind(l.ticket.to_string())
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
    if sold_on {
        return Ok(Err(ListingRefusal::SoldOn));
    }
    let offered: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM ticket_transfers
         WHERE ticket_id = $1 AND state = 'offered' AND expires_at > $2)",
    )
    .bind(l.ticket.to_string())
    .bind(l.created_at.0)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    if offered {
        return Ok(Err(ListingRefusal::AlreadyListed));
    }
    let added = sqlx::query(
        "INSERT INTO exchange_listings (id, ticket_id, event_id, seat_id, seller, version,
             price, state, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', $8) ON CONFLICT DO NOTHING",
    )
    .bind(l.id.to_string())
    .bind(l.ticket.to_string())
    .bind(l.event.0)
    .bind(&l.seat)
    .bind(l.seller.to_string())
    .bind(version(l.version))
    .bind(l.price.0)
    .bind(l.created_at.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(if added.rows_affected() == 1 {
        Ok(())
    } else {
        Err(ListingRefusal::AlreadyListed)
    })
}

pub(crate) async fn withdraw(
    conn: &mut PgConnection,
    id: ListingId,
    by: BuyerId,
    now: Millis,
) -> Answer<Listing> {
    let Some(peek) = read_listing(conn, id).await?.filter(|l| l.seller == by) else {
        return Ok(Err(ListingRefusal::NotFound));
    };
    locked_ticket(conn, peek.ticket).await?;
    if !end_listing(conn, id, ListingState::Open, ListingState::Withdrawn, now).await? {
        let state = read_listing(conn, id)
            .await?
            .map_or(peek.state, |l| l.state);
        return Ok(Err(ListingRefusal::NotOpen(state)));
    }
    let ended = read_listing(conn, id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: withdrawn listing vanished"))?;
    Ok(Ok(ended))
}

async fn end_listing(
    conn: &mut PgConnection,
    id: ListingId,
    from: ListingState,
    to: ListingState,
    now: Millis,
) -> Result<bool, StoreError> {
    let ended = (to != ListingState::Open).then_some(now.0);
    let done = sqlx::query(
        "UPDATE exchange_listings SET state = $3, ended_at = $4 WHERE id = $1 AND state = $2",
    )
    .bind(id.to_string())
    .bind(from.as_str())
    .bind(to.as_str())
    .bind(ended)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

/// The buyer's tickets of the event, plus (with `in_flight`) their unfinished swaps.
async fn buyer_load(
    conn: &mut PgConnection,
    event: EventId,
    buyer: BuyerId,
    in_flight: bool,
) -> Result<u32, StoreError> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COALESCE((SELECT tickets FROM buyer_tickets WHERE event_id = $1 AND buyer_id = $2), 0)::BIGINT
              + CASE WHEN $3 THEN (SELECT count(*) FROM exchange_swaps WHERE event_id = $1
                     AND buyer = $2 AND state NOT IN ('done', 'undone')) ELSE 0 END",
    )
    .bind(event.0)
    .bind(buyer.to_string())
    .bind(in_flight)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) async fn reserve(conn: &mut PgConnection, r: &Reserve) -> Answer<()> {
    let s = &r.swap;
    let Some(peek) = read_listing(conn, s.listing).await? else {
        return Ok(Err(ListingRefusal::NotFound));
    };
    if peek.seller == s.buyer {
        return Ok(Err(ListingRefusal::OwnListing));
    }
    let ticket_ok = movable(conn, peek.ticket, peek.seller, peek.version).await?;
    let Some(l) = read_listing(conn, s.listing).await? else {
        return Ok(Err(ListingRefusal::NotFound));
    };
    if l.state != ListingState::Open {
        return Ok(Err(ListingRefusal::NotOpen(l.state)));
    }
    if let Err(no) = ticket_ok {
        return Ok(Err(no));
    }
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("exchange:{}:{}", l.event, s.buyer))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    if buyer_load(conn, l.event, s.buyer, true).await? >= r.max_per_buyer {
        return Ok(Err(ListingRefusal::LimitExceeded));
    }
    if !end_listing(
        conn,
        l.id,
        ListingState::Open,
        ListingState::Reserved,
        s.created_at,
    )
    .await?
    {
        return Ok(Err(ListingRefusal::NotOpen(l.state)));
    }
    sqlx::query(
        "INSERT INTO exchange_swaps (id, listing_id, ticket_id, event_id, seller, buyer,
             seller_order, charge, charge_ref, price, currency, payout, payment_method, state,
             created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, $10, $11, $12, 'reserved', $13, $13)",
    )
    .bind(s.id.to_string())
    .bind(l.id.to_string())
    .bind(l.ticket.to_string())
    .bind(l.event.0)
    .bind(l.seller.to_string())
    .bind(s.buyer.to_string())
    .bind(s.seller_order.to_string())
    .bind(s.charge.to_string())
    .bind(s.price.0)
    .bind(&s.currency)
    .bind(s.payout.0)
    .bind(&s.payment_method)
    .bind(s.created_at.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Ok(()))
}

pub(crate) async fn set_state(
    conn: &mut PgConnection,
    id: SwapId,
    from: SwapState,
    to: SwapState,
    charge_ref: Option<&str>,
    now: Millis,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE exchange_swaps SET state = $3, updated_at = $4,
             charge_ref = COALESCE($5, charge_ref)
         WHERE id = $1 AND state = $2",
    )
    .bind(id.to_string())
    .bind(from.as_str())
    .bind(to.as_str())
    .bind(now.0)
    .bind(charge_ref)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn advance(
    conn: &mut PgConnection,
    id: SwapId,
    from: SwapState,
    to: SwapState,
    charge_ref: Option<&str>,
    now: Millis,
) -> Result<bool, StoreError> {
    if !from.can_move_to(to) {
        return Err(StoreError::new(format_args!(
            "postgres: a swap cannot move from {} to {}",
            from.as_str(),
            to.as_str()
        )));
    }
    let moved = set_state(conn, id, from, to, charge_ref, now).await?;
    if moved && from == SwapState::Reserved && to == SwapState::Undone {
        let s = read_swap(conn, id)
            .await?
            .ok_or_else(|| StoreError::new("postgres: swap vanished"))?;
        end_listing(
            conn,
            s.listing,
            ListingState::Reserved,
            ListingState::Open,
            now,
        )
        .await?;
    }
    Ok(moved)
}

pub(crate) async fn move_ticket(
    conn: &mut PgConnection,
    id: SwapId,
    max: u32,
    now: Millis,
) -> Result<Moved, StoreError> {
    let peek = read_swap(conn, id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: no such swap"))?;
    let l = read_listing(conn, peek.listing)
        .await?
        .ok_or_else(|| StoreError::new("postgres: listing vanished"))?;
    let ticket_ok = movable(conn, peek.ticket, peek.seller, l.version).await?;
    let s = read_swap(conn, id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: swap vanished"))?;
    if s.state != SwapState::Charged {
        return Ok(Moved::NotCharged(s.state));
    }
    let refusal = match ticket_ok {
        Err(no) => Some(no),
        Ok(_) if buyer_load(conn, s.event, s.buyer, false).await? >= max => {
            Some(ListingRefusal::LimitExceeded)
        }
        Ok(_) => None,
    };
    if let Some(no) = refusal {
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
        )
        .await?;
        end_listing(conn, l.id, ListingState::Reserved, to, now).await?;
        return Ok(Moved::Refused(no));
    }
    hand_over(conn, &s, &l, max, now).await?;
    end_listing(conn, l.id, ListingState::Reserved, ListingState::Sold, now).await?;
    set_state(conn, id, SwapState::Charged, SwapState::Moved, None, now).await?;
    let ticket = locked_ticket(conn, s.ticket)
        .await?
        .ok_or_else(|| StoreError::new("postgres: exchanged ticket vanished"))?;
    Ok(Moved::Moved(ticket.ticket))
}

/// The ticket to the buyer at the next version, its sold seat, both counts (the
/// buyer's under the limit by the ledger's CHECK) and the `exchanged` history line.
async fn hand_over(
    conn: &mut PgConnection,
    s: &Swap,
    l: &Listing,
    max: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let handed = Handover {
        ticket: s.ticket,
        version: l.version,
        event: s.event,
        seat: &l.seat,
        order: s.seller_order,
        from: s.seller,
        to: s.buyer,
        now,
        stands_apart: true,
    };
    if !handover::hand_over(conn, &handed).await? {
        return Err(StoreError::new(
            "postgres: the exchanged ticket changed under its lock",
        ));
    }
    if !count_move(conn, s.event, s.seller, s.buyer, max).await? {
        return Err(StoreError::new(
            "postgres: the buyer's limit refused an exchange it was checked for",
        ));
    }
    let detail = serde_json::json!({
        "swap_id": s.id,
        "ticket_id": s.ticket,
        "seat_id": l.seat,
        "from_buyer_id": s.seller,
        "to_buyer_id": s.buyer,
        "version": l.version + 1,
        "price": s.price,
        "payout": s.payout,
    });
    history_line(conn, s.seller_order, OrderEvent::EXCHANGED, &detail, now).await
}

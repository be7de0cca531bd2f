//! What the scripts answer, turned into the ports' types. A script replies
//! `['ok', ...]` or `[code, detail?]`; a hold record is the text
//! `state|expires_at|buyer|order|seat,seat|price,price` (see `lua/common.lua`).

use boxoffice_domain::possession::Thumbprint;
use boxoffice_domain::{EventId, HoldId, HoldState, Millis, Money, OrderId, SeatIndex};
use boxoffice_engine::ports::{ArbiterError, Expired, HoldView, StoreError};

use crate::hold_states;

/// A script reply: bulk strings.
pub(crate) type Reply = Vec<Vec<u8>>;

fn text(b: &[u8]) -> Result<&str, StoreError> {
    std::str::from_utf8(b).map_err(|_| StoreError("Redis replied with non-UTF-8 text".into()))
}

fn bad(what: &str, raw: &str) -> StoreError {
    StoreError(format!("unreadable {what} in Redis: {raw:?}"))
}

fn num<T: std::str::FromStr>(what: &str, raw: &str) -> Result<T, StoreError> {
    raw.parse().map_err(|_| bad(what, raw))
}

/// The payload of an `ok` reply, or the arbiter error the script named.
pub(crate) fn ok_or_arbiter_error(reply: Reply) -> Result<Vec<Vec<u8>>, ArbiterError> {
    let mut parts = reply.into_iter();
    let code = parts.next().unwrap_or_default();
    let detail = parts.next().unwrap_or_default();
    let seat = || num::<SeatIndex>("seat", text(&detail)?);
    Err(match text(&code)? {
        "ok" => return Ok(std::iter::once(detail).chain(parts).collect()),
        "unknown_event" => ArbiterError::UnknownEvent,
        "unknown_hold" => ArbiterError::UnknownHold,
        "seat_unavailable" => ArbiterError::SeatUnavailable(seat()?),
        "no_such_seat" => ArbiterError::NoSuchSeat(seat()?),
        "no_such_section" => ArbiterError::NoSuchSection,
        "sold_out" => ArbiterError::SoldOut,
        "limit_exceeded" => ArbiterError::LimitExceeded {
            limit: num("limit", text(&detail)?)?,
        },
        "expired" => ArbiterError::Expired,
        "wrong_state" => ArbiterError::WrongState(state(text(&detail)?)?),
        "bad_quantity" => ArbiterError::BadQuantity,
        other => return Err(bad("script reply", other).into()),
    })
}

fn state(code: &str) -> Result<HoldState, StoreError> {
    hold_states::from_code(code).ok_or_else(|| bad("hold state", code))
}

fn list<T: std::str::FromStr>(what: &str, raw: &str) -> Result<Vec<T>, StoreError> {
    raw.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| num(what, s))
        .collect()
}

/// A hold record as a `HoldView`.
pub(crate) fn hold_view(hold: HoldId, raw: &[u8]) -> Result<HoldView, StoreError> {
    let raw = text(raw)?;
    let f: Vec<&str> = raw.split('|').collect();
    // A hold bound to a proof-of-possession key has its thumbprint last.
    let (st, expires, buyer, order, seats, prices, key) = match f.as_slice() {
        [st, x, b, o, seats, prices] => (st, x, b, o, seats, prices, None),
        [st, x, b, o, seats, prices, k] => (st, x, b, o, seats, prices, Some(*k)),
        _ => return Err(bad("hold record", raw)),
    };
    let order = match *order {
        "-" => None,
        o => Some(o.parse::<OrderId>().map_err(|_| bad("order id", o))?),
    };
    Ok(HoldView {
        hold,
        buyer: buyer.parse().map_err(|_| bad("buyer id", buyer))?,
        seats: list("seats", seats)?,
        prices: list::<i64>("prices", prices)?
            .into_iter()
            .map(Money)
            .collect(),
        state: state(st)?,
        expires_at: Millis(num("deadline", expires)?),
        order,
        key: key.map(|k| Thumbprint(k.to_string())),
    })
}

/// An expiry report `nonce|record` of `event`.
pub(crate) fn expired(event: EventId, raw: &[u8]) -> Result<Expired, StoreError> {
    let s = text(raw)?;
    let (nonce, rec) = s.split_once('|').ok_or_else(|| bad("expiry", s))?;
    let nonce = u128::from_str_radix(nonce, 16).map_err(|_| bad("hold id", nonce))?;
    let view = hold_view(HoldId { event, nonce }, rec.as_bytes())?;
    Ok(Expired {
        hold: view.hold,
        buyer: view.buyer,
        seats: view.seats,
        order: view.order,
    })
}

/// A single-value `ok` payload as a hold.
pub(crate) fn one_hold(hold: HoldId, payload: Vec<Vec<u8>>) -> Result<HoldView, ArbiterError> {
    let rec = payload.into_iter().next().unwrap_or_default();
    Ok(hold_view(hold, &rec)?)
}

/// Indices of the set bits of an MSB-first bitmap.
pub(crate) fn set_bits(bitmap: &[u8]) -> Vec<SeatIndex> {
    bitmap
        .iter()
        .enumerate()
        .flat_map(|(i, &byte)| {
            (0..8u32)
                .filter(move |b| byte & (0x80 >> b) != 0)
                .map(move |b| i as u32 * 8 + b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_its_hold() {
        let hold = HoldId::random(EventId(7));
        let buyer = boxoffice_domain::BuyerId::random();
        let rec = format!("C|1700000010000|{buyer}|-|2,3|9000,4000");
        let v = hold_view(hold, rec.as_bytes()).expect("parse");
        assert_eq!(
            (v.state, v.seats, v.prices, v.expires_at, v.order),
            (
                HoldState::CheckingOut,
                vec![2, 3],
                vec![Money(9000), Money(4000)],
                Millis(1_700_000_010_000),
                None
            )
        );
    }

    #[test]
    fn bitmaps_decode_most_significant_bit_first() {
        assert_eq!(set_bits(&[0x80, 0x01]), vec![0, 15]);
    }
}

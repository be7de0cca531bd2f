//! Identifiers. Each is a newtype so a buyer id can never be passed where an order id
//! is expected; each parses from its public text form exactly once, at the edge.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use uuid::Uuid;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a valid {0} id")]
pub struct BadId(pub &'static str);

/// Event id, a positive integer numbered by the ledger.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(transparent)]
#[schema(minimum = 1)]
pub struct EventId(pub i64);

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for EventId {
    type Err = BadId;
    fn from_str(s: &str) -> Result<Self, BadId> {
        match s.parse::<i64>() {
            Ok(n) if n > 0 && !s.starts_with('+') => Ok(EventId(n)),
            _ => Err(BadId("event")),
        }
    }
}

/// A seat's position in its event's seat list: the arbiter's and the bitmap's index.
pub type SeatIndex = u32;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(
            Clone,
            Copy,
            Debug,
            PartialEq,
            Eq,
            PartialOrd,
            Ord,
            Hash,
            Serialize,
            Deserialize,
            ToSchema,
        )]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            pub fn random() -> Self {
                $name(Uuid::now_v7())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl FromStr for $name {
            type Err = BadId;
            fn from_str(s: &str) -> Result<Self, BadId> {
                Uuid::try_parse(s).map($name).map_err(|_| BadId($what))
            }
        }
    };
}

uuid_id!(
    /// A buyer.
    BuyerId,
    "buyer"
);
uuid_id!(
    /// An order.
    OrderId,
    "order"
);
uuid_id!(
    /// A gate device of an event.
    GateId,
    "gate"
);
uuid_id!(
    /// A ticket transfer: one holder's offer to another buyer.
    TransferId,
    "transfer"
);
uuid_id!(
    /// A listing on the face-value exchange: one holder's ticket on offer to anyone.
    ListingId,
    "listing"
);
uuid_id!(
    /// A swap on the exchange: one buyer taking one listing, money and ticket.
    SwapId,
    "swap"
);

/// A hold. It carries its event so that every store can find the hold's home (one
/// Redis slot per event) from the id alone. Text form: `<event>-<32 hex digits>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HoldId {
    pub event: EventId,
    pub nonce: u128,
}

impl HoldId {
    pub fn random(event: EventId) -> Self {
        HoldId {
            event,
            nonce: Uuid::new_v4().as_u128(),
        }
    }
}

impl HoldId {
    /// The text form, written into a buffer on the stack: every hold answer carries
    /// one, and the formatter's machinery costs several times the writing itself.
    pub fn text(&self) -> HoldIdText {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [0u8; HOLD_ID_MAX];
        let mut at = HOLD_ID_MAX;
        let mut nonce = self.nonce;
        for _ in 0..32 {
            at -= 1;
            buf[at] = HEX[(nonce & 0xf) as usize];
            nonce >>= 4;
        }
        at -= 1;
        buf[at] = b'-';
        let mut event = self.event.0.unsigned_abs();
        loop {
            at -= 1;
            buf[at] = b'0' + (event % 10) as u8;
            event /= 10;
            if event == 0 {
                break;
            }
        }
        if self.event.0 < 0 {
            at -= 1;
            buf[at] = b'-';
        }
        HoldIdText { buf, start: at }
    }
}

/// The longest hold id: a sign and 19 digits, `-`, 32 hex digits.
const HOLD_ID_MAX: usize = 20 + 1 + 32;

/// A hold id's text form (`HoldId::text`).
pub struct HoldIdText {
    buf: [u8; HOLD_ID_MAX],
    start: usize,
}

impl HoldIdText {
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and '-' are written.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The text's bytes (ASCII), for a writer of bytes: `as_str` without checking them
    /// again.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

impl fmt::Display for HoldId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

impl FromStr for HoldId {
    type Err = BadId;
    fn from_str(s: &str) -> Result<Self, BadId> {
        let (event, nonce) = s.split_once('-').ok_or(BadId("hold"))?;
        let event = event.parse::<EventId>().map_err(|_| BadId("hold"))?;
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BadId("hold"));
        }
        let nonce = u128::from_str_radix(nonce, 16).map_err(|_| BadId("hold"))?;
        Ok(HoldId { event, nonce })
    }
}

/// In the API a hold id is its text form.
impl utoipa::PartialSchema for HoldId {
    fn schema() -> RefOr<Schema> {
        let about = "`<event_id>-<32 hex digits>`; the hold's event is part of its id.";
        (ObjectBuilder::new().schema_type(Type::String))
            .pattern(Some("^[1-9][0-9]*-[0-9a-fA-F]{32}$"))
            .description(Some(about))
            .examples(["42-0f9c2b7e4a1d4c3b9e8f7a6b5c4d3e2f"])
            .into()
    }
}

impl ToSchema for HoldId {}

impl Serialize for HoldId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text().as_str())
    }
}

impl<'de> Deserialize<'de> for HoldId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_id_round_trips_through_its_text_form() {
        let id = HoldId::random(EventId(42));
        assert_eq!(id.to_string().parse::<HoldId>(), Ok(id));
    }

    #[test]
    fn a_hold_ids_text_is_the_event_a_dash_and_32_hex_digits() {
        for (event, nonce) in [
            (42, 0x0f9c_2b7e_4a1d_4c3b_9e8f_7a6b_5c4d_3e2f),
            (1, 0),
            (i64::MAX, u128::MAX),
            (i64::MIN, 1),
            (0, 0xabc),
        ] {
            let id = HoldId {
                event: EventId(event),
                nonce,
            };
            let expected = format!("{event}-{nonce:032x}");
            assert_eq!(id.to_string(), expected);
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{expected}\""));
        }
    }

    #[test]
    fn malformed_ids_are_rejected() {
        for bad in ["", "0", "-1", "+3", "abc", "9999999999999999999999"] {
            assert!(bad.parse::<EventId>().is_err(), "{bad}");
        }
        for bad in ["1", "1-xyz", "x-0000000000000000000000000000000a", "1-00"] {
            assert!(bad.parse::<HoldId>().is_err(), "{bad}");
        }
    }
}

//! A ticket: which seat of which event it admits, who holds it, and its version. The
//! version is what makes an old barcode worthless: a transfer or a change of the
//! attendee's name issues the next version, and the previous one is revoked.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::ids::{BadId, BuyerId, EventId, OrderId};

/// Longest seat label a ticket carries (catalog labels are at most 60 characters).
pub const MAX_SEAT_LABEL: usize = 64;
/// Longest attendee name, in UTF-8 bytes: it travels inside the barcode.
pub const MAX_ATTENDEE_NAME: usize = 64;

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum TicketError {
    #[error("a seat label is 1-{MAX_SEAT_LABEL} visible ASCII characters")]
    BadSeatLabel,
    #[error(
        "an attendee name is 1-{MAX_ATTENDEE_NAME} bytes of letters, spaces and the marks ' - . ,"
    )]
    BadAttendeeName,
    #[error("the ticket has reached its last version")]
    VersionExhausted,
    #[error("the ticket belongs to another event than these keys")]
    WrongEvent,
}

/// A ticket's id: derived from its order and seat, stable across versions, transfers
/// and renames.
///
/// It is derived, not drawn: the first 128 bits of SHA-256 over the order and the seat,
/// stamped as a version 8 UUID. The ledger's sold row (order, seat) therefore names
/// its ticket by itself: issuing a barcode again after a retry or a crash yields the
/// same id with nothing more stored, and a seat sold again after a refund (a new
/// order) gets a new one. The hash keeps the order id, which opens the buyer's order,
/// off a barcode that door staff and photographs see.
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
    utoipa::ToSchema,
)]
#[serde(transparent)]
pub struct TicketId(pub Uuid);

impl TicketId {
    pub fn for_seat(order: OrderId, seat: &SeatLabel) -> TicketId {
        let digest = Sha256::new()
            .chain_update(b"boxoffice/ticket-id\0")
            .chain_update(order.0.as_bytes())
            .chain_update(seat.as_str().as_bytes())
            .finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        TicketId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
    }
}

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for TicketId {
    type Err = BadId;
    fn from_str(s: &str) -> Result<Self, BadId> {
        Uuid::try_parse(s)
            .map(TicketId)
            .map_err(|_| BadId("ticket"))
    }
}

/// A seat's (or general-admission unit's) public label, as the catalog lays it out.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SeatLabel(String);

impl SeatLabel {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SeatLabel {
    type Error = TicketError;
    fn try_from(s: String) -> Result<Self, TicketError> {
        let ok =
            !s.is_empty() && s.len() <= MAX_SEAT_LABEL && s.bytes().all(|b| b.is_ascii_graphic());
        ok.then_some(SeatLabel(s)).ok_or(TicketError::BadSeatLabel)
    }
}

impl From<SeatLabel> for String {
    fn from(s: SeatLabel) -> String {
        s.0
    }
}

/// The name printed on a ticket, for events that admit named attendees only.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AttendeeName(String);

impl AttendeeName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name as a buyer typed it: trimmed, each run of white space made one space,
    /// then held to the rules of `try_from`.
    pub fn parse(raw: &str) -> Result<AttendeeName, TicketError> {
        let words: Vec<&str> = raw.split_whitespace().collect();
        AttendeeName::try_from(words.join(" "))
    }
}

/// What a name may be made of: letters of any script (with their combining marks),
/// single spaces between words, and the apostrophes, hyphens, full stops and commas
/// names are written with. No digits, symbols or control characters: a gate shows the
/// name to door staff, who compare it with an identity document.
fn is_name_char(c: char) -> bool {
    c.is_alphabetic()
        || matches!(
            c,
            ' ' | '\'' | '\u{2019}' | '\u{02bc}' | '-' | '\u{2010}' | '.' | ','
        )
        || matches!(
            c,
            '\u{0300}'..='\u{036f}'
                | '\u{1ab0}'..='\u{1aff}'
                | '\u{1dc0}'..='\u{1dff}'
                | '\u{20d0}'..='\u{20ff}'
                | '\u{fe20}'..='\u{fe2f}'
        )
}

impl TryFrom<String> for AttendeeName {
    type Error = TicketError;
    /// Only a name in its one canonical form (as `parse` makes it) passes, so a name
    /// has exactly one encoding in a barcode.
    fn try_from(s: String) -> Result<Self, TicketError> {
        let ok = s.len() <= MAX_ATTENDEE_NAME
            && s.chars().any(char::is_alphabetic)
            && s.chars().all(is_name_char)
            && !s.starts_with(' ')
            && !s.ends_with(' ')
            && !s.contains("  ");
        ok.then_some(AttendeeName(s))
            .ok_or(TicketError::BadAttendeeName)
    }
}

impl From<AttendeeName> for String {
    fn from(s: AttendeeName) -> String {
        s.0
    }
}

/// One version of a ticket. Versions start at 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub id: TicketId,
    pub event: EventId,
    pub seat: SeatLabel,
    pub holder: BuyerId,
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attendee: Option<AttendeeName>,
}

impl Ticket {
    /// The first version of the ticket for `seat`, sold to `holder` in `order`.
    pub fn issue(order: OrderId, event: EventId, seat: SeatLabel, holder: BuyerId) -> Ticket {
        Ticket {
            id: TicketId::for_seat(order, &seat),
            event,
            seat,
            holder,
            version: 1,
            attendee: None,
        }
    }

    /// The next version, held by `to`; the name on the ticket is the new holder's to
    /// give.
    pub fn transferred_to(&self, to: BuyerId) -> Result<Ticket, TicketError> {
        Ok(Ticket {
            holder: to,
            attendee: None,
            ..self.next()?
        })
    }

    /// The next version, with `attendee` printed on it (or no name).
    pub fn named(&self, attendee: Option<AttendeeName>) -> Result<Ticket, TicketError> {
        Ok(Ticket {
            attendee,
            ..self.next()?
        })
    }

    fn next(&self) -> Result<Ticket, TicketError> {
        let version = self
            .version
            .checked_add(1)
            .ok_or(TicketError::VersionExhausted)?;
        Ok(Ticket {
            version,
            ..self.clone()
        })
    }
}

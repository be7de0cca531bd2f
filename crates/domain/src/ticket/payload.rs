//! The barcode's bytes, version 1. Integers are unsigned LEB128 (7 bits a byte, least
//! significant first) in their shortest form, so every barcode has exactly one
//! encoding:
//!
//! | field | bytes |
//! |---|---|
//! | format version (1) | 1 |
//! | flags: bit 0 attendee name, bit 1 rotating code; others 0 | 1 |
//! | event id (LEB128, > 0) | 1-9 |
//! | ticket id (UUID) | 16 |
//! | ticket version (LEB128 u32) | 1-5 |
//! | key id (LEB128 u32) | 1-5 |
//! | issued at, seconds since the epoch (LEB128) | 1-9 |
//! | if named: length (1-64), then the name in UTF-8 | 2-65 |
//! | Ed25519 signature over `"boxoffice/barcode\0"` and every byte above | 64 |
//! | if rotating: the time-step code | 4 |
//!
//! The rotating flag is signed, so a copy cannot drop the code to pass as a static
//! barcode.

use super::identity::{AttendeeName, MAX_ATTENDEE_NAME, TicketId};
use super::keys::KeyId;
use super::rotating::CODE_LEN;
use crate::ids::EventId;

pub(super) const FORMAT: u8 = 1;
const NAMED: u8 = 1;
const ROTATING: u8 = 2;
pub(super) const SIGNATURE_LEN: usize = 64;
/// What the signature covers besides the bytes: a signature made for anything else
/// with the same key can never pass for a barcode's.
pub(super) const CONTEXT: &[u8] = b"boxoffice/barcode\0";
/// The longest barcode: every field at its widest.
pub(super) const MAX_LEN: usize =
    2 + 9 + 16 + 5 + 5 + 9 + 1 + MAX_ATTENDEE_NAME + SIGNATURE_LEN + CODE_LEN;

/// The signed fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fields {
    pub event: EventId,
    pub ticket: TicketId,
    pub version: u32,
    pub key: KeyId,
    pub issued_at_secs: u64,
    pub attendee: Option<AttendeeName>,
    pub rotating: bool,
}

/// A barcode taken apart; nothing checked but its form.
pub(super) struct Parsed<'a> {
    pub fields: Fields,
    /// The bytes the signature covers (after the context).
    pub signed: &'a [u8],
    pub signature: [u8; SIGNATURE_LEN],
    pub code: Option<[u8; CODE_LEN]>,
}

/// The signed bytes of `fields`, without the signature.
pub(super) fn encode(f: &Fields) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAX_LEN);
    let flags =
        if f.attendee.is_some() { NAMED } else { 0 } | if f.rotating { ROTATING } else { 0 };
    out.extend_from_slice(&[FORMAT, flags]);
    // Event ids are positive (`EventKeys` refuses others).
    put_varint(&mut out, f.event.0.unsigned_abs());
    out.extend_from_slice(f.ticket.0.as_bytes());
    put_varint(&mut out, u64::from(f.version));
    put_varint(&mut out, u64::from(f.key.0));
    put_varint(&mut out, f.issued_at_secs);
    if let Some(name) = &f.attendee {
        // At most `MAX_ATTENDEE_NAME` (64) bytes, as `AttendeeName` guarantees.
        out.push(name.as_str().len() as u8);
        out.extend_from_slice(name.as_str().as_bytes());
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Takes a barcode apart. `None` for anything not exactly of the form above.
pub(super) fn parse(bytes: &[u8]) -> Option<Parsed<'_>> {
    if bytes.len() > MAX_LEN {
        return None;
    }
    let mut r = Reader { bytes, at: 0 };
    let [format, flags] = r.array()?;
    if format != FORMAT || flags & !(NAMED | ROTATING) != 0 {
        return None;
    }
    let fields = Fields {
        event: EventId(i64::try_from(r.varint()?).ok().filter(|&e| e > 0)?),
        ticket: TicketId(uuid::Uuid::from_bytes(r.array()?)),
        version: u32::try_from(r.varint()?).ok()?,
        key: KeyId(u32::try_from(r.varint()?).ok()?),
        issued_at_secs: r.varint().filter(|&s| s <= MAX_SECS)?,
        attendee: if flags & NAMED != 0 {
            Some(r.name()?)
        } else {
            None
        },
        rotating: flags & ROTATING != 0,
    };
    let signed = &bytes[..r.at];
    let signature = r.array()?;
    let code = if fields.rotating {
        Some(r.array()?)
    } else {
        None
    };
    (r.at == bytes.len()).then_some(Parsed {
        fields,
        signed,
        signature,
        code,
    })
}

/// Latest issue time a `Millis` can express.
const MAX_SECS: u64 = (i64::MAX / 1000) as u64;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Some(out)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// A shortest-form LEB128 integer of at most 64 bits.
    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for i in 0..10 {
            let [b] = self.array()?;
            // The tenth byte holds the 64th bit alone.
            if i == 9 && b > 1 {
                return None;
            }
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                // A zero last byte after others is a longer form of a shorter number.
                return (b != 0 || i == 0).then_some(n);
            }
        }
        None
    }

    fn name(&mut self) -> Option<AttendeeName> {
        let [len] = self.array()?;
        let len = usize::from(len);
        if len == 0 || len > MAX_ATTENDEE_NAME {
            return None;
        }
        let name = std::str::from_utf8(self.take(len)?).ok()?;
        AttendeeName::try_from(name.to_owned()).ok()
    }
}

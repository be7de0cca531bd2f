//! Tickets a door can trust: a ticket's identity and version, its barcode signed with
//! the event's Ed25519 key, the keys a gate verifies with, and the gate's verdict.
//!
//! # The barcode
//!
//! A compact binary record (the layout is in `payload.rs`): format version, flags,
//! event id, ticket id, ticket version, key id, issue time in seconds and, for named
//! tickets, the attendee's name, followed by an Ed25519 signature (64 bytes) and, for
//! rotating barcodes, a 4-byte time-step code. A typical ticket (event 1234, version
//! 1, no name) is 91 bytes; rotating, 95; a 20-byte name adds 21; no barcode exceeds
//! 179 bytes (`MAX_BARCODE_TEXT`, 269 characters, is the most a gate reads).
//!
//! The bytes are written in base45 (RFC 9285), which uses only the QR code's
//! alphanumeric characters (5.5 bits each): 91 bytes become 137 characters, which fit
//! a version 6 QR code at error-correction level M (154 alphanumeric characters), as
//! small as the raw bytes in byte mode would need, while staying text. Base64url in
//! byte mode takes 122 characters and a version 7 code. Base32 in alphanumeric mode
//! (146 characters) also fits version 6 for a typical ticket but falls a version behind
//! for a named one (20-byte name: 180 characters and version 8, base45 168 and 7).
//!
//! # Keys
//!
//! Each event has its own keys (`EventKeys`), numbered; the barcode names the key that
//! signed it. Rotating a key keeps the old one in the public set, so barcodes already
//! issued still pass, until it is retired; then they are refused (`UnknownKey`).
//! Gates download the public set (`PublicKeys`, a JSON Web Key Set) and the revoked
//! versions (`Revocations`) together as a `GateBundle`, and verify with no network.
//!
//! # What each adversary can do
//!
//! - A forger without the event's signing key cannot make or alter a barcode: every
//!   field and the rotating flag are signed, a barcode can only name a key of the
//!   event's own set, and each event has its own keys, so a genuine barcode of one
//!   event is refused at another's gate. They can copy a genuine barcode. Whoever
//!   steals a signing key can forge until it is retired (rotate, retire, reissue).
//! - A copy (a screenshot, a photograph, a forwarded file) of a static barcode passes
//!   the signature check exactly like the original: only check-in, which admits a
//!   ticket once, stops the second person at the door. A copy of a rotating barcode
//!   stops passing within 30 seconds (a gate accepts the code of its own 15-second
//!   step and of one step either side); a live relay of the holder's screen is not
//!   stopped by rotation, again only by check-in.
//! - An old ticket (the version before a transfer, a rename or a refund) still carries
//!   a valid signature; it is refused because its version is on the revocation list.
//!   A gate whose bundle predates the revocation admits it, which is why the bundle
//!   says when it was generated.
//!
//! # Rotating codes: what the gate knows
//!
//! The code is an HMAC of the time step under a per-ticket secret, derived from a
//! per-event rotation secret (`rotating.rs`). The gate bundle carries the event's
//! rotation secret and the gate derives each ticket's secret itself. Carrying every
//! ticket's secret instead would grow the bundle with the sale (about 50 bytes a
//! ticket), would refuse at an offline gate every ticket issued or transferred after
//! the download, and would give a stolen gate the same power. Signing each code with
//! a per-ticket Ed25519 key held by the holder's device would put no secret at the
//! gate, but adds a 32-byte public key to the signed part and a 64-byte signature to
//! every code: about 190 bytes, a version 10 QR code instead of 6, and two signature
//! checks per scan. The cost of the choice: whoever steals a gate's bundle can make
//! codes for any barcode of the event they hold a copy of, which undoes rotation (not
//! the signature) until the event's rotation secret is replaced and barcodes reissued.

mod base45;
mod bundle;
mod identity;
mod jwk;
mod keys;
mod payload;
mod rotating;
mod verify;

#[cfg(test)]
mod tests;

use serde::Serialize;

pub use bundle::{GateBundle, MAX_BUNDLE_BYTES, require_name};
pub use identity::{
    AttendeeName, MAX_ATTENDEE_NAME, MAX_SEAT_LABEL, SeatLabel, Ticket, TicketError, TicketId,
};
pub use keys::{EventKeys, KeyId, MAX_KEYS, PublicKeys};
pub use rotating::{CODE_LEN, RotationSecret, STEP_MS, TicketSecret};
pub use verify::{MAX_REVOCATIONS, Revocations, VerifiedTicket, verify};

use crate::time::Millis;

/// Longest barcode text a gate reads, in characters.
pub const MAX_BARCODE_TEXT: usize = base45::encoded_len(payload::MAX_LEN);

/// Why a gate refuses a barcode; the code (`snake_case`) is what a gate shows or
/// reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BarcodeRefusal {
    #[error("this is not a ticket barcode")]
    Malformed,
    #[error("this ticket is for another event")]
    WrongEvent,
    #[error("the ticket was signed with a key that is not (or no longer) accepted")]
    UnknownKey,
    #[error("the ticket's signature does not verify")]
    BadSignature,
    #[error("this version of the ticket was replaced or cancelled")]
    Revoked,
    #[error("this event's tickets carry a rotating code and this one has none")]
    CodeMissing,
    #[error("the ticket carries a rotating code and this gate has no secret to check it")]
    CannotCheckCode,
    #[error("the rotating code is not valid yet: the phone's clock is ahead")]
    CodeNotYetValid,
    #[error("the rotating code has expired: a copy, or the phone's clock is behind")]
    CodeExpired,
    #[error("this event admits named attendees only and this ticket carries no name yet")]
    NameMissing,
    /// Only from a gate bundle: the ticket was admitted before the bundle was made.
    #[error("this ticket was already admitted at a gate")]
    AlreadyAdmitted,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("event ids are positive")]
    BadEvent,
    #[error("not an Ed25519 signing key in the expected form")]
    BadKey,
    #[error("an event's key set holds 1 to {MAX_KEYS} keys")]
    TooManyKeys,
    #[error("a key id is used twice")]
    DuplicateKeyId,
    #[error("the current key cannot be retired; rotate first")]
    CurrentKey,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("a gate bundle is at most {MAX_BUNDLE_BYTES} bytes")]
    TooLarge,
    #[error("not a gate bundle: {0}")]
    Invalid(String),
}

/// What a holder's device shows for a rotating barcode at `now`: the signed part as
/// the server gave it (`barcode`, base45) with the code of the moment appended, made
/// with the ticket's secret. `None` when `barcode` is not base45.
pub fn rotating_text(barcode: &str, secret: &TicketSecret, now: Millis) -> Option<String> {
    let mut bytes = base45::decode(barcode)?;
    bytes.extend_from_slice(&secret.code_at(now));
    Some(base45::encode(&bytes))
}

/// A signed barcode as issued: the signed bytes, to which a rotating barcode's
/// holder appends the code of the moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barcode {
    signed: Vec<u8>,
    rotating: bool,
}

impl Barcode {
    fn signed(signed: Vec<u8>, rotating: bool) -> Barcode {
        Barcode { signed, rotating }
    }

    /// The signed bytes, without any code.
    pub fn as_bytes(&self) -> &[u8] {
        &self.signed
    }

    pub fn is_rotating(&self) -> bool {
        self.rotating
    }

    /// The QR code's text for a static barcode; for a rotating one, the part the
    /// holder's device appends codes to (base45 of the signed bytes).
    pub fn text(&self) -> String {
        base45::encode(&self.signed)
    }

    /// The QR code's text to show at `now`: a rotating barcode with the code of that
    /// step, a static one as it is.
    pub fn text_at(&self, secret: &TicketSecret, now: Millis) -> String {
        if !self.rotating {
            return self.text();
        }
        let mut bytes = self.signed.clone();
        bytes.extend_from_slice(&secret.code_at(now));
        base45::encode(&bytes)
    }
}

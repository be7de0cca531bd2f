//! Rotating codes: a time-step code (RFC 6238 style, 15-second steps) appended to the
//! signed barcode, so a screenshot stops working within two steps.
//!
//! Each ticket version has its own secret, `HMAC-SHA256(event rotation secret,
//! "boxoffice/ticket-secret\0" ‖ event id ‖ ticket id ‖ version)`, given to its holder
//! alone; the code for step `T = floor(unix ms / 15,000)` is the first four bytes of
//! `HMAC-SHA256(ticket secret, T as 8 bytes big-endian)`. A transfer changes the
//! version and with it the secret: the previous holder cannot make codes for the new
//! barcode.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::BarcodeRefusal;
use super::identity::TicketId;
use crate::ids::EventId;
use crate::time::Millis;

type HmacSha256 = Hmac<Sha256>;

/// Length of a time step.
pub const STEP_MS: i64 = 15_000;
/// Bytes of a code: 32 bits, so a guess at the door succeeds once in 1.4 billion
/// (three steps accepted); a QR code carries bytes, so no decimal truncation.
pub const CODE_LEN: usize = 4;
/// Steps either side of the gate's own that it accepts: clocks drift and a scan takes
/// time.
const TOLERANCE: i64 = 1;
/// Steps ahead that a refused code is recognised in, to tell a phone whose clock runs
/// ahead from an old screenshot.
const LOOKAHEAD: i64 = 20;

fn mac(key: &[u8; 32]) -> HmacSha256 {
    // HMAC pads a key shorter than SHA-256's 64-byte block with zeros (RFC 2104): padding
    // it here changes nothing and needs no fallible constructor.
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    <HmacSha256 as KeyInit>::new(&block.into())
}

/// An event's rotation secret, from which every ticket secret is derived. The server
/// and the event's gates hold it; holders never see it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RotationSecret([u8; 32]);

impl RotationSecret {
    /// 32 random bytes from the caller's generator.
    pub fn from_bytes(bytes: [u8; 32]) -> RotationSecret {
        RotationSecret(bytes)
    }

    pub fn ticket_secret(&self, event: EventId, ticket: TicketId, version: u32) -> TicketSecret {
        let mut m = mac(&self.0);
        m.update(b"boxoffice/ticket-secret\0");
        m.update(&event.0.to_be_bytes());
        m.update(ticket.0.as_bytes());
        m.update(&version.to_be_bytes());
        TicketSecret(m.finalize().into_bytes().into())
    }
}

impl std::fmt::Debug for RotationSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RotationSecret(..)")
    }
}

impl TryFrom<String> for RotationSecret {
    type Error = &'static str;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        let mut out = [0u8; 32];
        match B64.decode_slice(&s, &mut out) {
            Ok(32) if s.len() == 43 => Ok(RotationSecret(out)),
            _ => Err("a rotation secret is 32 bytes in unpadded base64url"),
        }
    }
}

impl From<RotationSecret> for String {
    fn from(s: RotationSecret) -> String {
        B64.encode(s.0)
    }
}

/// One ticket version's secret: its holder's device makes the codes with it.
#[derive(Clone, PartialEq, Eq)]
pub struct TicketSecret([u8; 32]);

impl TicketSecret {
    /// The secret as the holder's device receives it (unpadded base64url).
    pub fn to_base64(&self) -> String {
        B64.encode(self.0)
    }

    /// The secret as its holder's device received it; `None` if it is not one.
    pub fn from_base64(text: &str) -> Option<TicketSecret> {
        let mut out = [0u8; 32];
        match B64.decode_slice(text, &mut out) {
            Ok(32) if text.len() == 43 => Some(TicketSecret(out)),
            _ => None,
        }
    }

    /// The code for the step containing `now`.
    pub fn code_at(&self, now: Millis) -> [u8; CODE_LEN] {
        let full = self.step_mac(step(now)).finalize().into_bytes();
        let mut code = [0u8; CODE_LEN];
        code.copy_from_slice(&full[..CODE_LEN]);
        code
    }

    fn step_mac(&self, step: i64) -> HmacSha256 {
        let mut m = mac(&self.0);
        m.update(&step.to_be_bytes());
        m
    }

    fn matches(&self, code: &[u8; CODE_LEN], step: i64) -> bool {
        // Constant time: a near miss tells a guesser nothing.
        self.step_mac(step).verify_truncated_left(code).is_ok()
    }

    /// Accepts the code of the gate's step or one either side.
    pub(super) fn check(&self, code: &[u8; CODE_LEN], now: Millis) -> Result<(), BarcodeRefusal> {
        let at = step(now);
        if (-TOLERANCE..=TOLERANCE).any(|d| self.matches(code, at + d)) {
            return Ok(());
        }
        if (TOLERANCE + 1..=LOOKAHEAD).any(|d| self.matches(code, at + d)) {
            return Err(BarcodeRefusal::CodeNotYetValid);
        }
        Err(BarcodeRefusal::CodeExpired)
    }
}

impl std::fmt::Debug for TicketSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TicketSecret(..)")
    }
}

fn step(now: Millis) -> i64 {
    now.0.div_euclid(STEP_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padded_key_gives_the_same_mac_as_the_key_itself() {
        let key = [7u8; 32];
        let mut padded = mac(&key);
        let mut plain = <HmacSha256 as Mac>::new_from_slice(&key).unwrap();
        padded.update(b"step");
        plain.update(b"step");
        assert_eq!(
            padded.finalize().into_bytes(),
            plain.finalize().into_bytes()
        );
    }
}

//! What a gate decides from a barcode alone: whether it was signed by the event's key,
//! is the ticket's live version and, for a rotating barcode, shows the code of the
//! moment. Whether the ticket was already scanned is the check-in's business.

use std::collections::HashMap;

use ed25519_dalek::Signature;
use serde::{Deserialize, Serialize};

use super::BarcodeRefusal;
use super::base45;
use super::identity::{AttendeeName, TicketId};
use super::keys::{KeyId, PublicKeys};
use super::payload::{self, CONTEXT, Fields, MAX_LEN, Parsed};
use super::rotating::RotationSecret;
use crate::ids::EventId;
use crate::time::Millis;

/// Most tickets a revocation list names: one entry per ticket ever transferred,
/// renamed or refunded, so several times a stadium's capacity.
pub const MAX_REVOCATIONS: usize = 200_000;

/// Revoked ticket versions: for each ticket, the last version revoked, which revokes
/// every earlier one too (versions only grow, so one number per ticket says it all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revocations {
    through: HashMap<TicketId, u32>,
}

impl Revocations {
    /// Revokes `version` of `ticket` and every earlier one. False when the list is full.
    pub fn revoke(&mut self, ticket: TicketId, version: u32) -> bool {
        if self.through.len() >= MAX_REVOCATIONS && !self.through.contains_key(&ticket) {
            return false;
        }
        let at = self.through.entry(ticket).or_insert(version);
        *at = (*at).max(version);
        true
    }

    pub fn is_revoked(&self, ticket: TicketId, version: u32) -> bool {
        self.through.get(&ticket).is_some_and(|&v| version <= v)
    }

    pub fn len(&self) -> usize {
        self.through.len()
    }

    pub fn is_empty(&self) -> bool {
        self.through.is_empty()
    }
}

/// One revocation as published: `version` and every earlier version of `ticket_id`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Revoked {
    ticket_id: TicketId,
    version: u32,
}

impl Serialize for Revocations {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut list: Vec<Revoked> = (self.through.iter())
            .map(|(&ticket_id, &version)| Revoked { ticket_id, version })
            .collect();
        list.sort_unstable_by_key(|r| r.ticket_id);
        list.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Revocations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let list = Vec::<Revoked>::deserialize(d)?;
        if list.len() > MAX_REVOCATIONS {
            return Err(serde::de::Error::custom(format_args!(
                "a revocation list holds at most {MAX_REVOCATIONS} tickets"
            )));
        }
        let mut out = Revocations::default();
        for r in list {
            out.revoke(r.ticket_id, r.version);
        }
        Ok(out)
    }
}

/// A barcode a gate accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifiedTicket {
    pub event: EventId,
    pub ticket: TicketId,
    pub version: u32,
    pub key: KeyId,
    pub issued_at: Millis,
    pub attendee: Option<AttendeeName>,
    pub rotating: bool,
}

/// Verifies a scanned barcode for `keys`' event. `rotation` is the event's rotation
/// secret when it issues rotating barcodes: then a barcode without a code is refused,
/// and without it a barcode with one cannot be checked and is refused too.
///
/// The checks run cheapest first and the signature is checked before anything signed
/// is believed: form, event, key, signature, revocation, code.
pub fn verify(
    barcode: &str,
    keys: &PublicKeys,
    revoked: &Revocations,
    rotation: Option<&RotationSecret>,
    now: Millis,
) -> Result<VerifiedTicket, BarcodeRefusal> {
    if barcode.len() > base45::encoded_len(MAX_LEN) {
        return Err(BarcodeRefusal::Malformed);
    }
    let bytes = base45::decode(barcode).ok_or(BarcodeRefusal::Malformed)?;
    let p = payload::parse(&bytes).ok_or(BarcodeRefusal::Malformed)?;
    let f = &p.fields;
    if f.event != keys.event {
        return Err(BarcodeRefusal::WrongEvent);
    }
    check_signature(keys, &p)?;
    if revoked.is_revoked(f.ticket, f.version) {
        return Err(BarcodeRefusal::Revoked);
    }
    check_code(rotation, &p, now)?;
    Ok(VerifiedTicket::from(p.fields))
}

fn check_signature(keys: &PublicKeys, p: &Parsed<'_>) -> Result<(), BarcodeRefusal> {
    let key = keys.key(p.fields.key).ok_or(BarcodeRefusal::UnknownKey)?;
    let mut message = Vec::with_capacity(CONTEXT.len() + p.signed.len());
    message.extend_from_slice(CONTEXT);
    message.extend_from_slice(p.signed);
    key.verify_strict(&message, &Signature::from_bytes(&p.signature))
        .map_err(|_| BarcodeRefusal::BadSignature)
}

fn check_code(
    rotation: Option<&RotationSecret>,
    p: &Parsed<'_>,
    now: Millis,
) -> Result<(), BarcodeRefusal> {
    let f = &p.fields;
    match (rotation, p.code) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(BarcodeRefusal::CannotCheckCode),
        (Some(_), None) => Err(BarcodeRefusal::CodeMissing),
        (Some(r), Some(code)) => r
            .ticket_secret(f.event, f.ticket, f.version)
            .check(&code, now),
    }
}

impl From<Fields> for VerifiedTicket {
    fn from(f: Fields) -> VerifiedTicket {
        let secs = i64::try_from(f.issued_at_secs).unwrap_or(i64::MAX);
        VerifiedTicket {
            event: f.event,
            ticket: f.ticket,
            version: f.version,
            key: f.key,
            issued_at: Millis(secs.saturating_mul(1000)),
            attendee: f.attendee,
            rotating: f.rotating,
        }
    }
}

//! What an offline gate downloads before doors open: the event's public keys, the
//! revoked ticket versions, the tickets already admitted at a gate, the rotation
//! secret when the event's barcodes rotate, and when it was made, so a gate can show
//! how stale its lists are. A revocation or an admission made after `generated_at` is
//! unknown to the gate until it downloads a new bundle (an admission, then, shows as a
//! conflict when the gate's scans are uploaded).
//!
//! A bundle with a rotation secret is a credential: it lets its holder make codes for
//! any barcode of the event it has a copy of (see the module documentation).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::keys::PublicKeys;
use super::rotating::RotationSecret;
use super::verify::{MAX_REVOCATIONS, Revocations, VerifiedTicket, verify};
use super::{BarcodeRefusal, BundleError, TicketId};
use crate::ids::EventId;
use crate::time::Millis;

/// Largest bundle read: `MAX_REVOCATIONS` revocations take at most 74 bytes each, and
/// as many admitted tickets 39 each.
pub const MAX_BUNDLE_BYTES: usize = 24 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateBundle {
    pub event_id: EventId,
    pub keys: PublicKeys,
    pub revoked: Revocations,
    /// Tickets admitted at a gate before the bundle was made (at most
    /// `MAX_REVOCATIONS`): refused as `already_admitted`, where a gate without the list
    /// would admit them again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub admitted: BTreeSet<TicketId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<RotationSecret>,
    pub generated_at: Millis,
    /// The event admits named attendees only: a barcode without a name is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub names_required: bool,
}

impl GateBundle {
    /// Reads a downloaded bundle, refusing one too large before parsing it and one
    /// whose keys are for another event than it says.
    pub fn from_json(json: &[u8]) -> Result<GateBundle, BundleError> {
        if json.len() > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge);
        }
        let bundle: GateBundle =
            serde_json::from_slice(json).map_err(|e| BundleError::Invalid(e.to_string()))?;
        if bundle.keys.event() != bundle.event_id {
            return Err(BundleError::Invalid(
                "the keys are for another event".into(),
            ));
        }
        if bundle.admitted.len() > MAX_REVOCATIONS {
            return Err(BundleError::Invalid("too many admitted tickets".into()));
        }
        Ok(bundle)
    }

    pub fn verify(&self, barcode: &str, now: Millis) -> Result<VerifiedTicket, BarcodeRefusal> {
        let v = verify(
            barcode,
            &self.keys,
            &self.revoked,
            self.rotation.as_ref(),
            now,
        )?;
        if self.admitted.contains(&v.ticket) {
            return Err(BarcodeRefusal::AlreadyAdmitted);
        }
        require_name(v, self.names_required)
    }
}

/// The verified ticket, unless the event admits named attendees only and it carries
/// no name: the name is signed into the barcode, so a gate needs nothing else to tell.
pub fn require_name(v: VerifiedTicket, required: bool) -> Result<VerifiedTicket, BarcodeRefusal> {
    if required && v.attendee.is_none() {
        return Err(BarcodeRefusal::NameMissing);
    }
    Ok(v)
}

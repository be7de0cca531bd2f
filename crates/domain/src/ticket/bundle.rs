//! What an offline gate downloads before doors open: the event's public keys, the
//! revoked ticket versions, the rotation secret when the event's barcodes rotate, and
//! when it was made, so a gate can show how stale its list is. A revocation made after
//! `generated_at` is unknown to the gate until it downloads a new bundle.
//!
//! A bundle with a rotation secret is a credential: it lets its holder make codes for
//! any barcode of the event it has a copy of (see the module documentation).

use serde::{Deserialize, Serialize};

use super::keys::PublicKeys;
use super::rotating::RotationSecret;
use super::verify::{Revocations, VerifiedTicket, verify};
use super::{BarcodeRefusal, BundleError};
use crate::ids::EventId;
use crate::time::Millis;

/// Largest bundle read: `MAX_REVOCATIONS` revocations take at most 74 bytes each.
pub const MAX_BUNDLE_BYTES: usize = 16 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateBundle {
    pub event_id: EventId,
    pub keys: PublicKeys,
    pub revoked: Revocations,
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

//! Stripe webhook signatures (`Stripe-Signature: t=<secs>,v1=<hex>`, an HMAC-SHA256
//! of `"<t>.<body>"`; the scheme is `boxoffice_domain::signature`): the signature first,
//! then the age of the timestamp, so a captured webhook cannot be replayed later.

use boxoffice_domain::Millis;
use boxoffice_domain::signature::{self, SignatureRefused};
use boxoffice_engine::ports::WebhookError;

pub use boxoffice_domain::signature::sign;

/// Checks `header` against `payload`; any of several `v1` signatures may match (a
/// provider rolling its secret sends both).
pub fn verify(
    secret: &str,
    payload: &[u8],
    header: &str,
    now: Millis,
    tolerance_s: u64,
) -> Result<(), WebhookError> {
    signature::verify(secret, payload, header, now.0 / 1000, tolerance_s).map_err(|r| match r {
        SignatureRefused::Missing => WebhookError::MissingSignature,
        SignatureRefused::Mismatch => WebhookError::BadSignature,
        SignatureRefused::Stale => WebhookError::Stale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = Millis(1_800_000_000_000);

    #[test]
    fn a_signed_payload_verifies_and_a_changed_one_does_not() {
        let h = sign("whsec_x", b"{}", 1_800_000_000);
        assert_eq!(verify("whsec_x", b"{}", &h, NOW, 300), Ok(()));
        let bad = verify("whsec_x", b"{ }", &h, NOW, 300);
        assert_eq!(bad, Err(WebhookError::BadSignature));
        let other = verify("whsec_y", b"{}", &h, NOW, 300);
        assert_eq!(other, Err(WebhookError::BadSignature));
    }

    #[test]
    fn an_old_signature_is_stale_and_a_header_without_parts_is_missing() {
        let h = sign("whsec_x", b"{}", 1_800_000_000 - 301);
        assert_eq!(
            verify("whsec_x", b"{}", &h, NOW, 300),
            Err(WebhookError::Stale)
        );
        for header in ["", "t=1", "v1=00", "garbage"] {
            assert_eq!(
                verify("whsec_x", b"{}", header, NOW, 300),
                Err(WebhookError::MissingSignature),
                "{header}"
            );
        }
    }
}

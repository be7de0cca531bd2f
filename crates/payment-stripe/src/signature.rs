//! Stripe webhook signatures (`Stripe-Signature: t=<secs>,v1=<hex>`, an HMAC-SHA256
//! of `"<t>.<body>"`): the signature first, then the age of the timestamp, so a
//! captured webhook cannot be replayed later.

use boxoffice_domain::Millis;
use boxoffice_engine::ports::WebhookError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The header value for `payload` signed at `timestamp_s` (seconds since the epoch).
pub fn sign(secret: &str, payload: &[u8], timestamp_s: i64) -> String {
    let mac = mac(secret, payload, timestamp_s);
    format!("t={timestamp_s},v1={}", hex(&mac.finalize().into_bytes()))
}

/// Checks `header` against `payload`; any of several `v1` signatures may match (a
/// provider rolling its secret sends both).
pub fn verify(
    secret: &str,
    payload: &[u8],
    header: &str,
    now: Millis,
    tolerance_s: u64,
) -> Result<(), WebhookError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", s)) => signatures.push(s),
            _ => {}
        }
    }
    let t = timestamp.ok_or(WebhookError::MissingSignature)?;
    if signatures.is_empty() {
        return Err(WebhookError::MissingSignature);
    }
    let matches = signatures.iter().any(|s| {
        unhex(s).is_some_and(|bytes| mac(secret, payload, t).verify_slice(&bytes).is_ok())
    });
    if !matches {
        return Err(WebhookError::BadSignature);
    }
    // Checked after the signature so an attacker learns nothing from the answer.
    if (now.0 / 1000 - t).unsigned_abs() > tolerance_s {
        return Err(WebhookError::Stale);
    }
    Ok(())
}

fn mac(secret: &str, payload: &[u8], timestamp_s: i64) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(timestamp_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
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

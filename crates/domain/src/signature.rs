//! Signed webhook bodies in Stripe's scheme, used both ways: the payment provider's
//! webhooks are verified with it and the order events boxoffice sends are signed with it.
//! The header value is `t=<secs>,v1=<hex>`, the hex an HMAC-SHA256 with the shared
//! secret of `"<t>.<body>"`. A receiver recomputes it over the raw body, compares in
//! constant time, and refuses timestamps far from its clock (after the signature, so an
//! attacker learns nothing from the answer) so that a captured body cannot be replayed.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureRefused {
    /// No timestamp or no `v1` signature in the header.
    Missing,
    /// No `v1` signature matches the body under the secret.
    Mismatch,
    /// Genuine, but signed too long ago (or too far ahead).
    Stale,
}

/// The header value for `payload` signed at `timestamp_s` (seconds since the epoch).
pub fn sign(secret: &str, payload: &[u8], timestamp_s: i64) -> String {
    let mac = mac(secret, payload, timestamp_s);
    format!("t={timestamp_s},v1={}", hex(&mac.finalize().into_bytes()))
}

/// Checks `header` against `payload` at `now_s`, allowing `tolerance_s` of skew; any of
/// several `v1` signatures may match (a sender rolling its secret sends both).
pub fn verify(
    secret: &str,
    payload: &[u8],
    header: &str,
    now_s: i64,
    tolerance_s: u64,
) -> Result<(), SignatureRefused> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", s)) => signatures.push(s),
            _ => {}
        }
    }
    let t = timestamp.ok_or(SignatureRefused::Missing)?;
    if signatures.is_empty() {
        return Err(SignatureRefused::Missing);
    }
    let matches = signatures.iter().any(|s| {
        unhex(s).is_some_and(|bytes| mac(secret, payload, t).verify_slice(&bytes).is_ok())
    });
    if !matches {
        return Err(SignatureRefused::Mismatch);
    }
    if (now_s - t).unsigned_abs() > tolerance_s {
        return Err(SignatureRefused::Stale);
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

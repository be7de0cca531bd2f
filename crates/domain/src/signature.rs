//! Signed webhook bodies in Stripe's scheme, used both ways: the payment provider's
//! webhooks are verified with it and the order events boxoffice sends are signed with it.
//! The header value is `t=<secs>,v1=<hex>`, the hex an HMAC-SHA256 with the shared
//! secret of `"<t>.<body>"`. A receiver recomputes it over the raw body, compares in
//! constant time, and refuses timestamps far from its clock (after the signature, so an
//! attacker learns nothing from the answer) so that a captured body cannot be replayed.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

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

/// Most `v1` signatures a header may carry: a sender rolling its secret sends two.
pub const MAX_SIGNATURES: usize = 8;

/// Checks `header` against `payload` at `now_s`, allowing `tolerance_s` of skew; any of
/// up to `MAX_SIGNATURES` `v1` signatures may match (a sender rolling its secret sends
/// both). The body's MAC is computed once, whatever the header holds; a header with
/// more signatures, or with one that is not 64 hex digits, matches nothing.
pub fn verify(
    secret: &str,
    payload: &[u8],
    header: &str,
    now_s: i64,
    tolerance_s: u64,
) -> Result<(), SignatureRefused> {
    let mut timestamp = None;
    let mut signatures: Vec<[u8; 32]> = Vec::new();
    // A signature that cannot be a MAC, or one too many: nothing can match.
    let mut unusable = false;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", s)) => match unhex32(s) {
                Some(mac) if signatures.len() < MAX_SIGNATURES => signatures.push(mac),
                _ => unusable = true,
            },
            _ => {}
        }
    }
    let t = timestamp.ok_or(SignatureRefused::Missing)?;
    if unusable {
        return Err(SignatureRefused::Mismatch);
    }
    if signatures.is_empty() {
        return Err(SignatureRefused::Missing);
    }
    let expected: [u8; 32] = mac(secret, payload, t).finalize().into_bytes().into();
    // Every signature is compared, in constant time, whichever matches.
    let matches = signatures
        .iter()
        .fold(subtle::Choice::from(0), |any, s| any | expected.ct_eq(s));
    if !bool::from(matches) {
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

/// A SHA-256 MAC in hex: exactly 64 hex digits.
fn unhex32(s: &str) -> Option<[u8; 32]> {
    let digits = s.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let nibble = |d: u8| char::from(d).to_digit(16);
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = u8::try_from(nibble(pair[0])? << 4 | nibble(pair[1])?).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: i64 = 1_800_000_000;

    fn v1(secret: &str, payload: &[u8]) -> String {
        sign(secret, payload, AT)
            .split_once(",v1=")
            .unwrap()
            .1
            .to_owned()
    }

    #[test]
    fn a_rolled_secret_verifies_with_either_signature() {
        let (old, new) = (v1("whsec_old", b"{}"), v1("whsec_new", b"{}"));
        let header = format!("t={AT},v1={old},v1={new}");
        assert_eq!(verify("whsec_new", b"{}", &header, AT, 300), Ok(()));
        assert_eq!(verify("whsec_old", b"{}", &header, AT, 300), Ok(()));
        let other = verify("whsec_other", b"{}", &header, AT, 300);
        assert_eq!(other, Err(SignatureRefused::Mismatch));
    }

    /// Each `v1` entry once cost an HMAC over the whole body: a header of empty entries
    /// (hyper reads some 400 KB of headers) made one unauthenticated webhook cost
    /// minutes of CPU.
    #[test]
    fn a_webhook_header_with_many_signatures_matches_nothing() {
        let good = v1("whsec_x", b"{}");
        let filler = format!("v1={}", "0".repeat(64));
        let mut parts = vec![format!("t={AT}")];
        parts.extend(std::iter::repeat_n(filler, MAX_SIGNATURES));
        parts.push(format!("v1={good}"));
        let over = verify("whsec_x", b"{}", &parts.join(","), AT, 300);
        assert_eq!(over, Err(SignatureRefused::Mismatch));
        // At the cap, the genuine one still counts.
        parts.remove(1);
        assert_eq!(verify("whsec_x", b"{}", &parts.join(","), AT, 300), Ok(()));

        // 100,000 entries over a 256 KiB body: refused before any MAC would be computed
        // for them (with one MAC each, this test would not end).
        let body = vec![b'x'; 256 * 1024];
        let header = format!("t={AT},{}", "v1=,".repeat(100_000));
        let many = verify("whsec_x", &body, &header, AT, 300);
        assert_eq!(many, Err(SignatureRefused::Mismatch));
    }

    #[test]
    fn a_signature_that_cannot_be_a_mac_matches_nothing() {
        let good = v1("whsec_x", b"{}");
        let signed = format!("+{}", &good[1..]);
        for bad in [
            "",
            "00",
            &good[..63],
            &format!("{good}0"),
            &"zz".repeat(32),
            &signed,
        ] {
            let header = format!("t={AT},v1={bad},v1={good}");
            let refused = verify("whsec_x", b"{}", &header, AT, 300);
            assert_eq!(refused, Err(SignatureRefused::Mismatch), "{bad:?}");
        }
        // Upper-case hex is hex.
        let upper = format!("t={AT},v1={}", good.to_uppercase());
        assert_eq!(verify("whsec_x", b"{}", &upper, AT, 300), Ok(()));
    }
}

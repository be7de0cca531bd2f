//! Base45 (RFC 9285): two bytes as three characters of the QR code's alphanumeric set,
//! so a QR code stores the payload at 16.5 bits per 16 (base64url in byte mode costs 32
//! bits per 24, base32 in alphanumeric mode 16.5 per 15).
//!
//! Decoding is strict: every text has one decoding and every byte string one encoding
//! (a group whose value does not fit its bytes is refused, not wrapped).

const ALPHABET: &[u8; 45] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:";

/// Characters needed for `bytes` bytes.
pub(super) const fn encoded_len(bytes: usize) -> usize {
    bytes / 2 * 3 + bytes % 2 * 2
}

pub(super) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(encoded_len(bytes.len()));
    for pair in bytes.chunks(2) {
        let mut n = pair.iter().fold(0usize, |n, &b| n << 8 | usize::from(b));
        // Two bytes take three digits, a last lone byte two.
        for _ in 0..=pair.len() {
            out.push(char::from(ALPHABET[n % 45]));
            n /= 45;
        }
    }
    out
}

fn value(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|&a| a == c).map(|i| i as u32)
}

/// The bytes `text` encodes, or `None` when it is not canonical base45.
pub(super) fn decode(text: &str) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    if text.len() % 3 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 3 * 2 + 1);
    for group in text.chunks(3) {
        let mut n = 0u32;
        for &c in group.iter().rev() {
            n = n * 45 + value(c)?;
        }
        if group.len() == 3 {
            out.extend_from_slice(&u16::try_from(n).ok()?.to_be_bytes());
        } else {
            out.push(u8::try_from(n).ok()?);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_examples_encode_and_decode() {
        for (bytes, text) in [
            (&b"AB"[..], "BB8"),
            (b"Hello!!", "%69 VD92EX0"),
            (b"base-45", "UJCLQE7W581"),
            (b"ietf!", "QED8WEX0"),
            (b"", ""),
        ] {
            assert_eq!(encode(bytes), text);
            assert_eq!(decode(text).as_deref(), Some(bytes));
            assert_eq!(encoded_len(bytes.len()), text.len());
        }
    }

    #[test]
    fn non_canonical_or_foreign_text_is_refused() {
        // "GGW" is 65,536 and ":::" 91,124: neither fits two bytes; "::" is 2,024.
        for bad in ["GGW", ":::", "::", "A", "abc", "BB8A", "BB\u{e9}"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}

//! A value that must never reach a log, an error report or a response: the operator
//! key, a payment provider's API key and webhook secrets, token signing keys. It prints
//! as `[redacted]`, cannot be serialized, and is compared in constant time.

use serde::{Deserialize, Deserializer};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const REDACTED: &str = "[redacted]";

/// A secret string (`Secret`) or byte string (`Secret<Vec<u8>>`). Read it with
/// [`Secret::expose`] only where it is used: a request header, a MAC, a key file.
#[derive(Clone, Default)]
pub struct Secret<T = String>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The secret itself.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T: AsRef<[u8]>> Secret<T> {
    /// Whether `candidate` is this secret, taking the same time whatever it is: both
    /// are hashed first, so neither a common prefix nor the length shows in the timing.
    pub fn matches(&self, candidate: impl AsRef<[u8]>) -> bool {
        let ours = Sha256::digest(self.0.as_ref());
        let theirs = Sha256::digest(candidate.as_ref());
        ours.ct_eq(&theirs).into()
    }

    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_empty()
    }

    /// Its length in bytes: for checking a minimum, never for printing.
    pub fn len(&self) -> usize {
        self.0.as_ref().len()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// Constant-time, as [`Secret::matches`].
impl<T: AsRef<[u8]>> PartialEq for Secret<T> {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other.0.as_ref())
    }
}

impl<T: AsRef<[u8]>> Eq for Secret<T> {}

impl<T> std::fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> std::fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_prints_redacted_whatever_the_format() {
        let s = Secret::from("sk_live_very_secret");
        assert_eq!(
            format!("{s:?} {s} {s:#?}"),
            "[redacted] [redacted] [redacted]"
        );
        let bytes = Secret::new(vec![1u8, 2, 3]);
        assert_eq!(format!("{bytes:?}"), "[redacted]");
    }

    #[test]
    fn a_secret_matches_only_itself() {
        let s = Secret::from("op_0123456789abcdef");
        assert!(s.matches("op_0123456789abcdef"));
        assert!(!s.matches("op_0123456789abcde"));
        assert!(!s.matches(""));
        assert_eq!(s, Secret::from("op_0123456789abcdef"));
        assert_ne!(s, Secret::from("op_other"));
    }

    #[test]
    fn a_secret_deserializes_from_its_plain_value() {
        let s: Secret = serde_json::from_str("\"whsec_x\"").unwrap();
        assert_eq!(s.expose(), "whsec_x");
    }
}

//! Signed tokens: buyer sessions, queue tickets and admission tokens. A token is
//! `base64url(claims-json).base64url(hmac-sha256)` where the claims carry the key id
//! that signed them, so keys can rotate: new tokens use the current key, old ones stay
//! valid while their key is still in the ring. Verification is local and constant-time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::ids::{BuyerId, EventId};
use crate::time::Millis;

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    Buyer,
    QueueTicket,
    Admission,
    /// A proof-of-work challenge for joining one event's queue.
    PowChallenge,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub kind: TokenKind,
    pub kid: String,
    pub buyer: BuyerId,
    /// The session (device) the token was issued to.
    pub sid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    pub exp: Millis,
    /// Buyer tokens: the identity provider verified this buyer (phone, ID).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verified: bool,
    /// Buyer tokens: when the account was created, for account-age rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_created_at: Option<Millis>,
    /// Proof-of-work challenges: leading zero bits a solution needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<u8>,
}

impl Claims {
    /// Claims of `kind` for a buyer's session with no optional claim set.
    pub fn new(kind: TokenKind, buyer: BuyerId, sid: String, exp: Millis) -> Claims {
        Claims {
            kind,
            kid: String::new(),
            buyer,
            sid,
            event: None,
            position: None,
            exp,
            verified: false,
            account_created_at: None,
            difficulty: None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token was signed with a key that is no longer accepted")]
    UnknownKey,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not a {0:?} token")]
    WrongKind(TokenKind),
    #[error("the token was issued for another event")]
    WrongEvent,
    #[error("the token was issued to another session")]
    WrongSession,
}

/// The signing keys. The first is current; the rest are accepted for verification.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<(String, Vec<u8>)>,
}

impl KeyRing {
    /// `keys`: (key id, secret), current first. Secrets shorter than 32 bytes are refused.
    pub fn new(keys: Vec<(String, Vec<u8>)>) -> Result<KeyRing, String> {
        if keys.is_empty() {
            return Err("the key ring needs at least one key".into());
        }
        if let Some((kid, _)) = keys.iter().find(|(_, s)| s.len() < 32) {
            return Err(format!("signing key {kid:?} is shorter than 32 bytes"));
        }
        Ok(KeyRing { keys })
    }

    pub fn sign(&self, mut claims: Claims) -> String {
        let (kid, secret) = &self.keys[0];
        claims.kid = kid.clone();
        let body = B64.encode(serde_json::to_vec(&claims).expect("claims serialize"));
        let mut mac = HmacSha256::new_from_slice(secret).expect("hmac takes any key length");
        mac.update(body.as_bytes());
        format!("{body}.{}", B64.encode(mac.finalize().into_bytes()))
    }

    /// Checks signature, expiry and kind. The caller checks event and session binding.
    pub fn verify(&self, token: &str, kind: TokenKind, now: Millis) -> Result<Claims, TokenError> {
        let (body, sig) = token.split_once('.').ok_or(TokenError::Malformed)?;
        let sig = B64.decode(sig).map_err(|_| TokenError::Malformed)?;
        let json = B64.decode(body).map_err(|_| TokenError::Malformed)?;
        let claims: Claims = serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)?;
        let (_, secret) = self
            .keys
            .iter()
            .find(|(k, _)| *k == claims.kid)
            .ok_or(TokenError::UnknownKey)?;
        let mut mac = HmacSha256::new_from_slice(secret).expect("hmac takes any key length");
        mac.update(body.as_bytes());
        mac.verify_slice(&sig)
            .map_err(|_| TokenError::BadSignature)?;
        if claims.kind != kind {
            return Err(TokenError::WrongKind(kind));
        }
        if claims.exp <= now {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }

    /// Like `verify`, and the token must be scoped to `event`.
    pub fn verify_for_event(
        &self,
        token: &str,
        kind: TokenKind,
        event: EventId,
        now: Millis,
    ) -> Result<Claims, TokenError> {
        let claims = self.verify(token, kind, now)?;
        if claims.event != Some(event) {
            return Err(TokenError::WrongEvent);
        }
        Ok(claims)
    }

    /// Like `verify_for_event`, and the token must belong to `session`: a token copied
    /// to another device (or sold with a bot's session) is refused there.
    pub fn verify_bound(
        &self,
        token: &str,
        kind: TokenKind,
        event: EventId,
        session: &str,
        now: Millis,
    ) -> Result<Claims, TokenError> {
        let claims = self.verify_for_event(token, kind, event, now)?;
        if claims.sid != session {
            return Err(TokenError::WrongSession);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(kid: &str, byte: u8) -> KeyRing {
        KeyRing::new(vec![(kid.into(), vec![byte; 32])]).unwrap()
    }

    fn claims(kind: TokenKind) -> Claims {
        Claims {
            event: Some(EventId(7)),
            position: Some(3),
            ..Claims::new(kind, BuyerId::random(), "s1".into(), Millis(10_000))
        }
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let r = ring("k1", 1);
        let t = r.sign(claims(TokenKind::Admission));
        assert!(
            r.verify_for_event(&t, TokenKind::Admission, EventId(7), Millis(9_999))
                .is_ok()
        );
        assert_eq!(
            r.verify(&t, TokenKind::Admission, Millis(10_000)),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn forged_other_kind_and_other_event_tokens_are_refused() {
        let r = ring("k1", 1);
        let t = r.sign(claims(TokenKind::QueueTicket));
        assert_eq!(
            r.verify(&t, TokenKind::Admission, Millis(0)),
            Err(TokenError::WrongKind(TokenKind::Admission))
        );
        assert_eq!(
            r.verify_for_event(&t, TokenKind::QueueTicket, EventId(8), Millis(0)),
            Err(TokenError::WrongEvent)
        );
        let forged = ring("k1", 2).sign(claims(TokenKind::QueueTicket));
        assert_eq!(
            r.verify(&forged, TokenKind::QueueTicket, Millis(0)),
            Err(TokenError::BadSignature)
        );
        let (body, _) = t.split_once('.').unwrap();
        assert_eq!(
            r.verify(&format!("{body}.AAAA"), TokenKind::QueueTicket, Millis(0)),
            Err(TokenError::BadSignature)
        );
        assert_eq!(
            r.verify("garbage", TokenKind::QueueTicket, Millis(0)),
            Err(TokenError::Malformed)
        );
    }

    #[test]
    fn a_token_presented_from_another_session_is_refused() {
        let r = ring("k1", 1);
        let t = r.sign(claims(TokenKind::Admission));
        let ok = r.verify_bound(&t, TokenKind::Admission, EventId(7), "s1", Millis(0));
        assert!(ok.is_ok());
        assert_eq!(
            r.verify_bound(&t, TokenKind::Admission, EventId(7), "s2", Millis(0)),
            Err(TokenError::WrongSession)
        );
    }

    #[test]
    fn rotated_keys_keep_old_tokens_valid_while_listed() {
        let old = ring("k1", 1);
        let t = old.sign(claims(TokenKind::Buyer));
        let rotated =
            KeyRing::new(vec![("k2".into(), vec![2; 32]), ("k1".into(), vec![1; 32])]).unwrap();
        assert!(rotated.verify(&t, TokenKind::Buyer, Millis(0)).is_ok());
        assert_eq!(
            ring("k2", 2).verify(&t, TokenKind::Buyer, Millis(0)),
            Err(TokenError::UnknownKey)
        );
    }
}

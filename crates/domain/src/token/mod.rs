//! Signed tokens: buyer sessions, queue tickets, admission tokens and proof-of-work
//! challenges, all in one standard form: a compact JWS (`header.payload.signature`,
//! base64url) whose protected header names the key (`kid`) that signed it, so keys can
//! rotate and an edge (CDN worker, API gateway) can verify tickets and admission tokens
//! with any JWT library, without calling us. Verification is local and constant-time.
//!
//! The payload uses the registered claims where they exist (`sub` is the buyer, `exp`
//! is in seconds since the epoch) and names its own for the rest (`kind`, `sid`,
//! `event`, `position`, ...). An edge must check `kind` as well as the signature: a
//! queue ticket is not an admission token.

mod jws;
mod keys;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::ids::{BuyerId, EventId};
use crate::time::Millis;

pub use keys::{EdgeAlgorithm, KeyRing};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    Buyer,
    QueueTicket,
    Admission,
    /// A proof-of-work challenge for joining one event's queue.
    PowChallenge,
}

impl TokenKind {
    /// Tokens an edge may verify (with the published keys when signed with EdDSA). The
    /// others are read by the nodes alone and always use the shared HMAC key.
    pub fn edge_facing(self) -> bool {
        matches!(self, TokenKind::QueueTicket | TokenKind::Admission)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub kind: TokenKind,
    #[serde(rename = "sub")]
    pub buyer: BuyerId,
    /// The session (device) the token was issued to.
    pub sid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// On the wire a JWT `exp`: whole seconds since the epoch (rounded down on signing).
    #[serde(with = "unix_secs")]
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
    /// Queue tickets and admission tokens bound to a client's key: its thumbprint
    /// (`cnf.jkt`, RFC 9449). Requests made with the token carry a proof signed with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<crate::possession::Confirmation>,
}

impl Claims {
    /// Claims of `kind` for a buyer's session with no optional claim set.
    pub fn new(kind: TokenKind, buyer: BuyerId, sid: String, exp: Millis) -> Claims {
        Claims {
            kind,
            buyer,
            sid,
            event: None,
            position: None,
            exp,
            verified: false,
            account_created_at: None,
            difficulty: None,
            cnf: None,
        }
    }
}

/// `exp` as a JWT NumericDate, so any JWT library reads it.
mod unix_secs {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::time::Millis;

    pub fn serialize<S: Serializer>(at: &Millis, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(at.0.div_euclid(1000))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Millis, D::Error> {
        Ok(Millis(i64::deserialize(d)?.saturating_mul(1000)))
    }
}

#[derive(Clone, Copy, Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token was signed with a key that is not (or no longer) accepted")]
    UnknownKey,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued by an issuer this server does not trust")]
    WrongIssuer,
    #[error("the token was issued for another audience")]
    WrongAudience,
    #[error("the token is not a {0:?} token")]
    WrongKind(TokenKind),
    #[error("the token was issued for another event")]
    WrongEvent,
    #[error("the token was issued to another session")]
    WrongSession,
}

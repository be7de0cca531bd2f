//! Buyers and who they are. A buyer proves it with one of our own session tokens (self
//! sign-up, or minted for an identity provider's user by POST /v1/buyer-tokens) or, when
//! an identity provider is configured, with that provider's access token. Both become
//! the same `Identity`, so every route that takes one takes the other.
//!
//! Self sign-up mints identities for nothing, which would defeat per-buyer limits and
//! the pre-opening draw; it is therefore off unless the operator turns it on (on by
//! default only with `serve --demo`), and rate-limited per client address when on.

use std::net::IpAddr;
use std::sync::Arc;

use boxoffice_domain::admission::Limit;
use boxoffice_domain::token::{Claims, TokenKind};
use boxoffice_domain::{BuyerId, Millis};
use serde::Deserialize;
use uuid::Uuid;

use crate::ports::IdentityProvider;
use crate::waiting::limits::Key;
use crate::waiting::{Refusal, WaitingError};
use crate::{Engine, EngineError};

/// `[buyers]`: anonymous self sign-up (POST /v1/buyers).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuyersConfig {
    /// Anyone may create a buyer. Unset: on with `serve --demo`, off otherwise.
    pub self_signup: Option<bool>,
    /// Sign-ups per client address (`per_s = 0` disables the limit).
    pub signup_per_address: Limit,
    /// Renewals of a session token per buyer (`per_s = 0` disables the limit).
    pub renew_per_buyer: Limit,
}

impl Default for BuyersConfig {
    fn default() -> Self {
        BuyersConfig {
            self_signup: None,
            signup_per_address: Limit {
                per_s: 1,
                burst: 20,
            },
            // An app renews once when half its token's life has passed: a few tries
            // (a retry, two tabs) are room enough.
            renew_per_buyer: Limit { per_s: 1, burst: 5 },
        }
    }
}

/// Who is calling, from a verified buyer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuyerSession {
    pub buyer: BuyerId,
    /// The session (device) the token was issued to.
    pub session: String,
}

/// A verified buyer with what eligibility rules read, whichever token proved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub buyer: BuyerId,
    pub session: String,
    pub verified: bool,
    pub account_created_at: Option<Millis>,
}

/// A buyer's session token with its buyer and when it lapses: granted for an identity
/// provider's user (`Engine::grant_buyer_token`) or renewed (`Engine::renew_buyer_token`).
#[derive(Clone, Debug)]
pub struct BuyerToken {
    pub buyer: BuyerId,
    pub token: String,
    /// When the new token lapses.
    pub expires_at: Millis,
}

/// A signed-up buyer before the ledger records them (`Engine::new_buyer`).
#[derive(Clone, Debug)]
pub struct NewBuyer {
    pub buyer: BuyerId,
    /// When they signed up: their account's creation, in the token and the ledger.
    pub at: Millis,
    /// Their session token.
    pub token: String,
    /// When the token lapses.
    pub expires_at: Millis,
}

impl NewBuyer {
    /// The ledger's write of this sign-up, for a replay store that keeps it with its
    /// claim (`IdempotencyStore::write_claimed`).
    pub fn write(&self) -> crate::ports::KnownWrite {
        crate::ports::KnownWrite::SignUp {
            buyer: self.buyer,
            at: self.at,
        }
    }
}

impl Engine {
    /// Accepts buyer identities from an identity provider as well as our own tokens.
    pub fn with_identity_provider(mut self, provider: Arc<dyn IdentityProvider>) -> Engine {
        self.identity = Some(provider);
        self
    }

    pub fn with_buyers(mut self, config: BuyersConfig) -> Engine {
        self.buyers = config;
        self
    }

    /// Whether a client at `ip` may create a buyer now: sign-up is on and the address
    /// is within its rate. Clients whose address is unknown share one allowance.
    pub fn may_sign_up(&self, ip: Option<IpAddr>) -> Result<(), Refusal> {
        if !self.buyers.self_signup.unwrap_or(false) {
            return Err(Refusal::SignupDisabled);
        }
        let limit = self.buyers.signup_per_address;
        self.waiting
            .limits
            .check(Key::SignupIp(ip), limit, self.now())
    }

    /// Signs up a new buyer: recorded in the ledger, with the session token that acts
    /// as them.
    pub async fn create_buyer(&self) -> Result<(BuyerId, String), EngineError> {
        let new = self.new_buyer();
        self.record_buyer(&new).await?;
        Ok((new.buyer, new.token))
    }

    /// A new buyer and their session token, not recorded yet: the answer to a sign-up
    /// is known before its write, so the write can be kept with its Idempotency-Key's
    /// claim and answer in one (`KnownWrite::SignUp`); `record_buyer` writes it alone.
    pub fn new_buyer(&self) -> NewBuyer {
        let buyer = BuyerId::random();
        let at = self.now();
        let expires_at = self.buyer_token_expiry(at);
        let claims = Claims {
            account_created_at: Some(at),
            ..Claims::new(
                TokenKind::Buyer,
                buyer,
                Uuid::new_v4().simple().to_string(),
                expires_at,
            )
        };
        NewBuyer {
            buyer,
            at,
            token: self.keys.sign(claims),
            expires_at,
        }
    }

    /// A fresh session token for the buyer a live token of ours names: the same buyer,
    /// session and attestations (`verified`, `account_created_at`), valid for another
    /// `buyer_token_ttl_s` and signed with the current key. An app renews its token
    /// while it is in use, so a buyer who comes back keeps their orders and tickets; a
    /// token that lapsed is not renewed (it proves nothing any more). An identity
    /// provider's token is renewed by that provider (`Refusal::NotRenewable`).
    /// Limited per buyer (`renew_per_buyer`). Nothing is written: the new token and the
    /// old one are both good until each lapses.
    pub fn renew_buyer_token(&self, token: &str) -> Result<BuyerToken, WaitingError> {
        let now = self.now();
        if self.is_providers(token) {
            return Err(Refusal::NotRenewable.into());
        }
        let claims = self.keys.verify(token, TokenKind::Buyer, now)?;
        let limit = self.buyers.renew_per_buyer;
        (self.waiting.limits).check(Key::RenewBuyer(claims.buyer), limit, now)?;
        let expires_at = self.buyer_token_expiry(now);
        let renewed = Claims {
            exp: expires_at,
            ..claims
        };
        Ok(BuyerToken {
            buyer: renewed.buyer,
            token: self.keys.sign(renewed),
            expires_at,
        })
    }

    /// Whether `token` is the identity provider's (one is configured and the token
    /// names none of our keys) rather than one of ours.
    fn is_providers(&self, token: &str) -> bool {
        self.identity.is_some() && !self.keys.names_own_key(token)
    }

    /// When a buyer token made at `now` lapses, as the token carries it (whole seconds).
    pub(crate) fn buyer_token_expiry(&self, now: Millis) -> Millis {
        let exp = now.plus_secs(self.config.buyer_token_ttl_s);
        Millis(exp.0 - exp.0.rem_euclid(1000))
    }

    /// Records a buyer made by `new_buyer`.
    pub async fn record_buyer(&self, new: &NewBuyer) -> Result<(), EngineError> {
        Ok(self.ports.ledger.create_buyer(new.buyer, new.at).await?)
    }

    /// The buyer behind a token: one of ours, or the identity provider's when one is
    /// configured and the token names none of our keys. A provider's buyer needs no
    /// ledger row: orders and tickets carry the buyer id alone (the `buyers` table is
    /// a record of self sign-ups, never read), so first sight of one writes nothing.
    pub async fn identify(&self, token: &str) -> Result<Identity, EngineError> {
        let now = self.now();
        if let Some(provider) = &self.identity
            && self.is_providers(token)
        {
            let id = provider.verify(token, now).await?;
            return Ok(Identity {
                buyer: id.buyer,
                session: id.session,
                verified: id.verified,
                account_created_at: id.account_created_at,
            });
        }
        let claims = self.keys.verify(token, TokenKind::Buyer, now)?;
        Ok(Identity {
            buyer: claims.buyer,
            session: claims.sid,
            verified: claims.verified,
            account_created_at: claims.account_created_at,
        })
    }

    pub async fn authenticate(&self, token: &str) -> Result<BuyerSession, EngineError> {
        let id = self.identify(token).await?;
        Ok(BuyerSession {
            buyer: id.buyer,
            session: id.session,
        })
    }
}

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
use crate::waiting::Refusal;
use crate::waiting::limits::Key;
use crate::{Engine, EngineError};

/// `[buyers]`: anonymous self sign-up (POST /v1/buyers).
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuyersConfig {
    /// Anyone may create a buyer. Unset: on with `serve --demo`, off otherwise.
    pub self_signup: Option<bool>,
    /// Sign-ups per client address (`per_s = 0` disables the limit).
    pub signup_per_address: Limit,
}

impl Default for BuyersConfig {
    fn default() -> Self {
        BuyersConfig {
            self_signup: None,
            signup_per_address: Limit {
                per_s: 1,
                burst: 20,
            },
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

    pub async fn create_buyer(&self) -> Result<(BuyerId, String), EngineError> {
        let buyer = BuyerId::random();
        let now = self.now();
        self.ports.ledger.create_buyer(buyer, now).await?;
        let claims = Claims {
            account_created_at: Some(now),
            ..Claims::new(
                TokenKind::Buyer,
                buyer,
                Uuid::new_v4().simple().to_string(),
                now.plus_secs(self.config.buyer_token_ttl_s),
            )
        };
        Ok((buyer, self.keys.sign(claims)))
    }

    /// The buyer behind a token: one of ours, or the identity provider's when one is
    /// configured and the token names none of our keys. A provider's buyer needs no
    /// ledger row: orders and tickets carry the buyer id alone (the `buyers` table is
    /// a record of self sign-ups, never read), so first sight of one writes nothing.
    pub async fn identify(&self, token: &str) -> Result<Identity, EngineError> {
        let now = self.now();
        if let Some(provider) = &self.identity
            && !self.keys.names_own_key(token)
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

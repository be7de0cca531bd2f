//! Tokens the waiting room hands out besides tickets: proof-of-work challenges, buyer
//! tokens minted for an identity provider's verified users, and the session check on
//! the admission token when seats are held.

use std::net::IpAddr;

use boxoffice_domain::token::{Claims, TokenError, TokenKind};
use boxoffice_domain::{BuyerId, EventId, Millis};
use serde::{Deserialize, Serialize};

use super::WaitingError;
use super::limits::Key;
use crate::buyers::{BuyerSession, BuyerToken};
use crate::{Admitted, Engine, EngineError};

/// A proof-of-work challenge (GET /v1/events/{id}/queue/challenge).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Challenge {
    pub challenge: String,
    pub difficulty: u8,
    pub expires_at: Millis,
    /// What solving means, for client authors.
    pub rule: &'static str,
}

/// What an identity provider attests about a buyer (POST /v1/buyer-tokens).
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuyerGrant {
    pub buyer_id: BuyerId,
    #[serde(default)]
    pub verified: bool,
    pub account_created_at: Millis,
}

impl Engine {
    /// A challenge bound to the buyer's session and the event, at the event's
    /// current difficulty (0: no proof of work is asked).
    pub async fn pow_challenge(
        &self,
        event: EventId,
        buyer_token: &str,
        ip: Option<IpAddr>,
    ) -> Result<Challenge, WaitingError> {
        let who = self.identify(buyer_token).await?;
        let now = self.now();
        let cfg = &self.config.waiting;
        if let Some(ip) = ip {
            self.waiting
                .limits
                .check(Key::JoinIp(ip), cfg.join_per_ip, now)?;
        }
        self.event(event).await?;
        // The difficulty this node checks joins against (its copy), so a challenge it
        // hands out is never stale to its own check.
        let difficulty = self.cached_settings(event).await?.rules.pow_difficulty;
        let exp = now.plus_secs(cfg.challenge_ttl_s);
        let challenge = Claims {
            event: Some(event),
            difficulty: Some(difficulty),
            // A nonce per challenge, so two challenges never share solutions.
            position: Some(u64::from_le_bytes(
                uuid::Uuid::new_v4().as_bytes()[..8]
                    .try_into()
                    .unwrap_or([0; 8]),
            )),
            ..Claims::new(TokenKind::PowChallenge, who.buyer, who.session, exp)
        };
        Ok(Challenge {
            challenge: self.keys.sign(challenge),
            difficulty,
            expires_at: exp,
            rule: "find a nonce (1-64 characters) such that sha256(challenge + \":\" + nonce) \
                   starts with `difficulty` zero bits; send {\"pow\": {\"challenge\", \"nonce\"}} \
                   with the join",
        })
    }

    /// A buyer token carrying an identity provider's attestations, for the buyer's new
    /// session. The operator key stands in for the provider in embedded deployments.
    pub fn grant_buyer_token(&self, grant: &BuyerGrant) -> BuyerToken {
        let expires_at = self.buyer_token_expiry(self.now());
        let claims = Claims {
            verified: grant.verified,
            account_created_at: Some(grant.account_created_at),
            ..Claims::new(
                TokenKind::Buyer,
                grant.buyer_id,
                uuid::Uuid::new_v4().simple().to_string(),
                expires_at,
            )
        };
        BuyerToken {
            buyer: grant.buyer_id,
            token: self.keys.sign(claims),
            expires_at,
        }
    }

    /// Verifies an admission token for `event` and, when the caller also presents
    /// their buyer token, that both belong to the same buyer and session. With
    /// `require_session_on_hold` the buyer token is mandatory.
    pub async fn admitted_in_session(
        &self,
        event: EventId,
        admission_token: &str,
        buyer_token: Option<&str>,
    ) -> Result<Admitted, EngineError> {
        let Some(buyer_token) = buyer_token else {
            if self.config.waiting.require_session_on_hold {
                return Err(EngineError::BadToken(TokenError::WrongSession));
            }
            return self.admitted(event, admission_token);
        };
        let session = self.authenticate(buyer_token).await?;
        let now = self.now();
        let claims = self.keys.verify_bound(
            admission_token,
            TokenKind::Admission,
            event,
            &session.session,
            now,
        )?;
        if claims.buyer != session.buyer {
            return Err(EngineError::BadToken(TokenError::WrongSession));
        }
        Ok(Admitted {
            event,
            who: BuyerSession {
                buyer: claims.buyer,
                session: claims.sid,
            },
            key: claims.cnf.map(|c| c.jkt),
            at: now,
        })
    }

    /// An admitted buyer is done (released, bought, or gave up): their place in the
    /// active-shopper cap frees for the next batch.
    pub async fn shopper_finished(
        &self,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<(), EngineError> {
        self.ports.queue.finish(event, buyer).await?;
        Ok(())
    }
}

//! An external identity provider: the platform's own accounts, whose access tokens
//! (an OIDC JWT, for one) the engine accepts wherever it accepts its own buyer token.

use async_trait::async_trait;
use boxoffice_domain::token::TokenError;
use boxoffice_domain::{BuyerId, Millis};

/// What a verified access token says about its buyer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalIdentity {
    pub buyer: BuyerId,
    /// The session (device) this token belongs to, for binding queue tickets and
    /// admission tokens; stable across the provider's token refreshes when it can be.
    pub session: String,
    /// The provider vouches for this buyer (a verified e-mail, phone or ID).
    pub verified: bool,
    pub account_created_at: Option<Millis>,
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The token is not acceptable: forged, expired, another issuer or audience.
    #[error(transparent)]
    Refused(#[from] TokenError),
    /// The provider's keys could not be had; the token may be fine.
    #[error("identity provider unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait IdentityProvider: Send + Sync {
    /// Verifies an access token at `now` (the engine's clock) and maps its claims.
    async fn verify(&self, token: &str, now: Millis) -> Result<ExternalIdentity, IdentityError>;
}

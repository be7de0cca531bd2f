//! Buyer identities from an OpenID Connect provider. An access token (a JWT signed
//! RS256, ES256 or EdDSA) is verified against the provider's published keys (its JWKS,
//! fetched over HTTP and cached), its issuer, audience and validity window are checked
//! against the engine's clock, and configured claims become the buyer's id, whether the
//! provider verified them, and when their account was created.

mod claims;
mod config;
mod jwks;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::HashSet;

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_domain::token::TokenError;
use boxoffice_engine::ports::{ExternalIdentity, IdentityError, IdentityProvider};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};

pub use claims::buyer_id;
pub use config::OidcConfig;

type Claims = serde_json::Map<String, serde_json::Value>;

/// Verifies a provider's access tokens. Cheap to share: one per process.
pub struct OidcProvider {
    config: OidcConfig,
    algorithms: HashSet<Algorithm>,
    keys: jwks::Jwks,
}

impl OidcProvider {
    /// Checks the configuration; fetches nothing yet (see `warm_up`).
    pub fn new(config: OidcConfig) -> Result<OidcProvider, String> {
        let algorithms = config.check()?;
        let keys = jwks::Jwks::new(&config)?;
        Ok(OidcProvider {
            config,
            algorithms,
            keys,
        })
    }

    /// Fetches the provider's keys once, so the first buyer does not wait for them and
    /// a wrong `jwks_url` shows in the log at start-up.
    pub async fn warm_up(&self, now: Millis) -> Result<usize, String> {
        self.keys.refresh(now).await
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.set_issuer(&[&self.config.issuer]);
        v.set_audience(&self.config.audience.0);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        // Times are checked against the engine's clock below, not the library's.
        v.validate_exp = false;
        v.validate_nbf = false;
        v
    }

    /// The signature, issuer and audience, then the validity window with leeway.
    async fn verified_claims(&self, token: &str, now: Millis) -> Result<Claims, IdentityError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::BadSignature.into());
        }
        let key = self
            .keys
            .key(header.kid.as_deref(), header.alg, now)
            .await?;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &self.validation(header.alg))
            .map_err(|e| refusal(e.kind()))?;
        claims::check_window(&data.claims, now, self.config.leeway_s)?;
        Ok(data.claims)
    }
}

fn refusal(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(c) if c == "iss" => TokenError::WrongIssuer,
        ErrorKind::MissingRequiredClaim(c) if c == "aud" => TokenError::WrongAudience,
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidAlgorithm
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidKeyFormat => TokenError::BadSignature,
        _ => TokenError::Malformed,
    }
}

#[async_trait]
impl IdentityProvider for OidcProvider {
    async fn verify(&self, token: &str, now: Millis) -> Result<ExternalIdentity, IdentityError> {
        let claims = self.verified_claims(token, now).await?;
        Ok(claims::identity(&self.config, &claims)?)
    }
}

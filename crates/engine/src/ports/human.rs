//! A hosted human-check verifier (Turnstile, hCaptcha, reCAPTCHA): asked, over the
//! network, whether a token its widget gave a buyer is genuine. The adapter holds the
//! secrets; the engine only names the provider.

use std::net::IpAddr;

use async_trait::async_trait;
use boxoffice_domain::human_check::HostedProvider;

/// The verifier could not say: unreachable, too slow, or an answer it cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("human-check verifier unavailable: {0}")]
pub struct VerifierDown(pub String);

#[async_trait]
pub trait HumanVerifier: Send + Sync {
    /// The public key the buyer's widget is drawn with; `None` when this server has no
    /// account with `provider`.
    fn site_key(&self, provider: HostedProvider) -> Option<&str>;
    /// Whether the provider accepts `token` (answered by the client at `ip`): `true`
    /// passes, `false` is the provider's "no" (forged, expired, already redeemed).
    async fn verify(
        &self,
        provider: HostedProvider,
        token: &str,
        ip: Option<IpAddr>,
    ) -> Result<bool, VerifierDown>;
}

//! The human check at queue entry, chosen per event: none, the self-hosted proof of
//! work (`pow`, solved in the buyer's browser with no third party), or a hosted verifier
//! (Cloudflare Turnstile, hCaptcha, reCAPTCHA) whose widget the buyer solves and whose
//! answer the server asks for itself. Only the choice lives here: the verifier's
//! secret stays in the server's configuration, never in an event or an answer.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

/// Longest verifier token accepted; a longer one is refused without asking the
/// verifier. Turnstile documents 2,048 characters; the others issue shorter ones.
pub const MAX_TOKEN_LEN: usize = 4_096;

/// A hosted verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostedProvider {
    Turnstile,
    Hcaptcha,
    Recaptcha,
}

impl HostedProvider {
    pub const ALL: [HostedProvider; 3] = [
        HostedProvider::Turnstile,
        HostedProvider::Hcaptcha,
        HostedProvider::Recaptcha,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            HostedProvider::Turnstile => "turnstile",
            HostedProvider::Hcaptcha => "hcaptcha",
            HostedProvider::Recaptcha => "recaptcha",
        }
    }
}

/// What a join gets while the hosted verifier cannot answer (down, slow, garbled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenVerifierDown {
    /// Refused with 503 and Retry-After: no unchecked buyer enters.
    #[default]
    Closed,
    /// Let in unchecked (counted), its token still single-use: a sale goes on.
    Open,
}

/// The check a join must pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum HumanCheck {
    /// No check.
    None,
    /// The self-hosted challenge: a proof of work at the rules' `pow_difficulty`.
    ProofOfWork,
    /// A hosted verifier's token, sent with the join as `human_check_token`.
    Hosted {
        provider: HostedProvider,
        #[serde(default)]
        when_down: WhenVerifierDown,
    },
}

/// What a verifier token is remembered by: its SHA-256, so a store never holds a
/// token that might still be redeemed.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosted_check_reads_with_its_default_failure_mode() {
        let c: HumanCheck =
            serde_json::from_str(r#"{"kind":"hosted","provider":"turnstile"}"#).unwrap();
        assert_eq!(
            c,
            HumanCheck::Hosted {
                provider: HostedProvider::Turnstile,
                when_down: WhenVerifierDown::Closed
            }
        );
        let c: HumanCheck = serde_json::from_str(r#"{"kind":"proof_of_work"}"#).unwrap();
        assert_eq!(c, HumanCheck::ProofOfWork);
        assert!(
            serde_json::from_str::<HumanCheck>(
                r#"{"kind":"hosted","provider":"hcaptcha","when_dwn":"open"}"#
            )
            .is_err(),
            "a misspelt field is refused, not read as the default"
        );
        assert!(serde_json::from_str::<HumanCheck>(r#"{"kind":"hosted"}"#).is_err());
    }

    #[test]
    fn digests_differ_per_token() {
        assert_ne!(token_digest("a"), token_digest("b"));
        assert_eq!(token_digest("a"), token_digest("a"));
    }
}

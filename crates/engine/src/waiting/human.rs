//! The hosted human check at joining (docs/ARCHITECTURE.md, "Human check at queue
//! entry"). The buyer's widget gives a token; the verifier (`HumanVerifier`) says
//! whether it is genuine. A token lets one buyer in: the queue store remembers whom it
//! let in (`QueueStore::remember_check`) for `human_check_remember_s`, longer than any
//! provider keeps a token valid, so a second buyer presenting it is refused without
//! asking the provider, and the same buyer retrying a join that passed is let through
//! (the provider, asked again, would call its own token a duplicate). A verifier that
//! cannot answer in time fails open or closed as the event says.

use std::net::IpAddr;
use std::sync::Arc;

use boxoffice_domain::human_check::{
    HostedProvider, HumanCheck, MAX_TOKEN_LEN, WhenVerifierDown, token_digest,
};
use boxoffice_domain::{EventId, Millis};
use serde::Serialize;

use super::{Refusal, WaitingError, WaitingRules};
use crate::ports::{HumanVerifier, VerifierDown};
use crate::{Engine, EngineError, Identity};

/// The check a client must pass to join, as the public queue document tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HumanCheckView {
    /// Join with an empty body.
    None,
    /// Get a challenge (GET /v1/events/{id}/queue/challenge) and send its solution as
    /// `pow`.
    ProofOfWork { difficulty: u8 },
    /// Draw the provider's widget with `site_key` and send its token as
    /// `human_check_token`.
    Hosted {
        provider: HostedProvider,
        /// null when this server has no account with the provider (joins then meet
        /// the event's `when_down`).
        #[schema(required)]
        site_key: Option<String>,
    },
}

/// One outcome of a hosted check, as counted in
/// `boxoffice_human_checks_total{provider, outcome}`.
fn count(provider: HostedProvider, outcome: &'static str) {
    metrics::counter!(
        "boxoffice_human_checks_total",
        "provider" => provider.as_str(),
        "outcome" => outcome
    )
    .increment(1);
}

impl Engine {
    /// Asks `verifier` about the tokens of events with a hosted check.
    pub fn with_human_verifier(mut self, verifier: Arc<dyn HumanVerifier>) -> Engine {
        self.human = Some(verifier);
        self
    }

    /// Whether this server can verify `provider`'s tokens.
    pub fn verifies(&self, provider: HostedProvider) -> bool {
        self.site_key(provider).is_some()
    }

    /// The public key of this server's `provider` account, when it has one.
    pub(crate) fn site_key(&self, provider: HostedProvider) -> Option<&str> {
        self.human.as_ref().and_then(|h| h.site_key(provider))
    }

    /// Rules that ask a hosted check this server has no account with are refused
    /// when set (a join could never pass them).
    pub(crate) fn check_verifier_for(&self, rules: &WaitingRules) -> Result<(), EngineError> {
        if let HumanCheck::Hosted { provider, .. } = rules.human_check()
            && self.site_key(provider).is_none()
        {
            return Err(EngineError::Invalid(format!(
                "this server has no {} account: set [human_check.{}] site_key and secret \
                 in its configuration first",
                provider.as_str(),
                provider.as_str()
            )));
        }
        Ok(())
    }

    pub(crate) fn human_check_view(&self, rules: &WaitingRules) -> HumanCheckView {
        match rules.human_check() {
            HumanCheck::None => HumanCheckView::None,
            HumanCheck::ProofOfWork => HumanCheckView::ProofOfWork {
                difficulty: rules.pow_difficulty,
            },
            HumanCheck::Hosted { provider, .. } => HumanCheckView::Hosted {
                provider,
                site_key: self.site_key(provider).map(str::to_owned),
            },
        }
    }

    /// The hosted check of one join: the token is the buyer's own, genuine, and used
    /// by no other buyer.
    pub(crate) async fn check_hosted(
        &self,
        event: EventId,
        buyer: &Identity,
        token: Option<&str>,
        ip: Option<IpAddr>,
        (provider, when_down): (HostedProvider, WhenVerifierDown),
        now: Millis,
    ) -> Result<(), WaitingError> {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            count(provider, "missing");
            return Err(Refusal::HumanCheckRequired.into());
        };
        if token.len() > MAX_TOKEN_LEN {
            count(provider, "failed");
            return Err(Refusal::HumanCheckFailed.into());
        }
        let digest = token_digest(token);
        let queue = &self.ports.queue;
        match queue.remembered_check(event, &digest, now).await? {
            Some(owner) if owner == buyer.buyer => {
                count(provider, "retried");
                return Ok(());
            }
            Some(_) => {
                count(provider, "reused");
                return Err(Refusal::HumanCheckReused.into());
            }
            None => {}
        }
        let verdict = match &self.human {
            Some(v) => v.verify(provider, token, ip).await,
            None => Err(VerifierDown(format!("no {} account", provider.as_str()))),
        };
        let admitted = match verdict {
            Ok(true) => "passed",
            Ok(false) => {
                count(provider, "failed");
                return Err(Refusal::HumanCheckFailed.into());
            }
            Err(e) => {
                count(provider, "verifier_error");
                tracing::warn!(provider = provider.as_str(), error = %e, ?when_down, "human-check verifier did not answer");
                if when_down == WhenVerifierDown::Closed {
                    return Err(Refusal::HumanCheckUnavailable.into());
                }
                "fail_open_admit"
            }
        };
        // Remembered before the join takes effect: of two buyers racing with one
        // token, exactly one is its owner.
        let until = now.plus_secs(self.config.waiting.human_check_remember_s);
        let owner = queue
            .remember_check(event, &digest, buyer.buyer, until, now)
            .await?;
        if owner != buyer.buyer {
            count(provider, "reused");
            return Err(Refusal::HumanCheckReused.into());
        }
        count(provider, admitted);
        Ok(())
    }
}

//! Why the waiting room turned a request away. The HTTP layer gives each refusal its
//! status (403 for rules, 429 for limits) and its stable code.

use boxoffice_domain::token::TokenError;

use crate::EngineError;
use crate::ports::StoreError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("this sale is open to verified buyers only")]
    NotVerified,
    #[error("this sale is open to accounts created before the cutoff")]
    AccountTooNew,
    #[error("joining this queue needs a proof of work: get a challenge first")]
    PowRequired,
    #[error("the proof of work does not solve the challenge")]
    PowInvalid,
    #[error(
        "joining this queue needs a human check: solve the event's widget and send its \
         token as human_check_token"
    )]
    HumanCheckRequired,
    #[error("the human check did not pass: solve the widget again")]
    HumanCheckFailed,
    #[error("this human check was already used by another buyer: solve the widget again")]
    HumanCheckReused,
    #[error("the human check cannot be verified right now; retry shortly")]
    HumanCheckUnavailable,
    #[error(
        "anonymous sign-up is off on this server: buyers sign in with the platform's identity \
         provider, or get a token from POST /v1/buyer-tokens; an operator can allow it with \
         `[buyers] self_signup = true` (BOXOFFICE_BUYERS__SELF_SIGNUP=true)"
    )]
    SignupDisabled,
    #[error(
        "this token was issued by the identity provider: renew it with the provider; only \
         the box office's own buyer tokens are renewed here"
    )]
    NotRenewable,
    #[error("too many requests; retry after {retry_after_ms} ms")]
    RateLimited { retry_after_ms: u64 },
}

#[derive(Debug, thiserror::Error)]
pub enum WaitingError {
    #[error("{0}")]
    Refused(Refusal),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<StoreError> for WaitingError {
    fn from(e: StoreError) -> Self {
        WaitingError::Engine(e.into())
    }
}

impl From<TokenError> for WaitingError {
    fn from(e: TokenError) -> Self {
        WaitingError::Engine(e.into())
    }
}

impl From<Refusal> for WaitingError {
    fn from(r: Refusal) -> Self {
        WaitingError::Refused(r)
    }
}

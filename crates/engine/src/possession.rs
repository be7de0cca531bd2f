//! Proof of possession (RFC 9449 DPoP) at the engine: which requests need a proof, the
//! key a proof must be signed with, and the replay memory. The domain checks a proof's
//! form, signature, request and age (`boxoffice_domain::possession`); here a checked
//! proof is held against the key its token or hold is bound to, and its id is
//! remembered for as long as the proof could be accepted, so each proof is used once.
//!
//! The key is bound at join (the queue ticket's `cnf.jkt`, which the admission token
//! inherits) and, at each hold, to the hold itself (its record in the hot store carries
//! the thumbprint), so that its checkout and release (made with the buyer token) need
//! the same key for exactly as long as the hold is kept. Every check runs before the
//! request's replay record and before any store write, and only a proof that passed
//! every check is remembered: a refusal changes nothing. Keys are decoded once per
//! node and kept by thumbprint (`KeyCache`, `engine.proofs.key_cache` of them).

use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::possession::{
    self, CheckedProof, PopMode, ProofError, ProofRequest, ProofWindow, Thumbprint,
};
use boxoffice_domain::{EventId, HoldId};
use serde::Deserialize;

use crate::ports::{FirstUse, ProofMemory};
use crate::{Engine, EngineError};

/// Proof-of-possession settings (`[engine.proofs]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct ProofConfig {
    /// Oldest proof accepted, by its `iat` (seconds).
    pub max_age_s: u64,
    /// How far ahead of this node's clock a proof's `iat` may be (seconds).
    pub skew_s: u64,
    /// Most proof ids remembered per event at once; beyond it a proof is answered 503
    /// (retry shortly) rather than accepted unremembered.
    pub max_remembered: u64,
    /// Most decoded public keys kept by this node (about 6 KB for a P-256 key with
    /// its precomputed multiples, 200 bytes for an Ed25519 one), so a buyer's key is
    /// decoded once for its holds, checkouts and releases.
    pub key_cache: usize,
}

impl Default for ProofConfig {
    fn default() -> Self {
        ProofConfig {
            max_age_s: 60,
            skew_s: 5,
            max_remembered: 1_000_000,
            key_cache: 10_000,
        }
    }
}

impl ProofConfig {
    fn window(&self) -> ProofWindow {
        ProofWindow {
            max_age_s: self.max_age_s,
            skew_s: self.skew_s,
        }
    }

    /// A proof is accepted while its `iat` is within the window: remembering its id
    /// this long (and a second for rounding) covers every moment it could be replayed.
    fn replay_ttl(&self) -> Duration {
        Duration::from_secs(self.max_age_s.saturating_add(self.skew_s).saturating_add(1))
    }
}

/// Why a request's proof of possession is refused. Each is a 401 that changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofRefusal {
    #[error(
        "this request needs a DPoP header: a proof signed with the key bound when joining the \
         line (an admission bound to no key is not accepted by this sale)"
    )]
    Required,
    #[error("the DPoP proof is not accepted: {0}")]
    Invalid(ProofError),
    #[error("the DPoP proof's iat is outside the accepted window; check the device's clock")]
    Stale,
    #[error("this DPoP proof was used before; sign a fresh one (a new jti) for every request")]
    Replayed,
    #[error("the DPoP proof is signed with another key than the one this admission is bound to")]
    KeyMismatch,
}

impl From<ProofError> for ProofRefusal {
    fn from(e: ProofError) -> Self {
        match e {
            ProofError::Stale => ProofRefusal::Stale,
            other => ProofRefusal::Invalid(other),
        }
    }
}

impl From<ProofRefusal> for EngineError {
    fn from(r: ProofRefusal) -> Self {
        EngineError::Proof(r)
    }
}

/// A request's `DPoP` header (if any) and what it must be a proof for.
#[derive(Clone, Copy, Debug)]
pub struct ProofInput<'a> {
    pub proof: Option<&'a str>,
    pub method: &'a str,
    pub path: &'a str,
}

impl Engine {
    /// Where proof ids are remembered (beside the hot store).
    pub fn with_proof_memory(mut self, memory: Arc<dyn ProofMemory>) -> Engine {
        self.proofs = Some(memory);
        self
    }

    fn proof_memory(&self) -> Result<&dyn ProofMemory, EngineError> {
        self.proofs.as_deref().ok_or_else(|| {
            EngineError::Unavailable("no proof-of-possession memory is configured".into())
        })
    }

    /// The proof a join binds its ticket to, checked but not yet remembered: when the
    /// event asks for one or allows it and the client sent it. The join remembers it
    /// (`remember_proof`) only once its other checks passed, the human check among
    /// them, so joins refused there leave nothing in the event's proof memory (whose
    /// cap, once full, refuses every proof of the event).
    pub(crate) fn join_proof(
        &self,
        mode: PopMode,
        input: Option<ProofInput<'_>>,
    ) -> Result<Option<CheckedProof>, EngineError> {
        let sent = input.filter(|i| i.proof.is_some());
        match (mode, sent) {
            (PopMode::Off, _) | (PopMode::Optional, None) => Ok(None),
            (PopMode::Required, None) => Err(ProofRefusal::Required.into()),
            (_, Some(input)) => self.checked(input, None).map(Some),
        }
    }

    /// Checks the proof of a request made under a binding to `bound` (or to no key).
    pub(crate) async fn prove(
        &self,
        event: EventId,
        mode: PopMode,
        bound: Option<&Thumbprint>,
        input: Option<ProofInput<'_>>,
    ) -> Result<(), EngineError> {
        if mode == PopMode::Off {
            return Ok(());
        }
        let Some(bound) = bound else {
            return match mode {
                PopMode::Required => Err(ProofRefusal::Required.into()),
                _ => Ok(()),
            };
        };
        let input = input
            .filter(|i| i.proof.is_some())
            .ok_or(ProofRefusal::Required)?;
        self.accept(event, input, Some(bound)).await.map(drop)
    }

    /// The proof of a checkout or release of `hold`, against the key the hold was
    /// taken with, read from the hold itself. Answers that key when the request proved
    /// it: the buyer's device, for the velocity signals.
    ///
    /// A hold the hot store no longer knows (forgotten after it ended) asks no proof:
    /// the request can change nothing there, and a retry of a checkout or release that
    /// completed must get its stored answer, which the replay record gives.
    pub async fn prove_for_hold(
        &self,
        hold: HoldId,
        input: ProofInput<'_>,
    ) -> Result<Option<Thumbprint>, EngineError> {
        let mode = self.event(hold.event).await?.event.sale.proof_of_possession;
        if mode == PopMode::Off {
            return Ok(None);
        }
        let Some(view) = self.ports.arbiter.get(hold).await? else {
            return Ok(None);
        };
        self.prove(hold.event, mode, view.key.as_ref(), Some(input))
            .await?;
        Ok(view.key)
    }

    /// Checks a proof and, last, remembers its id: only a proof that passed is kept.
    async fn accept(
        &self,
        event: EventId,
        input: ProofInput<'_>,
        bound: Option<&Thumbprint>,
    ) -> Result<Thumbprint, EngineError> {
        let checked = self.checked(input, bound)?;
        self.remember_proof(event, &checked).await?;
        Ok(checked.jkt)
    }

    /// A proof's checks, for `bound` (or, at a join, no key yet): everything but
    /// whether its id was used before.
    fn checked(
        &self,
        input: ProofInput<'_>,
        bound: Option<&Thumbprint>,
    ) -> Result<CheckedProof, EngineError> {
        let cfg = &self.config.proofs;
        let request = ProofRequest {
            method: input.method,
            path: input.path,
        };
        let proof = input.proof.unwrap_or_default();
        let (window, now) = (cfg.window(), self.now());
        // A join's key is decoded for it alone: the whole crowd joins, and its keys
        // would push out of the cache the keys of the buyers admitted to hold and pay,
        // whose requests (bound to a key) are the ones that use it.
        let checked = match bound {
            Some(_) => self.proof_keys.check(proof, request, window, now),
            None => possession::check(proof, request, window, now),
        }
        .map_err(ProofRefusal::from)?;
        if bound.is_some_and(|b| *b != checked.jkt) {
            return Err(ProofRefusal::KeyMismatch.into());
        }
        Ok(checked)
    }

    /// Remembers a checked proof's id under the event for the proofs' window: a proof
    /// used before is refused as replayed.
    pub(crate) async fn remember_proof(
        &self,
        event: EventId,
        checked: &CheckedProof,
    ) -> Result<(), EngineError> {
        let ttl = self.config.proofs.replay_ttl();
        let memory = self.proof_memory()?;
        match (memory.first_use(event, &checked.jkt, &checked.jti, ttl)).await? {
            FirstUse::Fresh => Ok(()),
            FirstUse::Replayed => Err(ProofRefusal::Replayed.into()),
            FirstUse::Full => Err(EngineError::Unavailable(
                "the proof-of-possession memory is full".into(),
            )),
        }
    }
}

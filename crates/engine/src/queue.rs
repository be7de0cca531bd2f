//! Joining the line and asking where one stands. A join checks the event's rules
//! (eligibility, the human check: proof of work or a hosted verifier) and the rate
//! limits, then takes a place: in the
//! pre-opening pool, or at the back of the line. The two steps are apart so that the
//! HTTP layer can consult its replay store in between: a refused join changes nothing
//! and a join whose Idempotency-Key was used for another request never takes a place.
//! The personal status compares the ticket's position with the node's cached public
//! snapshot (no store read) and, once admitted, hands out an admission token bound to
//! buyer, session and event, which expires a fixed time after the batch that admitted
//! the buyer: polling does not renew it, and once it has expired the admission is over.

use std::net::IpAddr;

use boxoffice_domain::admission::{earliest_admission_ms, eta_s, jittered_poll_ms, poll_after_ms};
use boxoffice_domain::human_check::HumanCheck;
use boxoffice_domain::possession::{Confirmation, Thumbprint};
use boxoffice_domain::pow;
use boxoffice_domain::token::{Claims, TokenKind};
use boxoffice_domain::{BuyerId, EventId, Millis, SaleStatus};
use serde::Serialize;

use crate::ports::{Begin, Claimed, ClaimedJoins, JoinRecord, ReplayClaim};
use crate::velocity::Origin;
use crate::waiting::limits::Key;
use crate::waiting::{PublicDoc, Refusal, WaitingError, WaitingRules};
use crate::{Engine, EngineError, Identity};

/// Where a buyer in line stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitStatus {
    Waiting,
    Admitted,
    SoldOut,
}

/// A buyer's place in line after joining.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct JoinOutcome {
    /// Signed ticket for GET /v1/queue/status (queueTicket).
    pub queue_ticket: String,
    pub status: WaitStatus,
    /// 1-based place in line; null while in the pre-opening pool (drawn at opening).
    /// Joining again returns the same place.
    #[schema(required, minimum = 1)]
    pub position: Option<u64>,
    /// ceil((position - serving_up_to) / rate); null while the position is not drawn
    /// yet.
    #[schema(required)]
    pub estimated_wait_s: Option<u64>,
    /// Wait at least this long before polling /v1/queue/status (already jittered
    /// ±20 %).
    pub poll_after_ms: u64,
}

/// A buyer's place in line, and their admission once admitted.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct QueueStatus {
    pub event_id: EventId,
    pub status: WaitStatus,
    /// null while in the pre-opening pool.
    #[schema(required)]
    pub position: Option<u64>,
    #[schema(required)]
    pub estimated_wait_s: Option<u64>,
    /// Wait at least this long before polling again.
    pub poll_after_ms: u64,
    /// Present once a pool member's position is drawn: a ticket carrying it, to use
    /// from now on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_ticket: Option<String>,
    /// Present once admitted: send it as the bearer of POST /v1/events/{id}/holds
    /// (admissionToken). The same token on every poll: it expires
    /// admission_token_ttl_s after the batch that admitted the buyer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_token: Option<String>,
    /// Present once admitted: when the admission ends, the same on every poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_expires_at: Option<Millis>,
}

/// A solved proof-of-work challenge, as sent with a join.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
pub struct PowSolution {
    /// The challenge, as GET /v1/events/{id}/queue/challenge gave it.
    pub challenge: String,
    #[schema(max_length = 64)]
    pub nonce: String,
}

/// Who is joining: the verified buyer (`Engine::identify`, once per request) and the
/// client's address.
pub struct Joiner<'a> {
    pub who: &'a Identity,
    pub ip: Option<IpAddr>,
    pub pow: Option<&'a PowSolution>,
    /// The request's proof of possession (`DPoP`), whose key the ticket is bound to.
    pub proof: Option<crate::ProofInput<'a>>,
    /// A hosted verifier's token, when the event asks a hosted human check.
    pub human_token: Option<&'a str>,
}

/// A join that passed every check (limits, rules, proof of work) and has not taken
/// effect yet. Only the engine makes one; a copy runs the same join again (a retry of
/// a join whose record says it ran).
#[derive(Clone, Debug)]
pub struct JoinPass {
    event: EventId,
    buyer: BuyerId,
    session: String,
    open: bool,
    key: Option<Thumbprint>,
}

impl JoinPass {
    pub fn buyer(&self) -> BuyerId {
        self.buyer
    }
}

impl Engine {
    /// Places the buyer in line (or finds their place: joining twice is harmless).
    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    pub async fn join_queue(
        &self,
        event: EventId,
        who: Joiner<'_>,
    ) -> Result<JoinOutcome, WaitingError> {
        let pass = self.check_join(event, who).await?;
        Ok(self.join_checked(pass).await?)
    }

    /// Every check of a join, and nothing else: a refusal here changed nothing but the
    /// rate-limit cells.
    pub async fn check_join(
        &self,
        event: EventId,
        who: Joiner<'_>,
    ) -> Result<JoinPass, WaitingError> {
        let buyer = who.who;
        let now = self.now();
        self.limit_join(buyer, who.ip, now)?;
        let entry = self.event(event).await?;
        if entry.event.status == SaleStatus::Closed {
            return Err(EngineError::SaleClosed.into());
        }
        // This node's copy: a read of the queue store per join would be a round trip
        // on the herd's path for settings that change a few times per sale.
        let rules = self.cached_settings(event).await?.rules;
        check_rules(&rules, buyer)?;
        let hosted = match rules.human_check() {
            HumanCheck::None => None,
            HumanCheck::ProofOfWork => {
                self.check_pow(event, buyer, who.pow, rules.pow_difficulty, now)?;
                None
            }
            HumanCheck::Hosted {
                provider,
                when_down,
            } => Some((provider, when_down)),
        };
        // The proof of possession is checked once the local checks passed (a refused
        // one costs the client nothing to make again), and remembered after the human
        // check: a join refused there uses up no room in the event's proof memory.
        let mode = entry.event.sale.proof_of_possession;
        let proof = self.join_proof(mode, who.proof)?;
        // The only check that costs a call out and uses up a token a person solved.
        if let Some(hosted) = hosted {
            self.check_hosted(event, buyer, who.human_token, who.ip, hosted, now)
                .await?;
        }
        if let Some(proof) = &proof {
            self.remember_proof(event, proof).await?;
        }
        let key = proof.map(|p| p.jkt);
        // After every other check and before the join is kept: the buyer joins the
        // clusters of the device key just proved and of the network, or is refused
        // with nothing joined.
        let origin = Origin {
            ip: who.ip,
            device: key.as_ref().map(|k| k.0.clone()),
        };
        self.signals_at_entry(&entry, buyer.buyer, &origin).await?;
        Ok(JoinPass {
            event,
            buyer: buyer.buyer,
            session: buyer.session.clone(),
            open: entry.event.status == SaleStatus::Open,
            key,
        })
    }

    /// Takes the place a checked join asked for.
    pub async fn join_checked(&self, pass: JoinPass) -> Result<JoinOutcome, EngineError> {
        let now = self.now();
        let place = if pass.open {
            self.placed_in_line(pass.event, pass.buyer, now, None)
                .await?
        } else {
            self.pooled(pass.event, pass.buyer, now).await?
        };
        self.answer_join(pass, place, now).await
    }

    /// `join_checked` under an Idempotency-Key claim taken by `joins`: after opening in
    /// the same step as the place (one script on a single Redis), so the claim decides
    /// before a place is taken and costs no round trip of its own; before opening by
    /// the join replay store's `begin`, ahead of the pool entry's journal. `Err`: the
    /// claim's store failed (whether the claim was taken is unknown). `Refused`: the
    /// claim's answer, and no place was taken. `Ran` is the join's answer under the
    /// caller's claim; `Kept` the same, where `joins` kept `KeptOutcome::Joined` as the
    /// key's answer in its step (a retry runs the join again, to the same place).
    pub async fn join_claimed(
        &self,
        pass: JoinPass,
        joins: &dyn ClaimedJoins,
        claim: &ReplayClaim<'_>,
    ) -> Result<Claimed<Result<JoinOutcome, EngineError>>, EngineError> {
        if !pass.open {
            let replays = joins.replays();
            let begun =
                (replays.begin(claim.key, claim.fingerprint, claim.now, claim.claimant)).await?;
            if !matches!(begun, Begin::Proceed) {
                return Ok(Claimed::Refused(begun));
            }
            return Ok(Claimed::Ran(self.join_checked(pass).await));
        }
        let now = self.now();
        let claimed = join_step("line", joins.join_line(claim, pass.event, pass.buyer)).await?;
        let (first, kept) = match claimed.outcome() {
            Err(begin) => return Ok(Claimed::Refused(begin)),
            Ok(ran) => ran,
        };
        let answer = async {
            let (event, buyer) = (pass.event, pass.buyer);
            let place = self.placed_in_line(event, buyer, now, first?).await?;
            self.answer_join(pass, place, now).await
        };
        Ok(Claimed::of(answer.await, kept))
    }

    /// A place in the pre-opening pool, or in the line if it opened meanwhile.
    async fn pooled(
        &self,
        event: EventId,
        buyer: BuyerId,
        now: Millis,
    ) -> Result<crate::ports::Place, EngineError> {
        // The commitment must exist before the pool can be seen by anyone, and the
        // pool outlives the queue store: journaled before the join.
        self.join_seed(event).await?;
        self.journal_join(JoinRecord {
            event,
            buyer,
            at: now,
            position: None,
            pool: false,
        })
        .await?;
        let place = self.ports.queue.join(event, buyer, false).await?;
        // The line opened meanwhile: a place, journaled as any other; one the ledger
        // refuses is placed again behind the line put back.
        match place.position {
            Some(position) if !self.journal_place(event, buyer, position, now).await? => {
                self.restore_line_behind(event).await?;
                self.placed_in_line(event, buyer, now, None).await
            }
            _ => Ok(place),
        }
    }

    /// The buyer's answer: their place, signed into a queue ticket, and where the line
    /// stands.
    async fn answer_join(
        &self,
        pass: JoinPass,
        place: crate::ports::Place,
        now: Millis,
    ) -> Result<JoinOutcome, EngineError> {
        let JoinPass {
            event,
            buyer,
            session,
            key,
            ..
        } = pass;
        let doc = join_step("doc", self.public_doc(event)).await?;
        let ticket = Claims {
            event: Some(event),
            position: place.position,
            cnf: key.map(|jkt| Confirmation { jkt }),
            ..Claims::new(
                TokenKind::QueueTicket,
                buyer,
                session,
                now.plus_secs(self.config.queue_ticket_ttl_s),
            )
        };
        let (status, wait) = standing(place.position, &doc);
        Ok(JoinOutcome {
            queue_ticket: self.keys.sign(ticket),
            status,
            position: place.position,
            estimated_wait_s: wait,
            poll_after_ms: self.poll_hint(status, place.position, &doc),
        })
    }

    /// A place at the back of the open line, journaled before its buyer hears it, so
    /// the line outlives the queue store (a retried join journals again: the first
    /// record stands). A place the ledger refuses shows the queue store behind the
    /// journal (the position is another buyer's, or this buyer was placed elsewhere):
    /// the journaled line is put back and the buyer placed again, so nobody shares a
    /// position and nobody loses theirs.
    /// `taken`: the place a claimed step took already (`join_claimed`), for the first
    /// round.
    async fn placed_in_line(
        &self,
        event: EventId,
        buyer: BuyerId,
        now: Millis,
        mut taken: Option<crate::ports::Place>,
    ) -> Result<crate::ports::Place, EngineError> {
        for _ in 0..3 {
            let place = match taken.take() {
                Some(place) => place,
                None => join_step("line", self.join_line(event, buyer)).await?,
            };
            let Some(position) = place.position else {
                return Ok(place);
            };
            if self.journal_place(event, buyer, position, now).await? {
                return Ok(place);
            }
            self.restore_line_behind(event).await?;
        }
        Err(line_behind())
    }

    async fn journal_place(
        &self,
        event: EventId,
        buyer: BuyerId,
        position: u64,
        now: Millis,
    ) -> Result<bool, EngineError> {
        let join = JoinRecord {
            event,
            buyer,
            at: now,
            position: Some(position),
            pool: false,
        };
        self.journal_join(join).await
    }

    /// A place at the back of an open line; a line the queue store has not opened
    /// (lost, or the opening not seen yet) is opened or restored first.
    async fn join_line(
        &self,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<crate::ports::Place, EngineError> {
        if let Some(place) = self.ports.queue.join_line(event, buyer).await? {
            return Ok(place);
        }
        self.ensure_line(event).await?;
        self.ports
            .queue
            .join_line(event, buyer)
            .await?
            .ok_or_else(|| EngineError::Unavailable("the line is being brought back; retry".into()))
    }

    /// Where the ticket holder stands; once admitted, carries an admission token bound
    /// to the buyer, the session and the event.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn queue_status(&self, ticket: &str) -> Result<QueueStatus, WaitingError> {
        let now = self.now();
        let claims = self.keys.verify(ticket, TokenKind::QueueTicket, now)?;
        let limit = self.config.waiting.status_per_buyer;
        self.waiting
            .limits
            .check(Key::StatusBuyer(claims.buyer), limit, now)?;
        let event = claims.event.ok_or(EngineError::BadToken(
            boxoffice_domain::token::TokenError::Malformed,
        ))?;
        let doc = self.public_doc(event).await?;
        let (position, fresh_ticket) = match claims.position {
            Some(p) => (Some(p), None),
            None => self.drawn_position(event, &claims).await?,
        };
        let (status, wait) = standing(position, &doc);
        let mut out = QueueStatus {
            event_id: event,
            status,
            position,
            estimated_wait_s: wait,
            poll_after_ms: self.poll_hint(status, position, &doc),
            queue_ticket: fresh_ticket,
            admission_token: None,
            admission_expires_at: None,
        };
        if status == WaitStatus::Admitted {
            let exp = self.admission_expiry(event, position).await?;
            if exp <= now {
                return Err(EngineError::AdmissionExpired.into());
            }
            let admission = Claims {
                kind: TokenKind::Admission,
                position,
                exp,
                ..claims
            };
            out.admission_token = Some(self.keys.sign(admission));
            out.admission_expires_at = Some(exp);
        }
        Ok(out)
    }

    /// An admission lasts `admission_token_ttl_s` from the batch that admitted the
    /// buyer, however often they poll.
    async fn admission_expiry(
        &self,
        event: EventId,
        position: Option<u64>,
    ) -> Result<Millis, EngineError> {
        let admitted_at = match position {
            Some(p) => self.ports.queue.admitted_at(event, p).await?,
            None => None,
        };
        // Admitted with no batch on record: a line whose batches are being put back
        // (a restore writes them after the places). Counting from the line's last move
        // instead would give a buyer whose admission expired a fresh one.
        let Some(at) = admitted_at else {
            return Err(EngineError::Unavailable(
                "the line's admissions are being brought back; retry".into(),
            ));
        };
        let exp = at.plus_secs(self.config.admission_token_ttl_s);
        // Tokens carry whole seconds; say exactly what the token says.
        Ok(Millis(exp.0.div_euclid(1000) * 1000))
    }

    /// A pool member's position once the pool is placed, with a ticket carrying it.
    async fn drawn_position(
        &self,
        event: EventId,
        claims: &Claims,
    ) -> Result<(Option<u64>, Option<String>), EngineError> {
        let place = self.ports.queue.place(event, claims.buyer).await?;
        let Some(position) = place.and_then(|p| p.position) else {
            return Ok((None, None));
        };
        let ticket = Claims {
            position: Some(position),
            ..claims.clone()
        };
        Ok((Some(position), Some(self.keys.sign(ticket))))
    }

    pub async fn queue_state(
        &self,
        event: EventId,
    ) -> Result<crate::ports::QueueState, EngineError> {
        self.event(event).await?;
        Ok(self.ports.queue.state(event).await?)
    }

    fn limit_join(&self, buyer: &Identity, ip: Option<IpAddr>, now: Millis) -> Result<(), Refusal> {
        let cfg = &self.config.waiting;
        if let Some(ip) = ip {
            self.waiting
                .limits
                .check(Key::JoinIp(ip), cfg.join_per_ip, now)?;
        }
        self.waiting
            .limits
            .check(Key::JoinBuyer(buyer.buyer), cfg.join_per_buyer, now)
    }

    fn check_pow(
        &self,
        event: EventId,
        buyer: &Identity,
        solution: Option<&PowSolution>,
        difficulty: u8,
        now: Millis,
    ) -> Result<(), WaitingError> {
        let s = solution.ok_or(Refusal::PowRequired)?;
        let c = self
            .keys
            .verify_bound(
                &s.challenge,
                TokenKind::PowChallenge,
                event,
                &buyer.session,
                now,
            )
            .map_err(|_| Refusal::PowInvalid)?;
        // A challenge issued at a lower difficulty than the event now asks is stale.
        let issued = c.difficulty.unwrap_or(0);
        if c.buyer != buyer.buyer || issued < difficulty {
            return Err(Refusal::PowInvalid.into());
        }
        if !pow::solves(&s.challenge, &s.nonce, issued) {
            return Err(Refusal::PowInvalid.into());
        }
        Ok(())
    }

    /// The pause a buyer is asked to take before polling again (see
    /// `admission::poll_after_ms`), jittered so a crowd does not ask in the same second.
    /// A waiting buyer's answer can change no sooner than the gate, at its fastest,
    /// reaches them; a sold-out line's only when held seats come back, a few at a time
    /// for the front of the line, whom the public stream tells at once.
    fn poll_hint(&self, status: WaitStatus, position: Option<u64>, doc: &PublicDoc) -> u64 {
        let c = &self.config;
        let next_change_ms = match (status, position) {
            (WaitStatus::SoldOut, _) => Some(u64::MAX),
            (WaitStatus::Waiting, Some(p)) => Some(earliest_admission_ms(
                p.saturating_sub(doc.state.serving_up_to),
                doc.ceiling_per_s,
                c.admission_interval_ms + c.waiting.public_doc_ttl_ms,
            )),
            _ => None,
        };
        let base = poll_after_ms(c.poll_after_ms, c.max_poll_after_ms, next_change_ms);
        let random = u64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or([0; 8]),
        );
        jittered_poll_ms(base, random)
    }
}

/// Eligibility from the buyer token alone: no store lookup on the herd's path.
fn check_rules(rules: &WaitingRules, buyer: &Identity) -> Result<(), Refusal> {
    if rules.require_verified && !buyer.verified {
        return Err(Refusal::NotVerified);
    }
    if let Some(cutoff) = rules.accounts_created_before
        && buyer.account_created_at.is_none_or(|at| at >= cutoff)
    {
        return Err(Refusal::AccountTooNew);
    }
    Ok(())
}

/// Status and wait for a position against the line's snapshot.
fn standing(position: Option<u64>, doc: &PublicDoc) -> (WaitStatus, Option<u64>) {
    let s = &doc.state;
    match position {
        Some(p) if p <= s.serving_up_to => (WaitStatus::Admitted, Some(0)),
        _ if s.sold_out => (WaitStatus::SoldOut, Some(0)),
        Some(p) => (
            WaitStatus::Waiting,
            Some(eta_s(p - s.serving_up_to, doc.rate.rate_per_s)),
        ),
        None => (WaitStatus::Waiting, None),
    }
}

/// Told to a joiner whose place the ledger refused three times while the line was put back.
fn line_behind() -> EngineError {
    EngineError::Unavailable("the line is being brought back; retry".into())
}

/// Runs one step of a join, timed into `boxoffice_join_step_seconds{step}` (`line`,
/// `journal`, `doc`): where a slow join waits without a profiler.
pub(crate) async fn join_step<T>(name: &'static str, work: impl Future<Output = T>) -> T {
    crate::timing::timed("boxoffice_join_step_seconds", name, work).await
}

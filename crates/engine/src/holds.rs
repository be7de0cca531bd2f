//! Holds: an admitted buyer claims seats, all or none, for the event's hold TTL.

use std::sync::{Arc, OnceLock};

use boxoffice_domain::possession::{PopMode, Thumbprint};
use boxoffice_domain::token::TokenKind;
use boxoffice_domain::{EventId, HoldId, Millis, SaleStatus, SeatIndex};

use crate::buyers::BuyerSession;
use crate::catalog::EventEntry;
use crate::ports::{
    ArbiterError, ClaimThenHold, Claimed, ClaimedHolds, HoldRequest, HoldView, Released,
    ReplayClaim, SeatChoice,
};
use crate::verified::Verified;
use crate::waiting::Refusal;
use crate::waiting::limits::Key;
use crate::{Engine, EngineError, Origin, Resource};

/// What the buyer asked for, still in public terms (labels, section keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeatSelection {
    Named(Vec<String>),
    BestAvailable {
        section: String,
        quantity: u32,
        adjacent: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldInput {
    pub selection: SeatSelection,
}

/// A buyer whose admission token for an event verified. Only the engine makes one.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Admitted {
    pub event: EventId,
    pub who: BuyerSession,
    /// The key the admission token is bound to (`cnf.jkt`), if any.
    pub key: Option<Thumbprint>,
    /// When the token was found valid, for the checks made at once after it (the
    /// buyer's hold rate limit) without reading the clock again. Not the hold's time: a
    /// request may wait on stores between its checks and its hold.
    pub at: Millis,
}

impl Engine {
    /// Verifies an admission token for `event` (a token verified before is taken from
    /// the cache of verified tokens, checked again only for expiry and event).
    pub fn admitted(&self, event: EventId, admission_token: &str) -> Result<Admitted, EngineError> {
        let now = self.now();
        if let Some(v) = self.verified.get(admission_token, now) {
            if v.event != event {
                return Err(EngineError::BadToken(
                    boxoffice_domain::token::TokenError::WrongEvent,
                ));
            }
            return Ok(Admitted {
                event,
                who: BuyerSession {
                    buyer: v.buyer,
                    session: v.session,
                },
                key: v.key,
                at: now,
            });
        }
        let claims =
            self.keys
                .verify_for_event(admission_token, TokenKind::Admission, event, now)?;
        let verified = Verified {
            event,
            buyer: claims.buyer,
            session: claims.sid.clone(),
            exp: claims.exp,
            key: claims.cnf.as_ref().map(|c| c.jkt.clone()),
        };
        self.verified.insert(admission_token, verified);
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

    /// The proof of possession of a hold request: signed with the key the admission
    /// token is bound to, when the event (`entry`, the admission's) checks proofs.
    pub async fn prove_admission(
        &self,
        entry: &EventEntry,
        admitted: &Admitted,
        input: crate::ProofInput<'_>,
    ) -> Result<(), EngineError> {
        let mode = entry.event.sale.proof_of_possession;
        if mode == PopMode::Off {
            return Ok(());
        }
        // Boxed: a proof's checks are a large future, which a hold's future would carry
        // (and copy when moved) on sales that take no proof.
        Box::pin(self.prove(admitted.event, mode, admitted.key.as_ref(), Some(input))).await
    }

    /// Takes one hold attempt from the buyer's allowance, or refuses with how long to
    /// wait. Callers check it before anything that costs a store write, so a flood is
    /// turned away cheaply and a refused attempt is not remembered as an answer.
    pub fn limit_hold(&self, admitted: &Admitted) -> Result<(), Refusal> {
        let limit = self.config.waiting.hold_per_buyer;
        let key = Key::HoldBuyer(admitted.who.buyer);
        self.waiting.limits.check(key, limit, admitted.at)
    }

    /// Holds the seats for an admitted buyer, all or none. Its span (as `hold_claimed`'s,
    /// and the join's) is at `debug`: these are the sale's most frequent steps, and a
    /// span costs its fields' formatting whether or not a line is written in it.
    #[tracing::instrument(level = "debug", skip_all, fields(event = %admitted.event, hold = tracing::field::Empty))]
    pub async fn hold(
        &self,
        admitted: &Admitted,
        input: &HoldInput,
    ) -> Result<HoldView, EngineError> {
        let now = self.now();
        let entry = self.event(admitted.event).await?;
        let req = self.prepare_hold(&entry, admitted, input, now).await?;
        let result = self.ports.arbiter.hold(&req, now).await;
        self.finish_hold(&req, now, result).await
    }

    /// `hold` under an Idempotency-Key claim taken by `holds` in the same step as the
    /// hold (one Redis script on a single Redis). `Err` is a refusal found before the
    /// claim was asked for (the sale is not open, no such seat): the caller keeps it as
    /// the key's answer the ordinary way. `Refused` is the claim's answer (replay,
    /// mismatch, in flight, full): no hold was tried. `Ran` is the hold's outcome under
    /// the caller's claim; `Kept` the same, already kept as the key's answer by `holds`.
    /// `entry` is the admission's event as the caller read it for the request's other
    /// checks, so a hold looks its event up once (again only if the sale looks shut).
    #[tracing::instrument(level = "debug", skip_all, fields(event = %admitted.event, hold = tracing::field::Empty))]
    pub async fn hold_claimed(
        &self,
        entry: &Arc<EventEntry>,
        admitted: &Admitted,
        input: &HoldInput,
        origin: &Origin,
        holds: &dyn ClaimedHolds,
        claim: &ReplayClaim<'_>,
    ) -> Result<Claimed<Result<HoldView, EngineError>>, EngineError> {
        // The claim's time: one clock read for the claim and the hold.
        let now = claim.now;
        let req = self.prepare_hold(entry, admitted, input, now).await?;
        // The buyer's signals after the hold's own checks (a hold they refuse joins the
        // buyer to no cluster) and before the hot store's step (a hold the signals
        // refuse takes nothing); a refusal here, as any before the claim, is kept under
        // the Idempotency-Key by the caller, and a retry of a hold already taken is
        // answered with that hold.
        if self.velocity.is_some() && entry.event.sale.velocity.is_some() {
            // Boxed: the signals' step is a large future that every hold's future would
            // otherwise carry (and copy when moved) on sales without velocity rules.
            Box::pin(self.signals_at_entry(entry, admitted.who.buyer, origin)).await?;
        }
        let (result, kept) = match holds.hold(claim, &req, now).await?.outcome() {
            Err(begin) => return Ok(Claimed::Refused(begin)),
            Ok(ran) => ran,
        };
        // A kept outcome is never `UnknownEvent`, so `finish_hold` answers it as it is.
        let answer = self.finish_hold(&req, now, result).await;
        Ok(Claimed::of(answer, kept))
    }

    /// Everything a hold checks and does before the hot store's step: the sale is open,
    /// the selection names seats of the event, and (with proof of possession) the new
    /// hold's id is bound to the buyer's key, so a hold never exists unbound.
    async fn prepare_hold(
        &self,
        entry: &Arc<EventEntry>,
        admitted: &Admitted,
        input: &HoldInput,
        now: Millis,
    ) -> Result<HoldRequest, EngineError> {
        let (event, who) = (admitted.event, &admitted.who);
        let mut entry = entry.clone();
        if entry.event.status != SaleStatus::Open {
            // Another node may have opened the sale since this node cached the event.
            entry = self.reload_event(event).await?;
        }
        if entry.event.status != SaleStatus::Open {
            return Err(EngineError::SaleNotOpen);
        }
        let req = HoldRequest {
            hold: HoldId::random(event),
            buyer: who.buyer,
            choice: resolve(&entry, &input.selection)?,
            expires_at: now.plus_secs(entry.event.sale.hold_ttl_s as u64),
            // The hold answers to the key its admission was proven with, for as long
            // as the hot store keeps it: its checkout and release need that key.
            key: match entry.event.sale.proof_of_possession {
                PopMode::Off => None,
                _ => admitted.key.clone(),
            },
        };
        tracing::Span::current().record("hold", tracing::field::display(req.hold));
        Ok(req)
    }

    /// After the hot store's step: an event the hot store lost is rebuilt from the
    /// ledger (once across the nodes that notice at the same moment) and the hold
    /// tried again; the outcome is counted.
    async fn finish_hold(
        &self,
        req: &HoldRequest,
        now: Millis,
        result: Result<HoldView, ArbiterError>,
    ) -> Result<HoldView, EngineError> {
        let event = req.hold.event;
        let result = match result {
            Err(ArbiterError::UnknownEvent) => {
                // Boxed: a rebuild is rare and its future large, and every hold's
                // future would otherwise carry its size (and copy it when moved).
                Box::pin(self.rebuild_lost(event)).await?;
                self.ports.arbiter.hold(req, now).await
            }
            other => other,
        };
        self.dashboards.hold(event, now, result.is_ok());
        holds_counted(result.is_ok()).increment(1);
        Ok(result?)
    }

    /// The hold, if it belongs to the caller. Someone else's hold is "not found".
    pub async fn get_hold(
        &self,
        who: &BuyerSession,
        hold: HoldId,
    ) -> Result<HoldView, EngineError> {
        match self.ports.arbiter.get(hold).await? {
            Some(h) if h.buyer == who.buyer => Ok(h),
            _ => Err(EngineError::NotFound(Resource::Hold)),
        }
    }

    /// Gives the seats back early. A hold being paid for cannot be released.
    #[tracing::instrument(skip_all, fields(hold = %hold))]
    pub async fn release_hold(
        &self,
        who: &BuyerSession,
        hold: HoldId,
    ) -> Result<HoldView, EngineError> {
        let released = ClaimThenHold::release_checked(&*self.ports.arbiter, hold, who.buyer).await;
        self.after_release(hold, who, released).await
    }

    /// `release_hold` under an Idempotency-Key claim taken by `holds` in the same step as
    /// the release (one Redis script on a single Redis, which also counts the buyer's
    /// shopping finished). `Err` is the store's failure (whether the claim was taken is
    /// unknown); `Refused` is the claim's answer (replay, mismatch, in flight, full):
    /// nothing was released. `Ran` is the release's outcome under the caller's claim.
    #[tracing::instrument(skip_all, fields(hold = %hold))]
    pub async fn release_hold_claimed(
        &self,
        who: &BuyerSession,
        hold: HoldId,
        holds: &dyn ClaimedHolds,
        claim: &ReplayClaim<'_>,
    ) -> Result<Claimed<Result<HoldView, EngineError>>, EngineError> {
        let (released, kept) = match holds.release(claim, hold, who.buyer).await?.outcome() {
            Err(begin) => return Ok(Claimed::Refused(begin)),
            Ok(ran) => ran,
        };
        let answer = self.after_release(hold, who, released).await;
        Ok(Claimed::of(answer, kept))
    }

    /// After a release: a buyer who gave seats back has finished shopping, counted in
    /// the waiting room unless the release's step counted them already.
    async fn after_release(
        &self,
        hold: HoldId,
        who: &BuyerSession,
        released: Result<Released, ArbiterError>,
    ) -> Result<HoldView, EngineError> {
        let released = released?;
        if released.now && !released.finish_counted {
            // Best effort: a lost count only delays the next batch until the
            // admission token's lifetime ends.
            if let Err(e) = self.shopper_finished(hold.event, who.buyer).await {
                tracing::warn!(error = %e, "could not count a finished shopper");
            }
        }
        Ok(released.hold)
    }

    pub fn seat_labels(&self, entry: &EventEntry, seats: &[SeatIndex]) -> Vec<String> {
        seats
            .iter()
            .map(|&i| entry.event.seats[i as usize].label.clone())
            .collect()
    }
}

/// Turns public seat labels and section keys into the arbiter's indices. A request that
/// alone asks for more than the per-buyer limit is refused here, so the buyer hears
/// `limit_exceeded` rather than a bad quantity; the promise itself (P6) is kept by the
/// hot store's count of held plus sold seats and by the ledger's `buyer_within_limit`
/// CHECK (docs/ARCHITECTURE.md P6).
fn resolve(entry: &EventEntry, selection: &SeatSelection) -> Result<SeatChoice, EngineError> {
    let limit = entry.event.sale.max_tickets_per_buyer;
    match selection {
        SeatSelection::Named(labels) => {
            if labels.is_empty() {
                return Err(EngineError::Invalid(
                    "seat_ids must name at least one seat".into(),
                ));
            }
            if labels.len() > limit as usize {
                return Err(EngineError::LimitExceeded { limit });
            }
            let mut seats = Vec::with_capacity(labels.len());
            for label in labels {
                let seat = *entry
                    .seat_index
                    .get(label)
                    .ok_or(EngineError::NotFound(Resource::Seat))?;
                if seats.contains(&seat) {
                    return Err(EngineError::Invalid(format!("seat {label} is named twice")));
                }
                seats.push(seat);
            }
            Ok(SeatChoice::Named(seats))
        }
        SeatSelection::BestAvailable {
            section,
            quantity,
            adjacent,
        } => {
            let section = entry
                .event
                .section_index(section)
                .ok_or(EngineError::NotFound(Resource::Section))?;
            if *quantity == 0 {
                return Err(EngineError::Invalid("quantity must be at least 1".into()));
            }
            if *quantity > limit {
                return Err(EngineError::LimitExceeded { limit });
            }
            Ok(SeatChoice::BestAvailable {
                section,
                quantity: *quantity,
                adjacent: *adjacent,
            })
        }
    }
}

/// The series of `boxoffice_holds_total` for a hold won or lost, looked up once (after
/// the recorder is installed, at the first hold): `counter!` with a label builds the
/// label set and searches the registry each time, and every hold counts itself.
fn holds_counted(won: bool) -> &'static metrics::Counter {
    static SERIES: OnceLock<[metrics::Counter; 2]> = OnceLock::new();
    let [won_series, lost_series] = SERIES.get_or_init(|| {
        ["won", "lost"]
            .map(|outcome| metrics::counter!("boxoffice_holds_total", "outcome" => outcome))
    });
    if won { won_series } else { lost_series }
}

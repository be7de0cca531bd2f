//! The swap: one buyer taking one listing, as a state machine the ledger holds
//! (`boxoffice_domain::exchange::SwapState`). The listing is reserved and the swap
//! written before any money moves; then each step is one provider call keyed by the
//! swap and one conditional move in the ledger:
//!
//! 1. **charge** (`reserved → charged`): authorize and capture the buyer's payment,
//!    keyed by the swap's charge id. Declined or never made: `reserved → undone`, the
//!    listing open again. A payment that needs the buyer at their bank (3-D Secure)
//!    leaves the swap `reserved` with the charge's reference recorded: the provider's
//!    webhook (or the sweep, asking) charges it once approved, and undoes it when
//!    declined or still waiting after the event's `payment_grace_s` (voided first).
//! 2. **move** (`charged → moved`): the ledger gives the ticket to the buyer at a new
//!    version in one transaction (old barcode refused at the door); a ticket that can
//!    no longer move (scanned, its order cancelled, the buyer at their limit) sends the
//!    swap to `refunding` instead.
//! 3. **pay out** (`moved → done`): the seller's order is refunded the face value less
//!    the fee, keyed by `<swap>.seller`.
//! 4. **undo** (`refunding → undone`): the buyer's charge is refunded, keyed by it. A
//!    charge captured after another driver undid the swap (it found the provider
//!    silent) moves the swap back (`undone → refunding`) to this step.
//!
//! The purchase is a payment under the event's velocity rules as a checkout is
//! (`velocity`): refused before the listing is reserved when over a limit, its subjects
//! stashed before the provider hears of it, and its decline counted once, by whichever
//! driver's move to `undone` ended the swap on a decline (the buyer's request, the
//! webhook or the sweep).
//!
//! A crash between a call and its move repeats the call, which the provider answers
//! without moving money again; a swap left unfinished is driven on by the exchange
//! worker (`exchange_step`, after `recovery_after_s`) and, in embedded mode, at start.

use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{ListingId, Millis, Money, OrderId, SwapId};
use serde::Serialize;

use super::{ExchangeRefusal, refused};
use crate::holds::Admitted;
use crate::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, Moved, NextAction, PaymentGateway, ProviderState,
    Reserve, Swap, authorize,
};
use crate::velocity::Origin;
use crate::worker::Outcome;
use crate::{Engine, EngineError, Resource};

/// Most swaps one sweep takes up.
const SWEEP_PAGE: u32 = 200;

/// A swap as its buyer and seller see it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Swap)]
pub struct SwapView {
    pub swap_id: SwapId,
    pub listing_id: ListingId,
    pub ticket_id: boxoffice_domain::ticket::TicketId,
    pub state: SwapState,
    /// What the buyer pays.
    pub price: Money,
    /// What the seller gets back: the price less the event's fee.
    pub payout: Money,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// Only while `reserved` waiting for the buyer at their bank (3-D Secure): where to
    /// send them. The provider's webhook then finishes the swap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_action: Option<NextAction>,
}

impl SwapView {
    pub(super) fn of(s: &Swap) -> SwapView {
        SwapView {
            swap_id: s.id,
            listing_id: s.listing,
            ticket_id: s.ticket,
            state: s.state,
            price: s.price,
            payout: s.payout,
            created_at: s.created_at,
            updated_at: s.updated_at,
            next_action: None,
        }
    }
}

/// Who drives a swap: the buyer's own request, from where it came (which made the
/// charge's first call and knows its answer), the sweep (which asks the provider what
/// happened, through the paced door) or the provider's webhook (which asks too,
/// directly, and leaves to the sweep a charge the provider does not show yet: the
/// buyer's first call may still be on its way).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver<'a> {
    Buyer(&'a Origin),
    Sweep,
    Webhook,
}

/// What the charge step came to.
enum Charge {
    /// The swap moved (to `charged`, or `undone` with no reason to give).
    Moved,
    /// Declined: the swap is `undone`, for this reason.
    Declined(String),
    /// Nothing to do now: the buyer is at their bank (with where to send them, for the
    /// buyer's own request), or the provider has not said yet.
    Waiting(Option<NextAction>),
}

impl Engine {
    /// POST /v1/listings/{id}/purchase: an admitted buyer takes the listing, paying
    /// with `payment_method` from `origin` (for the velocity limits, as at checkout).
    /// Answers the swap as it ended (done, or undone with the reason), or as it stands
    /// when the provider did not answer in time.
    #[tracing::instrument(skip_all, fields(listing = %id))]
    pub async fn buy_listing(
        &self,
        admitted: &Admitted,
        id: ListingId,
        payment_method: &str,
        origin: &Origin,
    ) -> Result<SwapView, EngineError> {
        let port = self.exchange_port()?;
        let listing = (port.listing(id).await?)
            .filter(|l| l.event == admitted.event)
            .ok_or(EngineError::NotFound(Resource::Listing))?;
        if listing.seller == admitted.who.buyer {
            return Err(ExchangeRefusal::OwnListing.into());
        }
        let now = self.now();
        let rules = self.exchange_rules(listing.event, now).await?;
        let entry = self.event(listing.event).await?;
        let limit = entry.event.sale.max_tickets_per_buyer;
        let facts = (self.tickets_port()?.ticket(listing.ticket).await?)
            .ok_or(EngineError::NotFound(Resource::Listing))?;
        // Velocity before the listing is reserved: a refused purchase changes nothing
        // and the provider never hears of it.
        let velocity = entry.event.sale.velocity.as_ref();
        let buyer = admitted.who.buyer;
        (self.velocity_gate(listing.event, velocity, buyer, payment_method, origin)).await?;
        let swap = Swap {
            id: SwapId::random(),
            listing: id,
            ticket: listing.ticket,
            event: listing.event,
            seller: listing.seller,
            buyer: admitted.who.buyer,
            seller_order: facts.ticket.order,
            charge: OrderId::random(),
            charge_ref: None,
            price: listing.price,
            currency: entry.event.currency.clone(),
            payout: rules.payout(listing.price),
            payment_method: payment_method.to_owned(),
            state: SwapState::Reserved,
            created_at: now,
            updated_at: now,
        };
        let reserve = Reserve {
            swap: swap.clone(),
            max_per_buyer: limit,
        };
        if let Err(no) = port.reserve(&reserve).await? {
            return Err(refused(no, limit));
        }
        tracing::Span::current().record("swap", tracing::field::display(swap.id));
        // What a later decline of this purchase counts under, kept before the provider
        // can decline it by webhook.
        let grace_s = u64::from(entry.event.sale.payment_grace_s);
        (self.velocity_stash((&swap).into(), velocity, grace_s, payment_method, origin)).await;
        let (ended, next_action) = self.drive(swap, Driver::Buyer(origin)).await?;
        match ended.state {
            SwapState::Done => {
                metrics::counter!("boxoffice_exchange_swaps_total", "outcome" => "done")
                    .increment(1);
            }
            SwapState::Undone => {
                metrics::counter!("boxoffice_exchange_swaps_total", "outcome" => "undone")
                    .increment(1);
            }
            _ => {}
        }
        Ok(SwapView {
            next_action,
            ..SwapView::of(&ended)
        })
    }

    /// A provider's webhook about a swap's charge: drives the swap from what the
    /// provider says now.
    pub(crate) async fn swap_webhook(&self, swap: Swap) -> Result<Swap, EngineError> {
        if swap.state.is_final() {
            return Ok(swap);
        }
        Ok(self.drive(swap, Driver::Webhook).await?.0)
    }

    /// The exchange worker's step: drives every swap idle for `recovery_after_s`.
    pub async fn exchange_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let idle =
            i64::try_from(self.config.recovery_after_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        self.exchange_sweep(Millis(now.0.saturating_sub(idle)))
            .await
    }

    /// Drives every unfinished swap last moved before `before` to a final state, as far
    /// as the provider answers; returns how many ended.
    pub async fn exchange_sweep(&self, before: Millis) -> Result<Outcome, EngineError> {
        let Some(port) = self.exchange.as_ref() else {
            return Ok(Outcome { done: 0 });
        };
        let mut done = 0;
        loop {
            let page = port.unfinished_swaps(before, SWEEP_PAGE).await?;
            let full = page.len() == SWEEP_PAGE as usize;
            // As many swaps at once as the sweep may have provider calls in flight: each
            // step of a swap is conditional on its state, so two drivers never both move it.
            let moved = self
                .count_in_flight(page, |swap| async move {
                    let id = swap.id;
                    match self.drive(swap, Driver::Sweep).await {
                        Ok((s, _)) => s.state.is_final(),
                        Err(e) => {
                            tracing::warn!(swap = %id, error = %e, "swap not finished yet");
                            false
                        }
                    }
                })
                .await;
            done += moved;
            // A full page that moved nothing would be read again as it is.
            if !full || moved == 0 {
                break;
            }
        }
        Ok(Outcome { done })
    }

    /// Drives one swap as the sweep does (through the paced door, asking the provider
    /// what an earlier call did): the event's cancellation refunding a swap's buyer.
    pub(crate) async fn drive_swap(&self, swap: Swap) -> Result<Swap, EngineError> {
        Ok(self.drive(swap, Driver::Sweep).await?.0)
    }

    /// Runs the swap's steps until it ends, or a step cannot be made now (the provider
    /// did not answer, the buyer is at their bank): the swap then stays where it is for
    /// the webhook or the sweep, and the answer says where to send a waiting buyer.
    async fn drive(
        &self,
        mut swap: Swap,
        by: Driver<'_>,
    ) -> Result<(Swap, Option<NextAction>), EngineError> {
        let port = self.exchange_port()?;
        let pay: &dyn PaymentGateway = match by {
            Driver::Buyer(_) | Driver::Webhook => &*self.ports.payments,
            Driver::Sweep => &*self.recovery_payments,
        };
        let mut declined = None;
        while !swap.state.is_final() {
            let now = self.now();
            match swap.state {
                SwapState::Reserved => match self.charge(&swap, pay, by, now).await? {
                    Charge::Moved => {}
                    Charge::Declined(reason) => declined = Some(reason),
                    Charge::Waiting(next) => {
                        let swap = port.swap(swap.id).await?.unwrap_or(swap);
                        return Ok((swap, next));
                    }
                },
                SwapState::Charged => {
                    let limit = self
                        .event(swap.event)
                        .await?
                        .event
                        .sale
                        .max_tickets_per_buyer;
                    match port.move_ticket(swap.id, limit, now).await? {
                        Moved::Moved(ticket) => {
                            let seat = ticket.seat.as_str();
                            self.hot_store_gives(swap.event, seat, swap.seller, swap.buyer)
                                .await;
                        }
                        Moved::Refused(no) => {
                            tracing::info!(swap = %swap.id, refusal = ?no, "exchanged ticket could not move");
                        }
                        Moved::NotCharged(_) => {}
                    }
                }
                SwapState::Moved => self.pay_out(&swap, pay, now).await?,
                SwapState::Refunding => {
                    let reference = charge_ref(&swap)?;
                    pay.refund(swap.charge, reference)
                        .await
                        .map_err(unavailable)?;
                    port.advance(swap.id, SwapState::Refunding, SwapState::Undone, None, now)
                        .await?;
                }
                SwapState::Done | SwapState::Undone => {}
            }
            swap = port
                .swap(swap.id)
                .await?
                .ok_or_else(|| EngineError::Internal("a swap vanished".into()))?;
        }
        match declined {
            Some(reason) if swap.state == SwapState::Undone => {
                Err(EngineError::PaymentDeclined(reason))
            }
            _ => Ok((swap, None)),
        }
    }

    /// Whether a swap whose payment waits for the buyer (3-D Secure) may wait on: for
    /// the event's `payment_grace_s` from its reservation, as a checkout's pin does.
    async fn may_wait(&self, swap: &Swap, now: Millis) -> Result<bool, EngineError> {
        let grace = self.event(swap.event).await?.event.sale.payment_grace_s;
        Ok(now < swap.created_at.plus_secs(u64::from(grace)))
    }

    /// `reserved → charged` (or `undone`). The buyer's request authorizes; the sweep and
    /// the webhook ask the provider what the first call did. A decline counts toward
    /// velocity, by the driver whose move undid the swap.
    async fn charge(
        &self,
        swap: &Swap,
        pay: &dyn PaymentGateway,
        by: Driver<'_>,
        now: Millis,
    ) -> Result<Charge, EngineError> {
        let port = self.exchange_port()?;
        let found = match by {
            Driver::Buyer(origin) => {
                let req = AuthorizeRequest {
                    order: swap.charge,
                    amount: swap.price,
                    currency: swap.currency.clone(),
                    payment_method: swap.payment_method.clone(),
                };
                match authorize(pay, &req).await.map_err(unavailable)? {
                    AuthorizeOutcome::Approved { reference } => {
                        Some((reference, ProviderState::Authorized))
                    }
                    AuthorizeOutcome::ActionRequired {
                        reference,
                        next_action,
                    } => {
                        // The buyer goes to their bank; the webhook finishes the swap.
                        // The reference is recorded, so the provider is read by it.
                        let r = Some(reference.as_str());
                        port.advance(swap.id, SwapState::Reserved, SwapState::Reserved, r, now)
                            .await?;
                        return Ok(Charge::Waiting(Some(next_action)));
                    }
                    AuthorizeOutcome::Declined { reason } => {
                        let undid = port
                            .advance(swap.id, SwapState::Reserved, SwapState::Undone, None, now)
                            .await?;
                        if undid {
                            let at_once = Some((swap.payment_method.as_str(), origin));
                            self.velocity_declined(swap.into(), at_once).await;
                        }
                        return Ok(Charge::Declined(reason));
                    }
                }
            }
            Driver::Sweep | Driver::Webhook => {
                let inquiry = Inquiry {
                    order: swap.charge,
                    reference: swap.charge_ref.clone(),
                    created_at: swap.created_at,
                };
                let p = pay.inquire(&inquiry).await.map_err(unavailable)?;
                // Only the sweep, which waited `recovery_after_s`, takes "nothing" as
                // never charged: a webhook may come before the buyer's first call lands.
                if p.is_none() && by == Driver::Webhook {
                    return Ok(Charge::Waiting(None));
                }
                p.map(|p| (p.reference, p.state))
            }
        };
        let declined = matches!(found, Some((_, ProviderState::Declined)));
        let next = match found {
            Some((r, ProviderState::Authorized)) => {
                // Another driver may have ended the swap while the provider thought (a
                // sweep that heard nothing of this authorization yet): then no money is
                // taken, the authorization is cancelled instead.
                let current = port.swap(swap.id).await?.map(|s| s.state);
                if current != Some(SwapState::Reserved) {
                    tracing::info!(swap = %swap.id, state = ?current, "a swap ended while its charge was authorized; voiding it");
                    pay.void(swap.charge, &r).await.map_err(unavailable)?;
                    return Ok(Charge::Moved);
                }
                pay.capture(swap.charge, &r).await.map_err(unavailable)?;
                Some(r)
            }
            Some((r, ProviderState::Captured)) => Some(r),
            Some((r, ProviderState::RequiresAction)) => {
                // The buyer is at their bank: they have the grace period, then the
                // payment is cancelled (its approval can come no more) and the swap
                // undone.
                if self.may_wait(swap, now).await? {
                    return Ok(Charge::Waiting(None));
                }
                pay.void(swap.charge, &r).await.map_err(unavailable)?;
                None
            }
            _ => None,
        };
        match next {
            Some(r) => {
                let charged = port.advance(
                    swap.id,
                    SwapState::Reserved,
                    SwapState::Charged,
                    Some(&r),
                    now,
                );
                if !charged.await? {
                    self.give_back_a_charge_undone_meanwhile(swap, &r, now)
                        .await?;
                }
                Ok(Charge::Moved)
            }
            None => {
                let undid = port
                    .advance(swap.id, SwapState::Reserved, SwapState::Undone, None, now)
                    .await?;
                if undid && declined {
                    // A decline that came later (3-D Secure failed) counts as one given
                    // at once, from what the purchase stashed.
                    self.velocity_declined(swap.into(), None).await;
                }
                Ok(Charge::Moved)
            }
        }
    }

    /// The charge was captured, but another driver ended the swap between the check
    /// before the capture and the capture (it took the provider's silence for "never
    /// charged"): the swap goes back from `undone` to `refunding`, its listing left open
    /// to others, and the buyer's money goes back as from any refunding swap: the drive
    /// goes on to the refund, and a refund that fails is retried by the sweep until it
    /// is made (it used to be tried once, and a failure left the buyer charged with
    /// nothing to show but the audit's report). A swap another driver charged keeps the
    /// charge; of two drivers here, one moves the swap and the other finds it moved.
    async fn give_back_a_charge_undone_meanwhile(
        &self,
        swap: &Swap,
        reference: &str,
        now: Millis,
    ) -> Result<(), EngineError> {
        let port = self.exchange_port()?;
        let (from, to) = (SwapState::Undone, SwapState::Refunding);
        if port
            .advance(swap.id, from, to, Some(reference), now)
            .await?
        {
            tracing::warn!(swap = %swap.id, "a swap undone while its charge was captured; refunding the charge");
        }
        Ok(())
    }

    /// `moved → done`: the seller's order gives back the payout, keyed by the swap.
    async fn pay_out(
        &self,
        swap: &Swap,
        pay: &dyn PaymentGateway,
        now: Millis,
    ) -> Result<(), EngineError> {
        if swap.payout.0 > 0 {
            let order = (self.ports.ledger.order(swap.seller_order).await?)
                .ok_or_else(|| EngineError::Internal("the seller's order vanished".into()))?;
            let reference = (order.payment_ref.as_deref())
                .ok_or_else(|| EngineError::Internal("the seller's order has no payment".into()))?;
            let key = format!("{}.seller", swap.id);
            pay.refund_part(swap.seller_order, reference, swap.payout, &key)
                .await
                .map_err(unavailable)?;
        }
        self.exchange_port()?
            .advance(swap.id, SwapState::Moved, SwapState::Done, None, now)
            .await?;
        Ok(())
    }
}

fn charge_ref(swap: &Swap) -> Result<&str, EngineError> {
    swap.charge_ref
        .as_deref()
        .ok_or_else(|| EngineError::Internal("a charged swap has no payment reference".into()))
}

fn unavailable(e: crate::ports::PaymentError) -> EngineError {
    EngineError::Unavailable(format!("payment provider: {e}"))
}

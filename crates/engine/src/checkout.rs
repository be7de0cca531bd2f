//! Checkout: authorize → commit → capture (docs/ARCHITECTURE.md §3). The order row exists before the
//! provider is called and every step is a conditional move in the ledger, so a crash or
//! a race at any point leaves a state that `recovery` can finish, and nobody is charged
//! for a seat they did not get.

use boxoffice_domain::ticket::AttendeeName;
use boxoffice_domain::{HoldId, HoldState, Millis, OrderEvent, OrderId, OrderState, SaleStatus};
use std::sync::{Arc, OnceLock};

use crate::buyers::BuyerSession;
use crate::order_view::OrderView;
use crate::ports::{
    ArbiterError, AuthorizeOutcome, AuthorizeRequest, Commit, HoldView, IdempotencyStore,
    InsertOrder, KeptMove, Lease, LedgerError, NextAction, Order, OrderSeat, ProviderPayment,
    ProviderState, RenderKept, ReplayKey, StoredResponse, authorize,
};
use crate::velocity::Origin;
use crate::{Engine, EngineError, Resource};

/// What a live checkout needs to keep its confirmed answer in the ledger write that
/// records the capture (`Engine::checkout_keeping`): the replay store, the key the
/// request claimed in it with its claim's lease, and the route's rendering of a confirmed order (the engine
/// knows no route's answers). Only the capture of the checkout's own confirmed path
/// keeps with it; every other outcome is kept by the caller, as before.
pub struct KeepConfirmed {
    replays: Arc<dyn IdempotencyStore>,
    key: Arc<ReplayKey>,
    lease: Lease,
    render: Arc<RenderKept>,
    kept: OnceLock<StoredResponse>,
}

impl KeepConfirmed {
    pub fn new(
        replays: Arc<dyn IdempotencyStore>,
        key: Arc<ReplayKey>,
        lease: Lease,
        render: Arc<RenderKept>,
    ) -> KeepConfirmed {
        KeepConfirmed {
            replays,
            key,
            lease,
            render,
            kept: OnceLock::new(),
        }
    }

    /// The answer the capture's write kept as the key's, if it kept one: the answer a
    /// retry is replayed, so the one to send.
    pub fn into_kept(self) -> Option<StoredResponse> {
        self.kept.into_inner()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckoutOutcome {
    /// The seats are the buyer's (captured, or capture being retried).
    Confirmed(OrderView),
    /// The provider has not answered; the hold stays pinned while recovery asks.
    Pending(OrderView),
    /// The buyer must act (3-D Secure); the provider's webhook completes the order.
    ActionRequired(OrderView, NextAction),
}

impl Engine {
    /// A checkout naming no attendees, whose origin is unknown (no network or device
    /// limits apply).
    pub async fn checkout(
        &self,
        who: &BuyerSession,
        hold: HoldId,
        payment_method: &str,
    ) -> Result<CheckoutOutcome, EngineError> {
        self.checkout_with(who, hold, payment_method, Vec::new(), &Origin::default())
            .await
    }

    /// A checkout with the attendee's name for each seat, in the hold's order (`names`
    /// empty: none given), from `origin` (the client's network and device, for the
    /// velocity limits). The event says whether names are required, allowed or not
    /// taken; the names are recorded with the order and printed on its tickets.
    pub async fn checkout_with(
        &self,
        who: &BuyerSession,
        hold: HoldId,
        payment_method: &str,
        names: Vec<AttendeeName>,
        origin: &Origin,
    ) -> Result<CheckoutOutcome, EngineError> {
        self.checkout_keeping(who, hold, payment_method, names, origin, None)
            .await
    }

    /// `checkout_with`, whose confirmed answer is kept by `keep` in the write that
    /// records the capture, where its replay store keeps answers in the ledger's
    /// database (`IdempotencyStore::apply_kept`): the request's last ledger write and
    /// the keeping of its answer are one. `KeepConfirmed::into_kept` then holds the
    /// answer kept, which is the one to send; `None` there (another outcome, a capture
    /// that lost its race, a store that keeps answers elsewhere) leaves the keeping to
    /// the caller, as for `checkout_with`.
    #[tracing::instrument(skip_all, fields(hold = %hold))]
    pub async fn checkout_keeping(
        &self,
        who: &BuyerSession,
        hold: HoldId,
        payment_method: &str,
        names: Vec<AttendeeName>,
        origin: &Origin,
        keep: Option<&KeepConfirmed>,
    ) -> Result<CheckoutOutcome, EngineError> {
        // A hold that already has an order reports that order: retries and second tabs.
        // Only a hold past `held` can have one (its order is written after its pin, and
        // a pin never goes back), so a held hold, every first checkout, skips the
        // ledger read. Were the hot store to have lost a pin, the ledger's one order a
        // hold still finds the first order (`InsertOrder::Exists` below).
        let view = step("get_hold", self.get_hold(who, hold)).await;
        if !matches!(&view, Ok(v) if v.state == HoldState::Held)
            && let Some(order) =
                step("order_of_hold", self.ports.ledger.order_of_hold(hold)).await?
        {
            return self.owned(who, &order).and_then(|o| outcome_of(&o));
        }
        let view = view?;
        match view.state {
            HoldState::Held => {}
            HoldState::Expired => return Err(EngineError::HoldExpired),
            HoldState::CheckingOut | HoldState::PaymentPending | HoldState::Sold => {
                return Err(EngineError::CheckoutInProgress);
            }
            HoldState::Released => return Err(EngineError::HoldNotActive(HoldState::Released)),
        }
        let entry = step("event", self.event(hold.event)).await?;
        if entry.event.status == SaleStatus::Closed && self.event_is_cancelled(hold.event).await? {
            return Err(EngineError::EventCancelled);
        }
        let names = crate::tickets::checkout_names(&entry.event, names, view.seats.len())?;
        // Velocity before the hold is pinned: a refused checkout changes nothing and
        // the provider never hears of it.
        let rules = entry.event.sale.velocity.as_ref();
        let gate = self.velocity_gate(hold.event, rules, who.buyer, payment_method, origin);
        step("velocity_gate", gate).await?;
        let now = self.now();
        let order = new_order(
            &view,
            self.seat_labels(&entry, &view.seats),
            names,
            entry.event.currency.clone(),
            now,
        );
        let pinned_until = now.plus_secs(entry.event.sale.payment_grace_s as u64);
        // Pinning is the atomic step that lets exactly one checkout of a hold proceed.
        match step(
            "pin",
            self.ports.arbiter.pin(hold, order.id, pinned_until, now),
        )
        .await
        {
            Ok(_) => {}
            Err(ArbiterError::WrongState(_)) => return Err(EngineError::CheckoutInProgress),
            Err(e) => return Err(e.into()),
        }
        match step("insert_order", self.ports.ledger.insert_order(&order)).await? {
            InsertOrder::Inserted => {}
            InsertOrder::Exists(first) => {
                if first.id != order.id {
                    // The hot store had lost the first order's pin (a failover), so
                    // this checkout pinned the hold for an order the ledger refused.
                    let grace_s = entry.event.sale.payment_grace_s;
                    self.give_hold_back_to(&first, order.id, grace_s).await;
                }
                return outcome_of(&first);
            }
            InsertOrder::SeatSold { seat_id } => {
                // The hot store offered a seat the ledger sold (it lost track of a sale):
                // this hold is dead before any card is authorized, and the hot store is
                // told, so nobody else is offered that seat (P5). Once it agrees, the
                // hold is released: marking its seats sold ends it, but when the
                // ledger's sale was undone before the seats were read there is nothing
                // to mark, and it would stay pinned for an order that does not exist.
                // When the hot store could not be told, the hold is left to expire
                // (released, the seats the ledger sold would be offered as free), as a
                // commit that loses leaves it.
                tracing::info!(hold = %hold, seat = %seat_id, "hold on a seat the ledger sold");
                if self.agree_with_ledger_on(&order).await {
                    self.release_quietly(hold).await;
                }
                return Err(EngineError::SeatSold);
            }
            InsertOrder::EventCancelled => {
                // This node's cached status lagged the cancellation: the hold is dead,
                // and no card is authorized for an event whose refund job has started.
                self.release_quietly(hold).await;
                return Err(EngineError::EventCancelled);
            }
        }
        // What a later decline of this checkout counts under, kept before the provider
        // can decline it by webhook.
        let grace_s = entry.event.sale.payment_grace_s as u64;
        let stash = self.velocity_stash((&order).into(), rules, grace_s, payment_method, origin);
        step("velocity_stash", stash).await;
        let outcome = self
            .pay(
                &order,
                payment_method,
                origin,
                entry.event.sale.max_tickets_per_buyer,
                keep,
            )
            .await;
        if matches!(outcome, Ok(CheckoutOutcome::Confirmed(_))) {
            // A buyer who has paid leaves the shop: the next batch may come in sooner.
            // Best effort, as for a release.
            if let Err(e) = step(
                "shopper_finished",
                self.shopper_finished(hold.event, who.buyer),
            )
            .await
            {
                tracing::warn!(error = %e, "could not count a finished shopper");
            }
        }
        outcome
    }

    pub async fn order_for(
        &self,
        who: &BuyerSession,
        id: OrderId,
    ) -> Result<OrderView, EngineError> {
        let order = self
            .ports
            .ledger
            .order(id)
            .await?
            .ok_or(EngineError::NotFound(Resource::Order))?;
        Ok(OrderView::from(&self.owned(who, &order)?))
    }

    /// The buyer's `BUYER_ORDERS_SHOWN` most recent orders, oldest first.
    pub async fn orders_of(&self, who: &BuyerSession) -> Result<Vec<OrderView>, EngineError> {
        Ok(self
            .ports
            .ledger
            .orders_of_buyer(who.buyer, BUYER_ORDERS_SHOWN)
            .await?
            .iter()
            .map(OrderView::from)
            .collect())
    }

    pub(crate) fn owned(&self, who: &BuyerSession, order: &Order) -> Result<Order, EngineError> {
        if order.buyer == who.buyer {
            Ok(order.clone())
        } else {
            Err(EngineError::NotFound(Resource::Order))
        }
    }

    async fn pay(
        &self,
        order: &Order,
        payment_method: &str,
        origin: &Origin,
        max_per_buyer: u32,
        keep: Option<&KeepConfirmed>,
    ) -> Result<CheckoutOutcome, EngineError> {
        let req = AuthorizeRequest {
            order: order.id,
            amount: order.total,
            currency: order.currency.clone(),
            payment_method: payment_method.into(),
        };
        let reference = match step("authorize", authorize(&*self.ports.payments, &req)).await {
            Ok(AuthorizeOutcome::Approved { reference }) => reference,
            Ok(AuthorizeOutcome::ActionRequired { next_action, .. }) => {
                // Nothing is decided: the hold stays pinned for the grace period and the
                // webhook (or the recovery sweep, asking) finishes the order.
                let view = OrderView::from(order);
                return Ok(CheckoutOutcome::ActionRequired(view, next_action));
            }
            Ok(AuthorizeOutcome::Declined { reason }) => {
                // Counted toward velocity by the path whose move ended the order.
                if self.end_unpaid(order, OrderEvent::Declined).await? {
                    self.velocity_declined(order.into(), Some((payment_method, origin)))
                        .await;
                }
                metrics::counter!("boxoffice_orders_total", "outcome" => "declined").increment(1);
                return Err(EngineError::PaymentDeclined(reason));
            }
            Err(_) => {
                // Unknown whether money moved: keep the seats pinned; recovery will ask.
                if let Err(e) = self.ports.arbiter.mark_uncertain(order.hold).await {
                    tracing::warn!(order = %order.id, error = %e, "could not mark hold payment_pending");
                }
                return self.current(order.id).await;
            }
        };
        // The hold still pinned to this order (nearly always): the authorization and
        // the commit are one ledger write.
        if step("pinned", self.pinned(order)).await? {
            let commit = Commit {
                order: order.id,
                max_per_buyer,
                now: self.now(),
            };
            let both = self.ports.ledger.authorize_and_commit(&commit, &reference);
            return step("commit_and_capture", async {
                match both.await {
                    Ok((authorized, outcome)) => {
                        let via = &*self.ports.payments;
                        let committed = &authorized;
                        let (limit, keep) = (max_per_buyer, keep);
                        self.committed(committed, &reference, outcome, limit, via, keep)
                            .await
                    }
                    Err(LedgerError::Conflict(_)) => self.moved_meanwhile(order).await,
                    Err(e) => Err(e.into()),
                }
            })
            .await;
        }
        let authorized = self.try_move(order.id, OrderEvent::Authorized, Some(&reference));
        let moved = step("authorized", authorized).await?;
        let Some(authorized) = moved else {
            return self.moved_meanwhile(order).await;
        };
        let approved = ProviderPayment {
            order: order.id,
            reference: reference.clone(),
            amount: order.total,
            state: ProviderState::Authorized,
        };
        let via = &*self.ports.payments;
        let commit =
            self.commit_or_give_back(&authorized, &reference, Some(&approved), max_per_buyer, via);
        step("commit_and_capture", commit).await
    }

    /// A webhook or the recovery sweep moved the order while the provider was
    /// answering: the same settling logic finishes it from where it is.
    async fn moved_meanwhile(&self, order: &Order) -> Result<CheckoutOutcome, EngineError> {
        if let Some(now) = self.ports.ledger.order(order.id).await? {
            match self.settle(&now).await {
                Ok(_) => {}
                // An order that ended has its answer: what is left (a late payment's
                // void the provider did not make) is its webhook's to finish, not the
                // buyer's to wait for.
                Err(e) if now.state.is_final() => {
                    tracing::warn!(order = %now.id, error = %e, "settling an ended order failed; its webhook will finish it");
                }
                Err(e) => return Err(e),
            }
        }
        self.current(order.id).await
    }

    /// Applies a move if the order's state still allows it. `None` means another path
    /// (a webhook, the sweep, a retry) moved the order first; every caller treats that
    /// as "someone else is on it" rather than as an error.
    pub(crate) async fn try_move(
        &self,
        order: OrderId,
        event: OrderEvent,
        payment_ref: Option<&str>,
    ) -> Result<Option<Order>, EngineError> {
        match self
            .ports
            .ledger
            .apply(order, event, payment_ref, self.now())
            .await
        {
            Ok(o) => Ok(Some(o)),
            Err(LedgerError::Conflict(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `try_move(order, Captured)` whose write also keeps the checkout's answer for the
    /// order it moved to, where `keep`'s replay store keeps answers in the ledger's
    /// database; elsewhere the move alone, the answer left to the caller. `None` as for
    /// `try_move`: the order moved first, and nothing was kept.
    pub(crate) async fn captured_kept(
        &self,
        order: OrderId,
        keep: &KeepConfirmed,
    ) -> Result<Option<Order>, EngineError> {
        let (event, render) = (OrderEvent::Captured, keep.render.clone());
        let moved = (keep.replays)
            .apply_kept(&keep.key, keep.lease, order, event, self.now(), render)
            .await;
        match moved {
            Ok(Some(KeptMove { order, kept })) => {
                if let Some(kept) = kept {
                    // Set once: a checkout captures once.
                    let _ = keep.kept.set(kept);
                }
                Ok(Some(order))
            }
            Ok(None) => self.try_move(order, event, None).await,
            Err(LedgerError::Conflict(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The hold a checkout pinned for an order the ledger refused (`refused`; the hold's
    /// `first` order exists) given back to that order, so the first checkout can still
    /// end as it should: its seats sold in the hot store when it sold them, the hold
    /// pinned for it again in place for what is left of its grace while its payment is
    /// open (else its approval would find the hold pinned for another order and give
    /// the money back; one step, so no other buyer can take a seat in between),
    /// released when it ended unsold, any of its seats the ledger still has sold (a
    /// ticket sold on through the exchange) marked sold again.
    async fn give_hold_back_to(&self, first: &Order, refused: OrderId, grace_s: u32) {
        use OrderState as S;
        match first.state {
            s if s.holds_seats() => self.record_sale_in_hot_store(first).await,
            S::PendingPayment | S::Authorized => {
                let ends = first.created_at.plus_secs(u64::from(grace_s));
                let left_s = (ends.0 - self.now().0).max(0) / 1000;
                let left_s = u32::try_from(left_s).unwrap_or(grace_s);
                let repinned = match left_s {
                    0 => Ok(()),
                    _ => self.retake_seats(first, left_s, Some(refused)).await,
                };
                // Not pinned for the first order: not kept for the refused one. A store
                // error may have lost the answer of a repin that ran (a reply timed out
                // after a failover): the hold is read back before it is let go.
                let kept = match &repinned {
                    Ok(()) => left_s > 0,
                    Err(ArbiterError::Store(_)) => {
                        let now = self.ports.arbiter.get(first.hold).await;
                        matches!(now, Ok(Some(h)) if h.order == Some(first.id) && h.state.is_live())
                    }
                    Err(_) => false,
                };
                if !kept {
                    self.release_quietly(first.hold).await;
                }
                if let Err(e) = repinned {
                    tracing::info!(order = %first.id, error = %e, "could not pin the hold for its first order again");
                }
            }
            _ => {
                self.release_quietly(first.hold).await;
                self.agree_with_ledger_on(first).await;
            }
        }
    }

    pub(crate) async fn release_quietly(&self, hold: HoldId) {
        if let Err(e) = self.ports.arbiter.release(hold).await {
            tracing::debug!(hold = %hold, error = %e, "hold already gone");
        }
    }

    pub(crate) async fn current(&self, order: OrderId) -> Result<CheckoutOutcome, EngineError> {
        let order = self
            .ports
            .ledger
            .order(order)
            .await?
            .ok_or(EngineError::NotFound(Resource::Order))?;
        outcome_of(&order)
    }
}

fn new_order(
    view: &HoldView,
    labels: Vec<String>,
    names: Vec<Option<AttendeeName>>,
    currency: String,
    now: Millis,
) -> Order {
    let seats = labels
        .into_iter()
        .zip(&view.prices)
        .zip(names)
        .map(|((seat_id, &price), attendee)| OrderSeat {
            seat_id,
            price,
            attendee,
        })
        .collect();
    Order {
        id: OrderId::random(),
        event: view.hold.event,
        buyer: view.buyer,
        hold: view.hold,
        seats,
        total: view.total(),
        currency,
        state: OrderState::PendingPayment,
        payment_ref: None,
        created_at: now,
        updated_at: now,
        attempts: 0,
        next_attempt_at: now,
    }
}

/// The most orders a buyer's read of their history returns (the most recent).
pub const BUYER_ORDERS_SHOWN: usize = 200;

/// What a checkout of this order reports, whoever asks and however often.
pub(crate) fn outcome_of(order: &Order) -> Result<CheckoutOutcome, EngineError> {
    let view = OrderView::from(order);
    match order.state {
        OrderState::Committed | OrderState::PendingCapture | OrderState::Confirmed => {
            Ok(CheckoutOutcome::Confirmed(view))
        }
        OrderState::PendingPayment | OrderState::Authorized => Ok(CheckoutOutcome::Pending(view)),
        OrderState::Declined => Err(EngineError::PaymentDeclined("declined".into())),
        OrderState::Lost => Err(EngineError::SeatSold),
        OrderState::Voided | OrderState::Refunded | OrderState::Voiding | OrderState::Refunding => {
            Err(EngineError::HoldExpired)
        }
        OrderState::Cancelling | OrderState::Cancelled => Err(EngineError::PaymentDeclined(
            "the payment could not be completed; the tickets were cancelled".into(),
        )),
    }
}

/// Runs one step of a checkout, timed into `boxoffice_checkout_step_seconds{step}`:
/// where a slow checkout waits (ledger, hot store, provider, velocity) without a
/// profiler.
async fn step<T>(name: &'static str, work: impl Future<Output = T>) -> T {
    crate::timing::timed("boxoffice_checkout_step_seconds", name, work).await
}

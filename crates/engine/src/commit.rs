//! The commit point and the capture after it, shared by a live checkout and the
//! recovery sweep. The ledger commit is where a sale becomes true; a commit that loses
//! (a seat sold to someone else, the buyer's limit) voids the authorization, and a
//! capture that can never happen cancels the sale.

use boxoffice_domain::{OrderEvent, OrderState};

use crate::cancel::Capturable;
use crate::checkout::{CheckoutOutcome, KeepConfirmed, outcome_of};
use crate::ports::{Commit, CommitOutcome, Order, PaymentGateway};
use crate::{Engine, EngineError};

impl Engine {
    /// The commit point, then capture. Shared by checkout and the recovery sweep.
    #[tracing::instrument(skip_all, fields(order = %order.id))]
    pub(crate) async fn commit_and_capture(
        &self,
        order: &Order,
        reference: &str,
        max_per_buyer: u32,
        via: &dyn PaymentGateway,
    ) -> Result<CheckoutOutcome, EngineError> {
        let commit = Commit {
            order: order.id,
            max_per_buyer,
            now: self.now(),
        };
        let outcome = self.ports.ledger.commit(&commit).await?;
        self.committed(order, reference, outcome, max_per_buyer, via, None)
            .await
    }

    /// What follows the commit point: a sale recorded in the hot store and captured, or
    /// a lost commit's authorization voided. A live checkout's confirmed answer is kept
    /// with the capture's move by `keep`, when given (see `capture_keeping`).
    pub(crate) async fn committed(
        &self,
        order: &Order,
        reference: &str,
        outcome: CommitOutcome,
        max_per_buyer: u32,
        via: &dyn PaymentGateway,
        keep: Option<&KeepConfirmed>,
    ) -> Result<CheckoutOutcome, EngineError> {
        match outcome {
            CommitOutcome::Committed => {
                metrics::counter!("boxoffice_seats_sold_total").increment(order.seats.len() as u64);
                self.record_sale_in_hot_store(order).await;
            }
            CommitOutcome::SeatTaken { seat_id } => {
                tracing::info!(order = %order.id, seat = %seat_id, "lost at commit; voiding the authorization");
                let agreed = self.agree_with_ledger_on(order).await;
                self.lose(order, reference, agreed, via).await?;
                return Err(EngineError::SeatSold);
            }
            CommitOutcome::LimitExceeded => {
                self.lose(order, reference, true, via).await?;
                return Err(EngineError::LimitExceeded {
                    limit: max_per_buyer,
                });
            }
            CommitOutcome::NotCommittable(_) => return self.current(order.id).await,
        }
        self.capture_keeping(order, reference, via, keep).await
    }

    /// Captures a committed sale. A capture the provider refuses because it holds no
    /// authorization any more (expired, cancelled) cancels the sale; any other failure
    /// leaves the order in `pending_capture` for the sweep to retry.
    pub(crate) async fn capture(
        &self,
        order: &Order,
        reference: &str,
        via: &dyn PaymentGateway,
    ) -> Result<CheckoutOutcome, EngineError> {
        self.capture_keeping(order, reference, via, None).await
    }

    /// `capture`, whose `captured` move keeps a live checkout's answer in the same write
    /// when `keep` is given (`Engine::captured_kept`). Only that move keeps: a capture
    /// that failed or can never happen leaves the answer to the caller.
    #[tracing::instrument(skip_all, fields(order = %order.id))]
    async fn capture_keeping(
        &self,
        order: &Order,
        reference: &str,
        via: &dyn PaymentGateway,
        keep: Option<&KeepConfirmed>,
    ) -> Result<CheckoutOutcome, EngineError> {
        let event = match via.capture(order.id, reference).await {
            Ok(()) => OrderEvent::Captured,
            Err(e) => match self.capturable(order, &e, via).await {
                Capturable::Already => OrderEvent::Captured,
                Capturable::Later => {
                    tracing::warn!(order = %order.id, error = %e, "capture failed; the sweep will retry");
                    OrderEvent::CaptureFailed
                }
                Capturable::Never => {
                    // A sale is abandoned from `pending_capture`: a `committed` order
                    // (its first capture never recorded: a crash between the commit
                    // and the capture) records the failed capture first, or the
                    // abandon is refused and every later capture fails the same way.
                    if order.state == OrderState::Committed {
                        self.try_move(order.id, OrderEvent::CaptureFailed, None)
                            .await?;
                    }
                    self.abandon_capture(order, via).await?;
                    return self.current(order.id).await;
                }
            },
        };
        let moved = match keep {
            Some(keep) if event == OrderEvent::Captured => {
                self.captured_kept(order.id, keep).await?
            }
            _ => self.try_move(order.id, event, None).await?,
        };
        let Some(after) = moved else {
            return self.current(order.id).await;
        };
        metrics::counter!("boxoffice_orders_total", "outcome" => after.state.as_str()).increment(1);
        outcome_of(&after)
    }

    /// A lost commit: void first, and only record the loss once the void went through,
    /// so a failed void leaves the order `authorized` for recovery to void again. The
    /// hold goes back to stock when `release` (not when its seats may be sold).
    async fn lose(
        &self,
        order: &Order,
        reference: &str,
        release: bool,
        via: &dyn PaymentGateway,
    ) -> Result<(), EngineError> {
        if release {
            self.release_quietly(order.hold).await;
        }
        match via.void(order.id, reference).await {
            Ok(()) => {
                self.try_move(order.id, OrderEvent::CommitLost, None)
                    .await?;
                metrics::counter!("boxoffice_orders_total", "outcome" => "lost").increment(1);
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "void failed; recovery will retry")
            }
        }
        Ok(())
    }
}

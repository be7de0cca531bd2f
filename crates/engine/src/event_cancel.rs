//! Cancelling a whole event: the sale closes (no new holds, joins or checkouts) and a
//! job gives every order of the event its money back. The job goes through the
//! event's orders a page at a time in id order; its cursor and counts are kept in the
//! ledger and move together after each page, so it resumes where it stopped after a
//! crash or a restart (a page cut short is simply done again). Each order is refunded
//! exactly once because each is claimed in the ledger first (`revoke_sale`, the same
//! conditional move as a single cancellation) and every provider call is keyed by the
//! order. Provider calls go through the recovery sweep's paced door, so the job and
//! the sweep together stay within `recovery_in_flight` and `recovery_calls_per_s`.
//!
//! A checkout already running when the event is cancelled may still commit after the
//! job went past its order: a pass that leaves any order unfinished is followed by
//! another (no sooner than `recovery_after_s` later), and the job ends after a pass
//! that found every order finished and none owning seats, and never after the first.
//! The ledger refuses an order of a cancelled event when it writes it, but a write
//! whose statement began before the cancellation committed is not refused, and its
//! order may become visible only after the first pass read past it; the second pass
//! begins at least `recovery_after_s` after the first pass's last step, and no sooner
//! than a second past the ledger's statement timeout (`ledger_statement_timeout_ms`,
//! PostgreSQL's 10 s by default), by when such a write has committed or failed, and
//! finds it. (A PostgreSQL ledger whose timeout is set on its role instead, behind
//! PgBouncer, leaves that bound to the role's timeout being below `recovery_after_s`.)

use boxoffice_domain::{EventId, Millis, OrderState};
use futures::StreamExt;

use crate::ports::{CancellationCounts, EventCancellation, EventOrders, LedgerError, Order};
use crate::worker::Outcome;
use crate::{Engine, EngineError};

/// What the job did with one order of a page.
enum Seen {
    /// Claimed (now or before): its money is to be given back.
    Claimed(Order),
    Returned,
    Unsold,
    Pending,
}

impl Engine {
    /// Cancels the event: closes its sale and starts the job, or returns the job
    /// already started.
    #[tracing::instrument(skip_all, fields(event = %id))]
    pub async fn cancel_event(&self, id: EventId) -> Result<EventCancellation, EngineError> {
        self.event(id).await?;
        let job = self.ports.ledger.cancel_event(id, self.now()).await?;
        self.reload_event(id).await?;
        tracing::warn!(event = %id, "event cancelled: every order is being refunded");
        Ok(job)
    }

    /// The event's cancellation job and its progress.
    pub async fn event_cancellation(&self, id: EventId) -> Result<EventCancellation, EngineError> {
        self.event(id).await?;
        self.ports
            .ledger
            .event_cancellation(id)
            .await?
            .ok_or(EngineError::EventNotCancelled)
    }

    pub(crate) async fn event_is_cancelled(&self, id: EventId) -> Result<bool, EngineError> {
        Ok(self.ports.ledger.event_cancellation(id).await?.is_some())
    }

    /// One page of every running cancellation job.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn event_cancellation_step(&self) -> Result<Outcome, EngineError> {
        let mut done = 0;
        for job in self.ports.ledger.running_cancellations().await? {
            done += self.advance_cancellation(job).await?;
        }
        Ok(Outcome { done })
    }

    async fn advance_cancellation(&self, job: EventCancellation) -> Result<usize, EngineError> {
        let q = EventOrders {
            event: job.event,
            after: job.cursor,
            limit: self.config.recovery_page.max(1),
        };
        let page = self.ports.ledger.orders_of_event(&q).await?;
        let Some(last) = page.last().map(|o| o.id) else {
            let swaps_pending = self.refund_swap_buyers(job.event).await?;
            return self.end_pass(job, swaps_pending).await;
        };
        let counts = self.cancel_page(page).await?;
        let mut next = job.clone();
        next.cursor = Some(last);
        next.counts.add(counts);
        next.updated_at = self.now();
        // A `false` means another node saved this page first; it is counted once.
        self.ports.ledger.save_cancellation(&job, &next).await?;
        Ok(usize::try_from(counts.seen).unwrap_or(usize::MAX))
    }

    /// At the end of a pass: the job is finished if nothing was left pending (orders,
    /// or `swaps_pending` swaps of the exchange) and this was not the first pass, else
    /// another pass starts once what was left (or a write under way at the
    /// cancellation) had time to move.
    async fn end_pass(
        &self,
        job: EventCancellation,
        swaps_pending: u64,
    ) -> Result<usize, EngineError> {
        let now = self.now();
        let next = if job.pass > 1 && job.counts.pending == 0 && swaps_pending == 0 {
            tracing::info!(event = %job.event, returned = job.counts.returned, "event cancellation finished");
            EventCancellation {
                finished_at: Some(now),
                updated_at: now,
                ..job.clone()
            }
        } else if now < self.next_pass_after(job.updated_at) {
            return Ok(0);
        } else {
            EventCancellation {
                pass: job.pass.saturating_add(1),
                cursor: None,
                counts: CancellationCounts::default(),
                updated_at: now,
                ..job.clone()
            }
        };
        Ok(usize::from(
            self.ports.ledger.save_cancellation(&job, &next).await?,
        ))
    }

    /// When a pass may follow one whose last step was at `last`: `recovery_after_s`
    /// later, and no sooner than a ledger statement under way at that step could still
    /// commit (`ledger_statement_timeout_ms`, with a second to spare).
    fn next_pass_after(&self, last: Millis) -> Millis {
        let recovered = last.plus_secs(self.config.recovery_after_s);
        let timeout_ms = self.config.ledger_statement_timeout_ms;
        let committed = match timeout_ms {
            0 => last,
            ms => Millis(
                last.0
                    .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX / 2) + 1_000),
            ),
        };
        recovered.max(committed)
    }

    /// Claims every sale of the page, gives their seats back to the hot store in one
    /// step, then their money, as many at once as the paced door allows.
    async fn cancel_page(&self, page: Vec<Order>) -> Result<CancellationCounts, EngineError> {
        let in_flight = self.config.recovery_in_flight.max(1);
        let seen: Vec<Seen> = futures::stream::iter(page)
            .map(|o| self.claim_for_cancellation(o))
            .buffer_unordered(in_flight)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let mut counts = CancellationCounts {
            seen: seen.len() as u64,
            ..CancellationCounts::default()
        };
        let mut claimed = Vec::new();
        for s in seen {
            match s {
                Seen::Claimed(o) => claimed.push(o),
                Seen::Returned => counts.returned += 1,
                Seen::Unsold => counts.unsold += 1,
                Seen::Pending => counts.pending += 1,
            }
        }
        self.return_cancelled_seats(&claimed).await?;
        let via = &*self.recovery_payments;
        let claims = claimed.len();
        let back = self
            .count_in_flight(claimed, |o| async move {
                match self.give_money_back(&o, via).await {
                    Ok(back) => back,
                    Err(e) => {
                        tracing::warn!(order = %o.id, error = %e, "refund of a cancelled event's order failed; will retry");
                        false
                    }
                }
            })
            .await;
        counts.returned += back as u64;
        counts.pending += (claims - back) as u64;
        Ok(counts)
    }

    /// The buyers of the event's exchange swaps get their charges back: each finished
    /// swap is claimed in the ledger first (`done → refunding`, its ticket revoked and
    /// its seat given back in the same step), then driven as the exchange sweep drives
    /// a swap (its charge refunded, keyed by the charge, then `undone`), so a claim
    /// survives a crash and a repeat refunds nothing twice. The sellers' orders, claimed
    /// in the pass before, gave back only what the exchange had not. Returns how many
    /// swaps are not finished yet (a swap still under way, a provider that did not
    /// answer): the job makes another pass for them.
    async fn refund_swap_buyers(&self, event: EventId) -> Result<u64, EngineError> {
        let Some(port) = self.exchange.as_ref() else {
            return Ok(0);
        };
        let in_flight = self.config.recovery_in_flight.max(1);
        let swaps = port.live_swaps(event).await?;
        let unfinished = futures::stream::iter(swaps)
            .map(|swap| async move {
                use boxoffice_domain::exchange::SwapState as W;
                let id = swap.id;
                let ended = match swap.state {
                    W::Done => {
                        if port.claim_cancelled_swap(id, self.now()).await? {
                            metrics::counter!("boxoffice_exchange_swaps_cancelled_total")
                                .increment(1);
                        }
                        let now = port.swap(id).await?;
                        match now {
                            Some(s) if s.state == W::Refunding => self.drive_swap(s).await,
                            Some(s) => Ok(s),
                            None => return Ok::<bool, EngineError>(true),
                        }
                    }
                    W::Refunding => self.drive_swap(swap).await,
                    // Under way: the buyer's request or the exchange sweep finishes it,
                    // and the next pass looks again.
                    W::Reserved | W::Charged | W::Moved => return Ok(false),
                    W::Undone => return Ok(true),
                };
                match ended {
                    Ok(s) => Ok(s.state == W::Undone),
                    Err(e) => {
                        tracing::warn!(swap = %id, error = %e, "refund of an exchange buyer failed; will retry");
                        Ok(false)
                    }
                }
            })
            .buffer_unordered(in_flight)
            .collect::<Vec<_>>()
            .await;
        let mut pending = 0;
        for finished in unfinished {
            if !finished? {
                pending += 1;
            }
        }
        Ok(pending)
    }

    /// Claims the order if it owns seats; an order another path moved meanwhile is
    /// looked at again as it now is.
    async fn claim_for_cancellation(&self, mut order: Order) -> Result<Seen, EngineError> {
        use OrderState as S;
        for _ in 0..4 {
            match order.state {
                S::Committed | S::PendingCapture | S::Confirmed => {
                    match self.ports.ledger.revoke_sale(order.id, self.now()).await {
                        Ok(claimed) => return Ok(Seen::Claimed(claimed)),
                        Err(LedgerError::Conflict(now)) => order.state = now,
                        Err(e) => return Err(e.into()),
                    }
                }
                S::Refunding | S::Cancelling => return Ok(Seen::Claimed(order)),
                S::Refunded | S::Cancelled => return Ok(Seen::Returned),
                S::Declined | S::Voided | S::Lost => return Ok(Seen::Unsold),
                S::PendingPayment | S::Authorized | S::Voiding => return Ok(Seen::Pending),
            }
        }
        Ok(Seen::Pending)
    }
}

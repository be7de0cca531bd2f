//! Admission: each tick moves an open event's "serving up to" forward by one batch
//! (rate × interval, a token bucket that refills per tick). The rate is the event's,
//! or the operator's override, narrowed by the adaptive mode while what sits behind
//! the waiting room is unhealthy. Admission is inventory-aware: when (nearly) nothing is
//! left to sell the whole line is told at once, and told again if expired holds return
//! seats; with a cap on active shoppers it waits for admitted buyers to finish; and
//! with `buyers_per_free_seat` a batch lets in no more buyers than the seats left allow.

use boxoffice_domain::admission::{self, RateReason};
use boxoffice_domain::{EventId, Millis, SaleStatus};

use crate::catalog::EventEntry;
use crate::waiting::CurrentRate;
use crate::waiting::settings_internal::{EventSettings, RateStep, StoredRate};
use crate::worker::Outcome;
use crate::{Engine, EngineError};

impl Engine {
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn admission_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        for event in self.open_events().await? {
            // One event's trouble must not stall the others' lines.
            if let Err(e) = self.tick_event(event, now).await {
                tracing::warn!(event = %event, error = %e, "admission batch failed");
            }
        }
        self.waiting.limits.sweep(now);
        // Admission runs on a clock, not on a backlog: always report idle so the loop waits.
        Ok(Outcome::default())
    }

    /// Every node runs the loop; a batch is due only once per interval whichever node
    /// ticks, so N nodes do not admit N batches. A batch is the rate times the time since
    /// the line last moved (`batch_window`), not a whole interval's: nodes tick at their
    /// own phases, and the first tick due after a batch may come at 0.8 of the interval,
    /// which with whole batches let several nodes admit up to 1.25 times the rate. A
    /// batch is whole buyers, and the part of its window not spent on one is kept for
    /// the next (`admission::paced_batch`): rounding up instead let in half as many
    /// again as the rate at 1 a second.
    async fn tick_event(&self, event: EventId, now: Millis) -> Result<bool, EngineError> {
        let state = self.ports.queue.state(event).await?;
        let interval = self.config.admission_interval_ms as i64;
        if state.advanced_at.0 != 0 && now.0 - state.advanced_at.0 < interval * 4 / 5 {
            self.refresh_rate(event).await?;
            return Ok(false);
        }
        self.admit_within(event, Batch::SinceLastMove).await
    }

    /// Admits the next batch of one event now, an interval's worth; returns whether the
    /// line moved.
    pub async fn admit_batch(&self, event: EventId) -> Result<bool, EngineError> {
        self.admit_within(event, Batch::Interval).await
    }

    /// Admits the next batch of one event now: the rate's worth of the time `batch` says,
    /// measured on the line as read here (another node's batch since the caller looked
    /// counts).
    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn admit_within(&self, event: EventId, batch: Batch) -> Result<bool, EngineError> {
        let entry = self.event(event).await?;
        if entry.event.status == SaleStatus::Open {
            self.ensure_line(event).await?;
        }
        let now = self.now();
        let state = self.ports.queue.state(event).await?;
        let interval = self.config.admission_interval_ms;
        let settings = self.event_settings(event).await?;
        let counts = self.ports.arbiter.counts(event).await?;
        let free = admission::free_units(
            u64::from(entry.event.capacity()),
            u64::from(counts.sold),
            u64::from(counts.held),
            u64::from(settings.rules.sold_out_margin),
        );
        let sold_out = free == 0;
        if state.sold_out != sold_out {
            self.ports.queue.set_sold_out(event, sold_out).await?;
            tracing::info!(event = %event, sold_out, "the line was told");
        }
        let mut chosen = self.choose_rate(&entry, &settings, now);
        let rate = &mut chosen.rate;
        let mut moved = false;
        let taken = u64::from(counts.sold) + u64::from(counts.held);
        if sold_out {
            rate.reason = RateReason::SoldOut;
            // The line heard "sold out" and its front goes away: the spell counts as
            // untaken time, so seats that come back find more buyers let in per seat.
            let grace = self.no_show_grace_ms();
            self.waiting.untaken_for(event, taken, 0, true, grace, now);
        } else if state.serving_up_to < state.queue_length {
            // The loop's ticks pace the line: whole buyers only, and the part of the
            // window not spent on one is kept for the next batch (`unspent_ms`).
            let (full, unspent_ms) = match batch {
                Batch::Interval => (admission::batch_size(rate.rate_per_s, interval), 0),
                Batch::SinceLastMove => {
                    let window = batch_window(state.advanced_at, now, interval, rate.rate_per_s);
                    admission::paced_batch(rate.rate_per_s, window)
                }
            };
            let mut batch = full;
            if let Some(per_seat) = settings.rules.buyers_per_free_seat {
                // Seats left untaken while buyers are let in for them mean the front of
                // the line went away: let in more per seat, and fewer again once half
                // the seats let in for have gone.
                let binding = admission::batch_for_free_units(batch, free, per_seat) < batch;
                let grace = self.no_show_grace_ms();
                let untaken = self
                    .waiting
                    .untaken_for(event, taken, free, binding, grace, now);
                let factor = admission::no_show_factor(untaken, grace);
                let per_seat = per_seat.saturating_mul(factor);
                let bounded = admission::batch_for_free_units(batch, free, per_seat);
                if bounded < batch {
                    rate.reason = RateReason::FewSeatsLeft;
                }
                batch = bounded;
            }
            if let Some(cap) = settings.rules.max_active_shoppers {
                let ttl_ms = self.config.admission_token_ttl_s as i64 * 1000;
                let active = self.waiting.active_shoppers(
                    event,
                    now,
                    ttl_ms,
                    state.serving_up_to,
                    state.finished,
                );
                let room = u64::from(cap).saturating_sub(active);
                if room < batch {
                    batch = room;
                    if batch == 0 {
                        rate.reason = RateReason::ShopperCapReached;
                    }
                }
            }
            if batch > 0 {
                // Journaled before it is visible: a line restored from the ledger
                // admits at least everyone this batch admits.
                let to = state
                    .serving_up_to
                    .saturating_add(batch)
                    .min(state.queue_length);
                // A batch of the rate's whole worth counts the line as moved when the
                // time it paid for ended, so the next window keeps what this one did not
                // spend; a batch held back (seats, the cap, the line's end) keeps none.
                let kept = i64::try_from(unspent_ms).unwrap_or(0);
                let at = if to - state.serving_up_to == full {
                    Millis(now.0 - kept)
                } else {
                    now
                };
                self.ports.ledger.record_admission(event, to, at).await?;
                let after = self.ports.queue.advance(event, to, at).await?;
                moved = after.serving_up_to > state.serving_up_to;
                self.waiting
                    .mark(event, now, after.serving_up_to, after.finished);
            }
        }
        self.store_rate(event, &settings, chosen).await?;
        self.rebuild_public_doc(event).await?;
        Ok(moved)
    }

    /// How long admitted buyers have to take the seats they were let in for before a
    /// line bound by `buyers_per_free_seat` lets in twice as many per seat: twice the
    /// pause a buyer near the front is asked to take between polls.
    fn no_show_grace_ms(&self) -> i64 {
        i64::try_from(self.config.poll_after_ms.saturating_mul(2)).unwrap_or(i64::MAX)
    }

    /// Recomputes and publishes the rate without admitting anyone.
    pub(crate) async fn refresh_rate(&self, event: EventId) -> Result<(), EngineError> {
        let entry = self.event(event).await?;
        let settings = self.event_settings(event).await?;
        let state = self.ports.queue.state(event).await?;
        let mut chosen = self.choose_rate(&entry, &settings, self.now());
        let rate = &mut chosen.rate;
        if state.sold_out {
            rate.reason = RateReason::SoldOut;
        } else if let Some(last) = settings.rate
            && last.rate_per_s == rate.rate_per_s
            && matches!(
                last.reason,
                RateReason::ShopperCapReached | RateReason::FewSeatsLeft
            )
        {
            // What the last batch was held back by stands until the next batch.
            rate.reason = last.reason;
        }
        self.store_rate(event, &settings, chosen).await?;
        self.rebuild_public_doc(event).await?;
        Ok(())
    }

    /// The rate for now: the base rate in the fixed mode; in the adaptive mode, the last
    /// rate stepped once by downstream health (`admission::adapt`). A step is taken at
    /// most once per admission interval (four fifths of one, as batches are) after the
    /// last step that changed the rate, whichever node made it: every node of a cluster
    /// ticks each interval and reads its own health, and each used to step the shared
    /// rate again, so N nodes narrowed it N times an interval.
    fn choose_rate(&self, entry: &EventEntry, s: &EventSettings, now: Millis) -> ChosenRate {
        use crate::waiting::AdmissionMode;
        let (base, base_reason) = s.base_rate(entry.event.sale.admission_rate_per_s);
        if s.control.mode == AdmissionMode::Fixed {
            let rate = CurrentRate {
                rate_per_s: base,
                reason: base_reason,
            };
            return ChosenRate { rate, step: None };
        }
        // Narrowing continues from the last chosen rate; a sold-out pause is no rate.
        let last = s.rate.map_or(base, |r| r.rate_per_s);
        let current = last.min(base);
        let interval = i64::try_from(self.config.admission_interval_ms).unwrap_or(i64::MAX);
        if let Some(step) = s.rate_step
            && now.0.saturating_sub(step.at.0) < interval / 5 * 4
        {
            // Stepped within this interval (by this node or another): it stands, but
            // for a base lowered below it since.
            let reason = if current < last {
                base_reason
            } else {
                step.reason
            };
            let rate = CurrentRate {
                rate_per_s: current,
                reason,
            };
            return ChosenRate {
                rate,
                step: Some(step),
            };
        }
        let t = s
            .control
            .thresholds
            .unwrap_or(self.config.waiting.thresholds);
        let health = self
            .waiting
            .health
            .read(now, self.config.waiting.health_window_ms);
        let (rate_per_s, reason) = admission::adapt(current, base, &health, &t);
        let reason = match reason {
            RateReason::Configured => base_reason,
            other => other,
        };
        // A step that changed nothing leaves the last one's time, so the next tick may
        // step at once.
        let step = if rate_per_s == current {
            s.rate_step
        } else {
            Some(RateStep { at: now, reason })
        };
        ChosenRate {
            rate: CurrentRate { rate_per_s, reason },
            step,
        }
    }

    async fn store_rate(
        &self,
        event: EventId,
        s: &EventSettings,
        chosen: ChosenRate,
    ) -> Result<(), EngineError> {
        if s.rate == Some(chosen.rate) && s.rate_step == chosen.step {
            return Ok(());
        }
        let stored = StoredRate {
            rate: chosen.rate,
            step: chosen.step,
        };
        let json =
            serde_json::to_string(&stored).map_err(|e| EngineError::Internal(e.to_string()))?;
        self.put_setting(event, crate::waiting::settings_internal::RATE, &json, false)
            .await?;
        Ok(())
    }
}

/// The rate a tick chose, and the adaptive mode's last step that changed it.
#[derive(Clone, Copy)]
struct ChosenRate {
    rate: CurrentRate,
    step: Option<RateStep>,
}

/// What time a batch admits for.
#[derive(Clone, Copy)]
enum Batch {
    /// A whole interval (a batch asked for outside the loop's ticks).
    Interval,
    /// Since the line last moved (`batch_window`): the loop's ticks.
    SinceLastMove,
}

/// The time a batch admits for: since the line last moved (`advanced_at`), at most
/// `admission::longest_window_ms` (two intervals, or one buyer's worth at a rate below
/// one buyer an interval); for a line that never moved, an interval or one buyer's worth.
fn batch_window(advanced_at: Millis, now: Millis, interval_ms: u64, rate_per_s: u32) -> u64 {
    let longest = admission::longest_window_ms(rate_per_s, interval_ms);
    if advanced_at.0 == 0 {
        return interval_ms.max(admission::one_buyer_ms(rate_per_s));
    }
    u64::try_from(now.0 - advanced_at.0)
        .unwrap_or(0)
        .min(longest)
}

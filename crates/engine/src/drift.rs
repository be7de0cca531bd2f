//! Reconciliation of the hot store with the ledger (P5). The hot store may be wrong: the
//! audit says where, and the repair fixes the direction that costs buyers. A seat sold
//! in the ledger but free or held in the hot store lets buyers hold a seat that can only
//! lose at commit, so the repair marks it sold there (a worker step, and at once when a
//! commit loses at the ledger's primary key). A seat sold in the hot store but not in
//! the ledger is stock nobody can buy; only the audit reports it, since a rebuild from
//! the ledger puts it back.

use std::collections::{BTreeSet, HashSet};

use boxoffice_domain::{BuyerId, EventId, SaleStatus, SeatIndex};

use crate::audit::{AuditReport, Violation};
use crate::catalog::EventEntry;
use crate::expiry::Sweep;
use crate::ports::{ArbiterError, Order, SoldSeat};
use crate::worker::Outcome;
use crate::{Engine, EngineError};

impl Engine {
    /// Adds a `P5` violation to `report` for every difference between the hot store and
    /// the ledger on open events. Events not loaded in the hot store are skipped: they
    /// are rebuilt from the ledger on first use.
    pub async fn audit_hot_store(&self, report: &mut AuditReport) -> Result<(), EngineError> {
        for event in self
            .ports
            .ledger
            .events_with_status(SaleStatus::Open)
            .await?
        {
            if self.ports.arbiter.is_loaded(event).await? {
                for detail in self.drift_of(event).await? {
                    report.violations.push(Violation {
                        promise: "P5",
                        detail,
                    });
                }
            }
        }
        Ok(())
    }

    /// Marks sold in the hot store every seat the ledger sold that it still offers or
    /// holds, on every open event it has loaded (an event it lacks is rebuilt from the
    /// ledger on first use). `done` is the number of seats repaired.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn drift_repair_step(&self) -> Result<Outcome, EngineError> {
        let mut done = 0;
        for event in self.open_events().await? {
            // One node repairs each event: the ledger read is the same for all.
            if self.holds_sweep(event, Sweep::Drift).await?
                && self.ports.arbiter.is_loaded(event).await?
            {
                done += self.repair_drift_of(event).await? as usize;
            }
        }
        Ok(Outcome { done })
    }

    async fn repair_drift_of(&self, event: EventId) -> Result<u32, EngineError> {
        let entry = self.event(event).await?;
        let hot: HashSet<SeatIndex> = self
            .ports
            .arbiter
            .sold_seats(event)
            .await?
            .into_iter()
            .collect();
        let ledger = self.ledger_sold_seats(&entry).await?;
        // The other direction is only reported: stock nobody can buy until a rebuild or
        // an operator looks, never "fixed" by unselling a seat on the hot store's word.
        let in_ledger: HashSet<SeatIndex> = ledger.iter().map(|s| s.seat).collect();
        let unbacked = hot.iter().filter(|s| !in_ledger.contains(s)).count();
        metrics::gauge!("boxoffice_drift_unsold_in_ledger", "event" => event.to_string())
            .set(unbacked as f64);
        if unbacked > 0 {
            tracing::warn!(event = %event, seats = unbacked, "the hot store has seats sold that the ledger has not; reported, not repaired");
        }
        let missing: Vec<SoldSeat> = ledger
            .into_iter()
            .filter(|s| !hot.contains(&s.seat))
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let repaired = self
            .mark_sold_as_the_ledger_still_sells(&entry, &missing)
            .await?;
        count_repairs(event, repaired);
        Ok(repaired)
    }

    /// Marks `seats` sold in the hot store, as a ledger read taken before said they
    /// were, then reads the ledger again and gives back to stock any of them whose sale
    /// was undone meanwhile (a refund, whose own return found them not sold in the hot
    /// store yet and left them). Marked on the first read alone, such a seat stayed sold
    /// in the hot store and free in the ledger for good, which the repair only reports.
    /// No sale of such a seat can land in between: marked sold, no one can hold it.
    async fn mark_sold_as_the_ledger_still_sells(
        &self,
        entry: &EventEntry,
        seats: &[SoldSeat],
    ) -> Result<u32, EngineError> {
        let event = entry.event.id;
        let repaired = self.ports.arbiter.mark_seats_sold(event, seats).await?;
        let still: HashSet<SoldSeat> = self.ledger_sold_seats(entry).await?.into_iter().collect();
        let undone: Vec<SoldSeat> = seats
            .iter()
            .filter(|s| !still.contains(*s))
            .cloned()
            .collect();
        if !undone.is_empty() {
            let back = self.ports.arbiter.return_sold_seats(event, &undone).await?;
            tracing::info!(event = %event, seats = back, "seats whose sale was undone while they were repaired are back on sale");
        }
        Ok(repaired)
    }

    /// A commit lost at the ledger's primary key: the hot store let this order hold
    /// seats the ledger had sold. Those become sold in the hot store (which ends the
    /// hold and returns its other seats), rather than free, where every later buyer
    /// would lose on them too. `false` when the hot store could not be told: the
    /// caller then leaves the hold to expire and the repair step to mend it.
    pub(crate) async fn agree_with_ledger_on(&self, order: &Order) -> bool {
        let marked = async {
            let entry = self.event(order.event).await?;
            let mine: HashSet<SeatIndex> = order
                .seats
                .iter()
                .filter_map(|s| entry.seat_index.get(&s.seat_id).copied())
                .collect();
            let sold: Vec<SoldSeat> = self
                .ledger_sold_seats(&entry)
                .await?
                .into_iter()
                .filter(|s| mine.contains(&s.seat))
                .collect();
            self.mark_sold_as_the_ledger_still_sells(&entry, &sold)
                .await
        };
        match marked.await {
            Ok(repaired) => {
                count_repairs(order.event, repaired);
                true
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "could not mark the seats the ledger sold; the repair step will");
                false
            }
        }
    }

    /// A sold seat changed hands in the ledger (a transfer accepted, a resale moved):
    /// the hot store counts it against its new holder too, so the giver may buy again
    /// up to the limit and the recipient is refused a hold past it at once, not first
    /// by the ledger at checkout. The ledger's move stands whatever happens here: a hot
    /// store that cannot be told is warned of and counted
    /// (`boxoffice_hot_store_gives_failed_total`), and agrees again at its next
    /// rebuild, which counts each sold seat against the ledger's holder.
    pub(crate) async fn hot_store_gives(
        &self,
        event: EventId,
        seat: &str,
        from: BuyerId,
        to: BuyerId,
    ) {
        let given = async {
            let entry = self.event(event).await?;
            let index = *entry.seat_index.get(seat).ok_or_else(|| {
                EngineError::Internal(format!("seat {seat} is not in event {event}"))
            })?;
            match self
                .ports
                .arbiter
                .give_sold_seat(event, index, from, to)
                .await
            {
                // Not loaded: its rebuild reads the holders from the ledger.
                Ok(_) | Err(ArbiterError::UnknownEvent) => Ok(()),
                Err(e) => Err(EngineError::from(e)),
            }
        };
        if let Err(e) = given.await {
            metrics::counter!("boxoffice_hot_store_gives_failed_total").increment(1);
            tracing::warn!(event = %event, seat, error = %e, "the hot store could not count a given seat against its new holder; it agrees again at its next rebuild");
        }
    }

    /// Every seat the ledger sold for `entry`'s event, as the hot store indexes it.
    pub(crate) async fn ledger_sold_seats(
        &self,
        entry: &EventEntry,
    ) -> Result<Vec<SoldSeat>, EngineError> {
        let id = entry.event.id;
        let sold = self.ports.ledger.sold_seats(id).await?;
        let mut seats = Vec::with_capacity(sold.len());
        for (label, buyer) in sold {
            let seat = *entry.seat_index.get(&label).ok_or_else(|| {
                EngineError::Internal(format!("sold seat {label} is not in event {id}"))
            })?;
            seats.push(SoldSeat { seat, buyer });
        }
        Ok(seats)
    }

    async fn drift_of(&self, event: EventId) -> Result<Vec<String>, EngineError> {
        let entry = self.event(event).await?;
        let ledger: BTreeSet<SeatIndex> = self
            .ledger_sold_seats(&entry)
            .await?
            .into_iter()
            .map(|s| s.seat)
            .collect();
        let hot: BTreeSet<SeatIndex> = self
            .ports
            .arbiter
            .sold_seats(event)
            .await?
            .into_iter()
            .collect();
        let label = |i: &SeatIndex| entry.event.seats[*i as usize].label.clone();
        let mut out = Vec::new();
        for seat in ledger.difference(&hot) {
            out.push(format!(
                "event {event}: seat {} is sold in the ledger but not in the hot store",
                label(seat)
            ));
        }
        for seat in hot.difference(&ledger) {
            out.push(format!(
                "event {event}: seat {} is sold in the hot store but not in the ledger",
                label(seat)
            ));
        }
        let c = self.ports.arbiter.counts(event).await?;
        if c.capacity != entry.event.capacity() || c.free + c.held + c.sold != c.capacity {
            out.push(format!(
                "event {event}: hot store counts {} free + {} held + {} sold against a capacity of {} (catalog {})",
                c.free,
                c.held,
                c.sold,
                c.capacity,
                entry.event.capacity()
            ));
        }
        Ok(out)
    }
}

fn count_repairs(event: EventId, repaired: u32) {
    if repaired > 0 {
        metrics::counter!("boxoffice_drift_repairs_total").increment(u64::from(repaired));
        tracing::warn!(event = %event, repaired, "the hot store offered or held seats the ledger sold; marked them sold");
    }
}

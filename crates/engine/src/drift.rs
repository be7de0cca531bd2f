//! Reconciliation of the hot store with the ledger (P5): the hot store may be wrong, so
//! the audit says where. A seat sold in the ledger but free in the hot store would let
//! buyers hold a seat that can only lose at commit; a seat sold in the hot store but not
//! in the ledger is stock nobody can buy.

use std::collections::BTreeSet;

use boxoffice_domain::{EventId, SaleStatus, SeatIndex};

use crate::audit::{AuditReport, Violation};
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

    async fn drift_of(&self, event: EventId) -> Result<Vec<String>, EngineError> {
        let entry = self.event(event).await?;
        let mut ledger = BTreeSet::new();
        for (label, _) in self.ports.ledger.sold_seats(event).await? {
            ledger.insert(
                *entry
                    .seat_index
                    .get(&label)
                    .ok_or_else(|| EngineError::Internal(format!("unknown seat {label}")))?,
            );
        }
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

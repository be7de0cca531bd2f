//! The audit: checks the promises that live in the ledger — P1 (never sold twice,
//! never over capacity), P2 (no charge without a ticket, no ticket without a charge,
//! reconciled against the provider's own records) and P6 (per-buyer limits).

use std::collections::HashMap;

use boxoffice_domain::OrderState;
use serde::Serialize;

use crate::ports::ProviderState;
use crate::{Engine, EngineError};

/// One broken promise the audit found.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = AuditViolation)]
pub struct Violation {
    /// The promise's number (`P1`, `P2`, `P6`).
    pub promise: &'static str,
    pub detail: String,
}

/// What the audit read and what it found.
#[derive(Clone, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct AuditReport {
    pub events: usize,
    pub seats_sold: u64,
    pub orders: usize,
    pub orders_in_flight: usize,
    pub provider_payments: usize,
    pub violations: Vec<Violation>,
}

impl AuditReport {
    pub fn clean(&self) -> bool {
        self.violations.is_empty()
    }

    fn flag(&mut self, promise: &'static str, detail: String) {
        self.violations.push(Violation { promise, detail });
    }
}

impl Engine {
    pub async fn audit(&self) -> Result<AuditReport, EngineError> {
        let facts = self.ports.ledger.audit_facts().await?;
        let mut r = AuditReport {
            events: facts.events.len(),
            orders: facts.orders.len(),
            ..Default::default()
        };
        for e in &facts.events {
            r.seats_sold += e.sold as u64;
            if e.sold > e.capacity {
                r.flag(
                    "P1",
                    format!("event {} sold {} of {} seats", e.event, e.sold, e.capacity),
                );
            }
            for seat in &e.unknown_seats {
                r.flag(
                    "P1",
                    format!(
                        "event {} sold seat {seat}, which is not in its catalog",
                        e.event
                    ),
                );
            }
        }
        for (event, seat) in &facts.sold_without_order {
            r.flag(
                "P2",
                format!("event {event} seat {seat} is sold but its order does not own it"),
            );
        }
        for o in &facts.orders_missing_seats {
            r.flag(
                "P2",
                format!("order {o} owns seats the ledger has not sold to it"),
            );
        }
        for o in &facts.seats_of_unsold_orders {
            r.flag(
                "P2",
                format!("order {o} has sold seats but did not buy them"),
            );
        }
        for (event, buyer, n) in &facts.buyers_over_limit {
            r.flag(
                "P6",
                format!("buyer {buyer} has {n} tickets for event {event}, over the limit"),
            );
        }
        r.orders_in_flight = facts
            .orders
            .iter()
            .filter(|(_, s, _)| !s.is_final())
            .count();
        let mut payers = facts.orders.clone();
        payers.extend(self.swap_charges().await?);
        self.reconcile_payments(&payers, &mut r).await?;
        Ok(r)
    }

    /// Every charge or authorization the provider knows must match an order state:
    /// captured ⇔ seats sold; an order that ended without seats has no open funds.
    async fn reconcile_payments(
        &self,
        orders: &[(boxoffice_domain::OrderId, OrderState, Option<String>)],
        r: &mut AuditReport,
    ) -> Result<(), EngineError> {
        let provider = self
            .ports
            .payments
            .all_payments()
            .await
            .map_err(|e| EngineError::Unavailable(e.to_string()))?;
        r.provider_payments = provider.len();
        let states: HashMap<_, _> = orders.iter().map(|(id, s, _)| (*id, *s)).collect();
        let mut captured = HashMap::new();
        for p in &provider {
            let ours = states.get(&p.order).copied();
            captured.insert(p.order, p.state == ProviderState::Captured);
            if let Some(problem) = mismatch(p.state, ours) {
                r.flag("P2", format!("order {}: {problem}", p.order));
            }
        }
        for (id, state, _) in orders {
            if *state == OrderState::Confirmed && !captured.get(id).copied().unwrap_or(false) {
                r.flag(
                    "P2",
                    format!("order {id} is confirmed but the provider holds no capture for it"),
                );
            }
        }
        Ok(())
    }
}

impl Engine {
    /// The exchange's charges as the reconciliation reads orders: a finished swap's
    /// charge is a captured sale, an undone one's an order that ended without seats,
    /// one in flight is not judged.
    async fn swap_charges(
        &self,
    ) -> Result<Vec<(boxoffice_domain::OrderId, OrderState, Option<String>)>, EngineError> {
        use boxoffice_domain::exchange::SwapState;
        let Some(port) = self.exchange.as_ref() else {
            return Ok(vec![]);
        };
        let charges = port.swap_charges().await?;
        Ok(charges
            .into_iter()
            .map(|(charge, state)| {
                let as_order = match state {
                    SwapState::Done => OrderState::Confirmed,
                    SwapState::Undone => OrderState::Cancelled,
                    _ => OrderState::Authorized,
                };
                (charge, as_order, None)
            })
            .collect())
    }
}

/// What is wrong when the provider's state of a payment meets the ledger's state of its
/// order, if anything. Orders still in flight are not judged: the sweep is on them.
fn mismatch(provider: ProviderState, ours: Option<OrderState>) -> Option<String> {
    use ProviderState as P;
    let Some(s) = ours else {
        return matches!(provider, P::Authorized | P::Captured)
            .then(|| format!("the provider holds {provider:?} money the ledger never recorded"));
    };
    if !s.is_final() {
        return None;
    }
    match provider {
        P::Captured if !s.holds_seats() => Some(format!(
            "charged but has no ticket (ledger: {})",
            s.as_str()
        )),
        P::Authorized if !s.holds_seats() => Some(format!(
            "ended {} but its authorization is still open",
            s.as_str()
        )),
        // A confirmed order without a capture is flagged from the ledger's side.
        _ => None,
    }
}

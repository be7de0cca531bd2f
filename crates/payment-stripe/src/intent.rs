//! The PaymentIntent as we read it: lenient (every field optional or defaulted, unknown
//! fields ignored), because Stripe adds fields and stand-ins like localstripe leave some
//! out. Maps Stripe's statuses onto the port's states.

use std::collections::HashMap;

use boxoffice_domain::{Money, OrderId};
use boxoffice_engine::ports::{NextAction, ProviderPayment, ProviderState};
use serde::Deserialize;
use serde_json::Value;

/// Metadata key carrying our order id: how we find a payment again without its id.
pub const ORDER_KEY: &str = "order_id";

#[derive(Clone, Debug, Deserialize)]
pub struct Intent {
    pub id: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub amount: i64,
    #[serde(default)]
    pub metadata: HashMap<String, String>,
    #[serde(default)]
    pub next_action: Option<Value>,
    /// An id or, expanded, the charge object; only read for refunds.
    #[serde(default)]
    pub latest_charge: Option<Value>,
    #[serde(default)]
    pub last_payment_error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct IntentList {
    #[serde(default)]
    pub data: Vec<Intent>,
    #[serde(default)]
    pub has_more: bool,
}

impl Intent {
    pub fn order(&self) -> Option<OrderId> {
        self.metadata.get(ORDER_KEY)?.parse().ok()
    }

    pub fn state(&self) -> ProviderState {
        match self.status.as_str() {
            "requires_capture" => ProviderState::Authorized,
            "succeeded" if self.refunded() => ProviderState::Refunded,
            "succeeded" => ProviderState::Captured,
            "canceled" => ProviderState::Voided,
            "requires_payment_method" => ProviderState::Declined,
            // requires_action, requires_confirmation, processing: nothing decided yet.
            _ => ProviderState::RequiresAction,
        }
    }

    fn refunded(&self) -> bool {
        let charge = self.latest_charge.as_ref();
        // Stripe marks a charge refunded once its refunds reach its amount; a charge
        // refunded in part (a seat of the order) is still captured for the rest.
        charge.is_some_and(|c| c["refunded"].as_bool() == Some(true))
    }

    pub fn decline_reason(&self) -> String {
        let e = self.last_payment_error.as_ref();
        e.and_then(|e| e["decline_code"].as_str().or(e["code"].as_str()))
            .unwrap_or("card_declined")
            .to_owned()
    }

    /// What the buyer must do: Stripe's `next_action.type`, and the URL when it is a
    /// redirect.
    pub fn next_action(&self) -> NextAction {
        let a = self.next_action.as_ref();
        let kind = a
            .and_then(|a| a["type"].as_str())
            .unwrap_or("use_stripe_sdk");
        let url = a.and_then(|a| a["redirect_to_url"]["url"].as_str());
        NextAction {
            kind: kind.to_owned(),
            url: url.map(str::to_owned),
        }
    }

    pub fn to_port(&self, order: OrderId) -> ProviderPayment {
        ProviderPayment {
            order,
            reference: self.id.clone(),
            amount: Money(self.amount),
            state: self.state(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(v: Value) -> Intent {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn statuses_map_to_port_states_and_unknown_fields_are_ignored() {
        let cases = [
            ("requires_capture", ProviderState::Authorized),
            ("succeeded", ProviderState::Captured),
            ("canceled", ProviderState::Voided),
            ("requires_payment_method", ProviderState::Declined),
            ("requires_action", ProviderState::RequiresAction),
            ("processing", ProviderState::RequiresAction),
        ];
        for (status, state) in cases {
            let i = intent(serde_json::json!({"id": "pi_1", "status": status, "new_field": 1}));
            assert_eq!(i.state(), state, "{status}");
        }
        let refunded = intent(serde_json::json!({
            "id": "pi_1", "status": "succeeded", "latest_charge": {"refunded": true}
        }));
        assert_eq!(refunded.state(), ProviderState::Refunded);
        let in_part = intent(serde_json::json!({
            "id": "pi_1", "status": "succeeded",
            "latest_charge": {"refunded": false, "amount_refunded": 100}
        }));
        assert_eq!(in_part.state(), ProviderState::Captured);
    }
}

//! The stand-in's book: PaymentIntents and their charges, and the switches a test
//! flips (a lagging search).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use serde_json::{Value, json};

/// One PaymentIntent as the stand-in keeps it.
#[derive(Clone, Debug)]
pub struct StubIntent {
    pub id: String,
    pub status: String,
    pub amount: i64,
    pub order: String,
    pub charge: Option<StubCharge>,
}

#[derive(Clone, Debug)]
pub struct StubCharge {
    pub id: String,
    pub amount_refunded: i64,
    /// Every refund made of it, oldest first. Like localstripe, the stand-in keeps no
    /// Idempotency-Keys: a refund asked twice is made twice.
    pub refunds: Vec<StubRefund>,
}

/// One refund of a charge: its id, amount and metadata.
#[derive(Clone, Debug)]
pub struct StubRefund {
    pub id: String,
    pub amount: i64,
    pub metadata: Vec<(String, String)>,
}

impl StubRefund {
    pub fn to_json(&self, intent: &str) -> Value {
        let metadata: serde_json::Map<String, Value> = (self.metadata.iter())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        json!({
            "id": self.id, "object": "refund", "status": "succeeded", "amount": self.amount,
            "payment_intent": intent, "metadata": metadata,
        })
    }
}

#[derive(Default)]
pub struct StubState {
    /// By id; ids grow, so the map is in creation order.
    pub intents: Mutex<BTreeMap<String, StubIntent>>,
    /// While set, the search lists nothing (a write not yet indexed).
    pub search_lags: AtomicBool,
    /// While set, the search answers 429 (Stripe's Search API allows some 20 reads a
    /// second).
    pub search_rate_limited: AtomicBool,
    next: AtomicU64,
    /// Calls of `GET /v1/balance`, the credential check.
    pub balance_calls: AtomicU64,
    /// Calls of the search endpoint.
    pub searches: AtomicU64,
}

impl StubState {
    pub fn next_id(&self, prefix: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        format!("{prefix}_{n:08}")
    }

    /// Makes the search lag behind writes (nothing listed) or catch up.
    pub fn set_search_lag(&self, lags: bool) {
        self.search_lags.store(lags, Ordering::SeqCst);
    }

    /// The buyer completes 3-D Secure: a waiting intent becomes capturable.
    pub fn authenticate(&self, id: &str) {
        let mut intents = self.intents.lock();
        if let Some(pi) = intents
            .get_mut(id)
            .filter(|pi| pi.status == "requires_action")
        {
            pi.status = "requires_capture".into();
            pi.charge = Some(StubCharge {
                id: self.next_id("ch"),
                amount_refunded: 0,
                refunds: Vec::new(),
            });
        }
    }
}

impl StubIntent {
    /// The API's JSON; `latest_charge` is the charge's id unless `expand` names it.
    pub fn to_json(&self, expand: bool) -> Value {
        let charge = self.charge.as_ref().map(|c| {
            if expand {
                json!({
                    "id": c.id, "object": "charge", "amount": self.amount,
                    "amount_refunded": c.amount_refunded,
                    "refunded": c.amount_refunded >= self.amount,
                })
            } else {
                json!(c.id)
            }
        });
        let next_action = (self.status == "requires_action")
            .then(|| json!({"type": "use_stripe_sdk", "use_stripe_sdk": {}}));
        json!({
            "id": self.id, "object": "payment_intent", "status": self.status,
            "amount": self.amount, "currency": "eur", "capture_method": "manual",
            "metadata": {"order_id": self.order}, "latest_charge": charge,
            "next_action": next_action,
        })
    }
}

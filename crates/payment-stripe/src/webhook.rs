//! Reading a verified Stripe event: its id, type, and the PaymentIntent it is about
//! (with our order id from the metadata). Events about other objects are read with no
//! order, which the engine acknowledges and ignores.

use boxoffice_engine::ports::{WebhookError, WebhookEvent};
use serde::Deserialize;

use crate::intent::Intent;

#[derive(Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    object: serde_json::Value,
}

pub fn parse(payload: &[u8]) -> Result<WebhookEvent, WebhookError> {
    let e: Event =
        serde_json::from_slice(payload).map_err(|e| WebhookError::Malformed(e.to_string()))?;
    let intent = (e.data.object["object"] == "payment_intent")
        .then(|| serde_json::from_value::<Intent>(e.data.object.clone()).ok())
        .flatten();
    Ok(WebhookEvent {
        id: e.id,
        kind: e.kind,
        order: intent.as_ref().and_then(Intent::order),
        reference: intent.map(|i| i.id).unwrap_or_default(),
    })
}

//! The calls the Stripe adapter makes, answered from [`StubState`]. Form bodies and
//! query strings are read as plain pairs, as Stripe's own encoding is.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde_json::{Value, json};

use super::STUB_KEY;
use super::state::{StubCharge, StubIntent, StubRefund, StubState};

type Pairs = Vec<(String, String)>;
type Shared = State<Arc<StubState>>;

pub fn router(state: Arc<StubState>) -> Router {
    Router::new()
        .route("/v1/balance", get(balance))
        .route("/v1/payment_intents", post(create).get(list))
        .route("/v1/payment_intents/search", get(search))
        .route("/v1/payment_intents/{id}", get(retrieve))
        .route("/v1/payment_intents/{id}/capture", post(capture))
        .route("/v1/payment_intents/{id}/cancel", post(cancel))
        .route("/v1/refunds", post(refund).get(refunds))
        .layer(middleware::from_fn(authenticate))
        .with_state(state)
}

fn error(status: StatusCode, kind: &str, code: &str) -> Response {
    let body = json!({"error": {"type": kind, "code": code, "message": code}});
    (status, Json(body)).into_response()
}

async fn authenticate(req: Request, next: Next) -> Response {
    let auth = req.headers().get(header::AUTHORIZATION);
    if auth.and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {STUB_KEY}")) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "api_key_invalid",
        );
    }
    next.run(req).await
}

fn field<'a>(pairs: &'a Pairs, key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Whether the query asks for `latest_charge` expanded (`expand[]=…`).
fn expands(query: &Pairs, path: &str) -> bool {
    query
        .iter()
        .any(|(k, v)| k.starts_with("expand") && v == path)
}

async fn balance(State(s): Shared) -> Json<Value> {
    s.balance_calls.fetch_add(1, Ordering::SeqCst);
    Json(json!({"object": "balance", "available": [{"amount": 0, "currency": "eur"}]}))
}

async fn create(State(s): Shared, Form(form): Form<Pairs>) -> Response {
    let amount = field(&form, "amount")
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let order = field(&form, "metadata[order_id]")
        .unwrap_or_default()
        .to_owned();
    let mut pi = StubIntent {
        id: s.next_id("pi"),
        status: "requires_capture".into(),
        amount,
        order,
        charge: None,
    };
    match field(&form, "payment_method") {
        Some("pm_card_visa") => {
            pi.charge = Some(StubCharge {
                id: s.next_id("ch"),
                amount_refunded: 0,
                refunds: Vec::new(),
            })
        }
        Some("pm_card_threeDSecure") => pi.status = "requires_action".into(),
        Some("pm_card_chargeDeclined") => {
            pi.status = "requires_payment_method".into();
            s.intents.lock().insert(pi.id.clone(), pi);
            return error(StatusCode::PAYMENT_REQUIRED, "card_error", "card_declined");
        }
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "resource_missing",
            );
        }
    }
    let body = pi.to_json(false);
    s.intents.lock().insert(pi.id.clone(), pi);
    Json(body).into_response()
}

async fn retrieve(State(s): Shared, Path(id): Path<String>, Query(q): Query<Pairs>) -> Response {
    match s.intents.lock().get(&id) {
        Some(pi) => Json(pi.to_json(expands(&q, "latest_charge"))).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "resource_missing",
        ),
    }
}

fn page(intents: impl Iterator<Item = Value>) -> Json<Value> {
    let data: Vec<Value> = intents.collect();
    Json(json!({"object": "list", "data": data, "has_more": false}))
}

async fn list(State(s): Shared, Query(q): Query<Pairs>) -> Json<Value> {
    let expand = expands(&q, "data.latest_charge");
    page(s.intents.lock().values().map(|pi| pi.to_json(expand)))
}

/// `query=metadata['order_id']:'<id>'`, the only search the adapter makes.
async fn search(State(s): Shared, Query(q): Query<Pairs>) -> Response {
    s.searches.fetch_add(1, Ordering::SeqCst);
    if s.search_rate_limited.load(Ordering::SeqCst) {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "invalid_request_error",
            "rate_limit",
        );
    }
    let query = field(&q, "query").unwrap_or_default();
    let Some(order) = query
        .strip_prefix("metadata['order_id']:'")
        .and_then(|rest| rest.strip_suffix('\''))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "parameter_invalid",
        );
    };
    let expand = expands(&q, "data.latest_charge");
    let lags = s.search_lags.load(Ordering::SeqCst);
    let intents = s.intents.lock();
    let found = intents.values().filter(|pi| !lags && pi.order == order);
    page(found.map(|pi| pi.to_json(expand))).into_response()
}

/// Moves an intent from one status to another, or refuses as Stripe does.
fn transition(s: &StubState, id: &str, from: &[&str], to: &str) -> Response {
    let mut intents = s.intents.lock();
    let Some(pi) = intents.get_mut(id) else {
        return error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "resource_missing",
        );
    };
    if !from.contains(&pi.status.as_str()) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "payment_intent_unexpected_state",
        );
    }
    pi.status = to.into();
    Json(pi.to_json(false)).into_response()
}

async fn capture(State(s): Shared, Path(id): Path<String>) -> Response {
    transition(&s, &id, &["requires_capture"], "succeeded")
}

async fn cancel(State(s): Shared, Path(id): Path<String>) -> Response {
    let from = [
        "requires_capture",
        "requires_action",
        "requires_payment_method",
    ];
    transition(&s, &id, &from, "canceled")
}

/// A refund of the rest of the charge, or of `amount` of it when given (at most what
/// is left), with its `metadata[…]` kept.
async fn refund(State(s): Shared, Form(form): Form<Pairs>) -> Response {
    let id = field(&form, "payment_intent").unwrap_or_default();
    let refund_id = s.next_id("re");
    let mut intents = s.intents.lock();
    let Some(pi) = intents.get_mut(id) else {
        return error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "resource_missing",
        );
    };
    let amount = pi.amount;
    match pi.charge.as_mut() {
        Some(c) if pi.status == "succeeded" && c.amount_refunded < amount => {
            let left = amount - c.amount_refunded;
            let part = field(&form, "amount").and_then(|a| a.parse::<i64>().ok());
            let part = part.unwrap_or(left);
            if part <= 0 || part > left {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    "amount_too_large",
                );
            }
            c.amount_refunded += part;
            let metadata = (form.iter())
                .filter_map(|(k, v)| {
                    let name = k.strip_prefix("metadata[")?.strip_suffix(']')?;
                    Some((name.to_owned(), v.clone()))
                })
                .collect();
            let made = StubRefund {
                id: refund_id,
                amount: part,
                metadata,
            };
            let answer = made.to_json(id);
            c.refunds.push(made);
            Json(answer).into_response()
        }
        Some(_) if pi.status == "succeeded" => error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "charge_already_refunded",
        ),
        _ => error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "payment_intent_unexpected_state",
        ),
    }
}

/// `GET /v1/refunds?payment_intent=…`: the intent's refunds, newest first, as Stripe
/// lists them.
async fn refunds(State(s): Shared, Query(query): Query<Pairs>) -> Response {
    let id = field(&query, "payment_intent").unwrap_or_default();
    let intents = s.intents.lock();
    let made = (intents.get(id).and_then(|pi| pi.charge.as_ref()))
        .map(|c| c.refunds.iter().rev().map(|r| r.to_json(id)).collect())
        .unwrap_or_else(Vec::new);
    Json(json!({"object": "list", "data": made, "has_more": false})).into_response()
}

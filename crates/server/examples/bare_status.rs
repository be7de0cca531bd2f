//! The baseline of the queue-status benchmark: a bare axum GET that answers with a JSON
//! document the size of the public queue document, serialized per request, on the same
//! allocator as `boxoffice serve`. Usage: `bare_status [ADDR]`; prints `listening on
//! http://ADDR`.

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: boxoffice_server::allocator::Allocator = boxoffice_server::allocator::Allocator;

async fn queue() -> Json<Value> {
    Json(json!({
        "event_id": 1, "sale_status": "open", "serving_up_to": 123_456, "queue_length": 2_000_000,
        "pool_size": 1_500_000, "opened": true, "sold_out": false, "admission_rate_per_s": 2000,
        "rate_reason": "configured", "batch_interval_ms": 2000,
        "eta_model": "ceil((position - serving_up_to) / admission_rate_per_s) seconds",
        "poll_after_ms": 3000, "fairness_commitment": "0f3a5c9e1b7d2468ace013579bdf2468ace013579bdf2468ace013579bdf2468",
        "updated_at": 1_800_000_000_000i64,
    }))
}

// And its setting, and the runtime, as `boxoffice` starts with them.
fn main() {
    boxoffice_server::allocator::start(serve()).expect("the runtime");
}

async fn serve() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .expect("bind the address given");
    println!(
        "listening on http://{}",
        listener.local_addr().expect("a bound address")
    );
    let app = Router::new().route("/v1/events/{id}/queue", get(queue));
    axum::serve(listener, app).await.expect("serve");
}

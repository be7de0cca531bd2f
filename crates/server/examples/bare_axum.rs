//! The baseline of the HTTP benchmarks: a bare axum endpoint that parses a JSON body
//! and answers with a JSON document the size of a hold (or, for the queue's join route,
//! of a join's answer), on the same runtime settings as `boxoffice serve`. Usage: `bare_axum [ADDR]` (default 127.0.0.1:0); prints
//! `listening on http://ADDR`.

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

// The same allocator as `boxoffice`, so the comparison measures the request path only.
#[global_allocator]
static ALLOC: boxoffice_server::allocator::Allocator = boxoffice_server::allocator::Allocator;

async fn hold(Json(body): Json<Value>) -> (axum::http::StatusCode, Json<Value>) {
    let quantity = body["best_available"]["quantity"].as_u64().unwrap_or(1);
    let reply = json!({
        "hold_id": "1-0123456789abcdef0123456789abcdef", "event_id": 1, "status": "held",
        "seat_ids": ["GA-GA-000001"], "prices": [5000], "price_quote": 5000 * quantity, "expires_at": 1_800_000_000_000i64,
    });
    (axum::http::StatusCode::CREATED, Json(reply))
}

/// A join's answer: a queue ticket the length of a signed one, a place and a wait.
async fn join(Json(_body): Json<Value>) -> Json<Value> {
    static TICKET: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| "t".repeat(230));
    Json(json!({
        "queue_ticket": *TICKET, "status": "waiting", "position": 123_456,
        "estimated_wait_s": 1_234, "poll_after_ms": 3_000,
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
    // SIGTERM ends the process through `exit`, so that a build instrumented for
    // profile-guided optimisation writes its profile (bench/pgo-build.sh); the task waits
    // on the signal and is off the request path.
    tokio::spawn(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("a SIGTERM handler");
        term.recv().await;
        std::process::exit(0);
    });
    // The door's bench posts scans: the same baseline answers them.
    let app = Router::new()
        .route("/v1/events/{id}/holds", post(hold))
        .route("/v1/events/{id}/scans", post(hold))
        .route("/v1/events/{id}/queue", post(join));
    axum::serve(listener, app).await.expect("serve");
}

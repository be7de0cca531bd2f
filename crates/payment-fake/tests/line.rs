//! A crowd of calls at once waits in one line for the provider's book, and no waiting
//! call parks a thread of its own. (Alone in its test binary: it counts the process's
//! threads.)

mod common;

use std::sync::Arc;

use boxoffice_engine::ports::{AuthorizeOutcome, Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, methods};
use common::request;

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 60)]
async fn two_hundred_calls_at_once_are_each_answered_without_a_thread_each() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("provider.db");
    let gw = Arc::new(FakeGateway::open(&book, FakeGatewayConfig::default()).unwrap());
    // One call first, so the blocking pool's first thread is counted in `before`.
    gw.authorize(&request(methods::VISA)).await.unwrap();
    let before = threads();

    let calls: Vec<_> = (0..200)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move {
                let req = request(methods::VISA);
                let outcome = gw.authorize(&req).await;
                (req.order, outcome)
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.unwrap());
    }
    // Idle blocking threads live on for seconds, so this counts every one the calls
    // started.
    let grown = threads().saturating_sub(before);

    for (order, outcome) in answers {
        assert!(
            matches!(outcome, Ok(AuthorizeOutcome::Approved { .. })),
            "{outcome:?}"
        );
        let found = gw.inquire(&Inquiry::by_order(order)).await.unwrap();
        assert_eq!(found.map(|p| p.state), Some(ProviderState::Authorized));
    }
    assert!(
        grown <= 2,
        "200 calls at once started {grown} threads: the waiting calls parked a thread each"
    );
}

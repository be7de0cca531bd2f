//! Where a checkout waits, in /metrics: each step of a checkout is timed
//! (`boxoffice_checkout_step_seconds{step}`), and each ledger read's query apart from its
//! wait for a reader (`boxoffice_ledger_read_query_seconds{query}`, named after the
//! ledger call), so a slow checkout can be read off a running node. A join's steps
//! likewise (`boxoffice_join_step_seconds{step}`).

use crate::common::{TestApp, spawn, spec};

/// The count of a histogram series in /metrics (0 when it was never recorded).
async fn count(app: &TestApp, series: &str) -> u64 {
    let text = app.get("/metrics", "").await.text().await.unwrap();
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse::<f64>().unwrap() as u64)
        .unwrap_or(0)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkouts_steps_and_its_ledger_reads_are_timed_in_metrics() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = app.holding(event, 2).await;
    // Counted from here: under `cargo test` the recorder is the whole test process's.
    let steps = [
        "order_of_hold",
        "get_hold",
        "velocity_gate",
        "pin",
        "insert_order",
        "authorize",
        "pinned",
        "commit_and_capture",
    ];
    let series = |step: &str| format!("boxoffice_checkout_step_seconds_count{{step=\"{step}\"}}");
    let read = "boxoffice_ledger_read_query_seconds_count{query=\"order_of_hold\"}";
    let mut before = Vec::new();
    for step in steps {
        before.push(count(&app, &series(step)).await);
    }
    let reads_before = count(&app, read).await;
    let res = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(res.status(), 201);
    // A second checkout of the hold (another tab: a new Idempotency-Key) is answered
    // from the ledger's order of the hold, a read a first checkout skips.
    let again = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(again.status(), 201);
    for (step, before) in steps.into_iter().zip(before) {
        let series = series(step);
        assert!(count(&app, &series).await > before, "{series} is counted");
    }
    assert!(count(&app, read).await > reads_before, "{read} is counted");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joins_steps_are_timed_in_metrics() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let journal = "boxoffice_join_step_seconds_count{step=\"journal\"}";
    let before = count(&app, journal).await;
    app.holding(event, 1).await;
    for step in ["line", "journal", "doc"] {
        let series = format!("boxoffice_join_step_seconds_count{{step=\"{step}\"}}");
        assert!(count(&app, &series).await >= 1, "{series} is counted");
    }
    assert!(
        count(&app, journal).await > before,
        "the join was journaled and timed"
    );
}

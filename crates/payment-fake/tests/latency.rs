//! Latency is simulated with tokio's clock, so tests with paused time pay none of it.

mod common;

use std::time::{Duration, Instant};

use boxoffice_engine::ports::{Inquiry, PaymentGateway};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, methods};
use common::request;

#[boxoffice_testkit::test(start_paused = true)]
async fn every_call_takes_the_configured_latency_without_really_sleeping() {
    let config = FakeGatewayConfig {
        latency_ms: 30_000,
        ..Default::default()
    };
    let gw = FakeGateway::in_memory(config).unwrap();
    let (wall, virtual_clock) = (Instant::now(), tokio::time::Instant::now());

    let req = request(methods::VISA);
    gw.authorize(&req).await.unwrap();
    gw.inquire(&Inquiry::by_order(req.order)).await.unwrap();

    assert!(
        virtual_clock.elapsed() >= Duration::from_secs(60),
        "{:?}",
        virtual_clock.elapsed()
    );
    assert!(
        wall.elapsed() < Duration::from_secs(10),
        "really slept {:?}",
        wall.elapsed()
    );
}

#[boxoffice_testkit::test(start_paused = true)]
async fn a_caller_timeout_shorter_than_the_latency_fires() {
    let config = FakeGatewayConfig {
        latency_ms: 5_000,
        ..Default::default()
    };
    let gw = FakeGateway::in_memory(config).unwrap();
    let req = request(methods::VISA);
    let answer = tokio::time::timeout(Duration::from_secs(1), gw.authorize(&req)).await;
    assert!(
        answer.is_err(),
        "the caller gave up before the provider answered"
    );
    // Nothing was recorded: the provider had not acted yet when the caller gave up.
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        gw.inquire(&Inquiry::by_order(req.order)),
    )
    .await;
    assert_eq!(found.unwrap(), Ok(None));
}

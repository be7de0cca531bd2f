//! The binary with `payments = "stripe"` against localstripe: a purchase authorizes,
//! commits and captures through the Stripe-compatible adapter, a failing card is
//! declined with nothing sold, and the audit reconciles against the provider's records.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::http::admission_token;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::localstripe::LocalStripe;
use boxoffice_testkit::harness::path_str;
use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR: &str = "stripe-test-operator-key-0123";

async fn admitted(c: &reqwest::Client, base: &str, event: i64) -> (String, String) {
    let (_, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str().unwrap().to_string();
    let (_, j) = call(
        c,
        Method::POST,
        format!("{base}/v1/events/{event}/queue"),
        &token,
        json!({}),
    )
    .await;
    let ticket = j["queue_ticket"].as_str().unwrap().to_string();
    let admission = admission_token(c, base, &ticket).await;
    (token, admission)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purchase_through_the_stripe_adapter_is_captured_and_a_failing_card_sells_nothing() {
    let stripe = LocalStripe::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("boxoffice.toml");
    let toml = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"stripe\"\n[engine]\nadmission_interval_ms = 50\n\
         [stripe]\nbase_url = \"{}\"\nsecret_key = \"sk_test_boxoffice\"\nwebhook_secret = \"whsec_boxoffice\"\n",
        stripe.base
    );
    std::fs::write(&config, toml).unwrap();
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&config),
    ];
    let (_server, base) = BOXOFFICE.start(&args).await;
    let c = boxoffice_testkit::harness::http::client();
    let spec = serde_json::to_value(crate::common::spec(1, 10, 0, 4)).unwrap();
    let (_, e) = call(
        &c,
        Method::POST,
        format!("{base}/v1/events"),
        OPERATOR,
        spec,
    )
    .await;
    let event = e["event_id"].as_i64().unwrap();
    call(
        &c,
        Method::POST,
        format!("{base}/v1/events/{event}/open"),
        OPERATOR,
        json!({}),
    )
    .await;

    let (token, admission) = admitted(&c, &base, event).await;
    let (status, hold) = call(
        &c,
        Method::POST,
        format!("{base}/v1/events/{event}/holds"),
        &admission,
        json!({"seat_ids": ["A-1-1", "A-1-2"]}),
    )
    .await;
    assert_eq!(status, 201, "{hold}");
    let url = format!(
        "{base}/v1/holds/{}/checkout",
        hold["hold_id"].as_str().unwrap()
    );
    let (status, order) = call(
        &c,
        Method::POST,
        url,
        &token,
        json!({"payment_method": "pm_card_visa"}),
    )
    .await;
    assert_eq!(
        (status, order["status"].as_str()),
        (201, Some("confirmed")),
        "{order}"
    );
    assert_eq!(order["total"], json!(10_000));

    let (token, admission) = admitted(&c, &base, event).await;
    let (_, hold) = call(
        &c,
        Method::POST,
        format!("{base}/v1/events/{event}/holds"),
        &admission,
        json!({"seat_ids": ["A-1-3"]}),
    )
    .await;
    let url = format!(
        "{base}/v1/holds/{}/checkout",
        hold["hold_id"].as_str().unwrap()
    );
    let (status, err) = call(
        &c,
        Method::POST,
        url,
        &token,
        json!({"payment_method": "pm_card_chargeCustomerFail"}),
    )
    .await;
    assert_eq!(
        (status, err["error"].as_str()),
        (402, Some("payment_declined")),
        "{err}"
    );

    let ev: Value = c
        .get(format!("{base}/v1/events/{event}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ev["counts"]["sold"].clone(), ev["counts"]["free"].clone()),
        (json!(2), json!(8))
    );
    let mut argv = vec!["audit", "--json"];
    argv.extend(args);
    let (clean, report) = BOXOFFICE.run(&argv).await;
    assert!(clean, "{report}");
    assert_eq!(report["seats_sold"], json!(2));
    assert!(
        report["provider_payments"].as_u64().unwrap() >= 2,
        "the audit read the provider's records: {report}"
    );
}

//! Processed webhook ids are shared by the nodes (P4): the provider's webhook delivered
//! to two nodes at once is handled by one and recognised as a duplicate by the other,
//! and delivered again after both restarted it is still a duplicate.

use std::time::Duration;

use boxoffice_domain::Millis;
use boxoffice_payment_fake::methods;
use boxoffice_testkit::harness::http::{admission_token, call};
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::BOXOFFICE;
use crate::common::books::provider_book;
use crate::{Backing, argv};

const OPERATOR: &str = "webhook-test-operator-key-0123";

async fn deliver(c: &reqwest::Client, node: &str, payload: &str) -> (u16, Value) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let sig = boxoffice_payment_fake::signature::sign(
        "whsec_fake_boxoffice",
        payload.as_bytes(),
        Millis(now).0 / 1000,
    );
    let res = c
        .post(format!("{node}/v1/payments/webhook"))
        .header("Stripe-Signature", sig)
        .body(payload.to_string())
        .send()
        .await
        .expect("the node answers");
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 200)]
async fn a_webhook_delivered_to_two_nodes_and_after_a_restart_is_handled_once() {
    // The sweep waits an hour: only the webhook settles the order.
    let extra = "[engine]\nadmission_interval_ms = 50\nrecovery_after_s = 3600\n";
    let backing = Backing::new(OPERATOR, extra);
    let args = backing.args();
    let argv = argv(&args);
    let nodes = join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
    // Generous: this binary's heavier tests (tens of thousands of joins) run beside it.
    let c = boxoffice_testkit::harness::http::client();
    let spec = serde_json::to_value(crate::common::spec(1, 10, 0, 4)).unwrap();
    // A node shedding load answers 503 and changes nothing: ask again, a few times.
    let mut created = (0, serde_json::Value::Null);
    for _ in 0..5 {
        let url = format!("{}/v1/events", urls[0]);
        created = call(&c, Method::POST, url, OPERATOR, spec.clone()).await;
        if !matches!(created.0, 0 | 503) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (status, e) = created;
    let event = (e["event_id"].as_i64()).unwrap_or_else(|| panic!("event created: {status} {e}"));
    let open = format!("{}/v1/events/{event}/open", urls[0]);
    assert_eq!(
        call(&c, Method::POST, open, OPERATOR, json!({})).await.0,
        200
    );

    let (_, b) = call(
        &c,
        Method::POST,
        format!("{}/v1/buyers", urls[0]),
        "",
        json!({}),
    )
    .await;
    let token = b["token"].as_str().expect("a buyer token").to_string();
    let queue = format!("{}/v1/events/{event}/queue", urls[0]);
    let (_, j) = call(&c, Method::POST, queue, &token, json!({})).await;
    let ticket = j["queue_ticket"].as_str().expect("a queue ticket");
    let admission = admission_token(&c, &urls[0], ticket).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let holds = format!("{}/v1/events/{event}/holds", urls[0]);
    let (_, h) = call(&c, Method::POST, holds, &admission, body).await;
    let hold = h["hold_id"].as_str().expect("a hold");
    let pay = json!({"payment_method": methods::THREE_D_SECURE});
    let checkout = format!("{}/v1/holds/{hold}/checkout", urls[0]);
    let (s, o) = call(&c, Method::POST, checkout, &token, pay).await;
    assert_eq!(s, 202, "a payment waiting for the buyer: {o}");
    let order = o["order"]["order_id"].as_str().expect("an order id");

    let book = provider_book(backing.dir.path());
    book.complete_action(order.parse().unwrap(), true)
        .await
        .unwrap();
    let approval = book.undelivered_webhooks(100).await.unwrap().pop().unwrap();
    let payload = approval.payload.as_str();

    let answers = join_all(urls.iter().map(|u| deliver(&c, u, payload))).await;
    eprintln!("the same webhook at two nodes at once: {answers:?}");
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let handled: Vec<&Value> = answers
        .iter()
        .map(|(_, a)| &a["duplicate"])
        .filter(|d| **d == json!(false))
        .collect();
    assert_eq!(handled.len(), 1, "handled by exactly one node: {answers:?}");
    let metric = "boxoffice_payment_webhooks_duplicate_total";
    let mut duplicates = 0.0;
    for u in &urls {
        let text = c.get(format!("{u}/metrics")).send().await.unwrap();
        let text = text.text().await.unwrap();
        duplicates += text
            .lines()
            .filter_map(|l| l.strip_prefix(metric)?.trim().parse::<f64>().ok())
            .sum::<f64>();
    }
    assert_eq!(duplicates, 1.0, "the other node counted a duplicate");

    // Both nodes restart (new processes, empty memories): still a duplicate.
    drop(nodes);
    let nodes = join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await;
    for (_, u) in &nodes {
        let (s, again) = deliver(&c, u, payload).await;
        assert_eq!(s, 200, "{again}");
        assert_eq!(again["duplicate"], json!(true), "after a restart: {again}");
    }
    let url = format!("{}/v1/orders/{order}", nodes[0].1);
    let (_, done) = call(&c, Method::GET, url, &token, Value::Null).await;
    assert_eq!(done["status"], json!("confirmed"), "{done}");
    drop(nodes);
}

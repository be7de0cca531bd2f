//! The sender against a scripted receiver on loopback: retries with backoff, marks
//! delivered only on a 2xx, and signs what the fake's own verifier accepts.

use std::sync::Arc;

use boxoffice_domain::{Millis, Money, OrderId};
use boxoffice_engine::ports::{AuthorizeRequest, ManualClock, PaymentGateway};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::{FakeGatewayConfig, methods};

const NOW: Millis = Millis(1_800_000_000_000);

/// A receiver answering each request with the next status of `script` (then 200),
/// keeping every (signature header, body) it was sent.
async fn receiver(script: Vec<u16>) -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        let mut script = script.into_iter();
        while let Ok((mut sock, _)) = listener.accept().await {
            let (signature, body) = read_request(&mut sock).await;
            log.lock().push((signature, body));
            let status = script.next().unwrap_or(200);
            let reply =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (url, seen)
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> (String, String) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = sock.read(&mut buf).await.unwrap_or(0);
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| {
                        l.split_once(": ")
                            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                    })
                    .map(|(_, v)| v.to_string())
            };
            let len: usize = header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if body.len() >= len || n == 0 {
                return (
                    header("stripe-signature").unwrap_or_default(),
                    body.to_string(),
                );
            }
        }
        if n == 0 {
            return (String::new(), String::new());
        }
    }
}

/// A fake with one 3-D Secure payment, so one webhook waits in its outbox.
async fn fake_with_one_webhook() -> Arc<FakeGateway> {
    let config = FakeGatewayConfig {
        webhook_retry_min_ms: 40,
        ..Default::default()
    };
    let fake = Arc::new(FakeGateway::in_memory(config).unwrap());
    let req = AuthorizeRequest {
        order: OrderId::random(),
        amount: Money(5_000),
        currency: "EUR".into(),
        payment_method: methods::THREE_D_SECURE.into(),
    };
    fake.authorize(&req).await.unwrap();
    assert_eq!(fake.undelivered_webhooks(10).await.unwrap().len(), 1);
    fake
}

#[test]
fn the_wait_doubles_per_failure_up_to_the_maximum() {
    let (min, max) = (Duration::from_millis(500), Duration::from_secs(60));
    let waits: Vec<u64> = [1, 2, 3, 8, 40]
        .iter()
        .map(|&a| backoff(min, max, a).as_millis() as u64)
        .collect();
    assert_eq!(waits, vec![500, 1_000, 2_000, 60_000, 60_000]);
}

#[tokio::test]
async fn a_refused_webhook_is_retried_after_its_backoff_and_then_marked_delivered() {
    let fake = fake_with_one_webhook().await;
    let (url, seen) = receiver(vec![500]).await;
    let mut sender =
        WebhookSender::new(fake.clone(), url, Arc::new(ManualClock::new(NOW))).unwrap();

    assert_eq!(sender.step().await.unwrap(), 0);
    assert_eq!(fake.undelivered_webhooks(10).await.unwrap().len(), 1);
    // Inside the backoff nothing is sent.
    assert_eq!(sender.step().await.unwrap(), 0);
    assert_eq!(seen.lock().len(), 1);

    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(sender.step().await.unwrap(), 1);
    assert!(fake.undelivered_webhooks(10).await.unwrap().is_empty());
    let (signature, body) = seen.lock()[1].clone();
    assert!(body.contains("payment_intent.requires_action"), "{body}");
    let event = fake
        .verify_webhook(body.as_bytes(), &signature, NOW)
        .expect("a valid signature");
    assert!(event.order.is_some());
}

#[tokio::test]
async fn nothing_is_marked_delivered_while_the_receiver_is_unreachable() {
    let fake = fake_with_one_webhook().await;
    // A port that was free a moment ago: nobody listens there.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/hook");
    let mut sender =
        WebhookSender::new(fake.clone(), url, Arc::new(ManualClock::new(NOW))).unwrap();
    assert_eq!(sender.step().await.unwrap(), 0);
    assert_eq!(fake.undelivered_webhooks(10).await.unwrap().len(), 1);
}

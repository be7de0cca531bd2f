//! The Stripe adapter over HTTPS against a stand-in the test starts with a certificate
//! from its own CA: reaching it with the CA configured, refusing it without, reading
//! refunds, asking by reference, and a search that lags behind writes.

use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::{Millis, Money, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, ManualClock, PaymentError, PaymentGateway,
    ProviderState,
};
use boxoffice_payment_stripe::{CredentialError, StripeConfig, StripeGateway};
use boxoffice_testkit::stripe_stub::{STUB_KEY, StripeStub};
use boxoffice_testkit::tls::TestCa;

const NOW: Millis = Millis(1_800_000_000_000);

struct Setup {
    stub: StripeStub,
    ca_file: tempfile::NamedTempFile,
    clock: Arc<ManualClock>,
}

async fn setup() -> Setup {
    let ca = TestCa::new("boxoffice test CA");
    let stub = StripeStub::start(&ca).await;
    let ca_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca_file.path(), ca.cert_pem()).unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    Setup {
        stub,
        ca_file,
        clock,
    }
}

impl Setup {
    fn config(&self) -> StripeConfig {
        StripeConfig {
            base_url: self.stub.base.clone(),
            secret_key: STUB_KEY.into(),
            webhook_secret: "whsec_stub".into(),
            ca_file: Some(self.ca_file.path().to_path_buf()),
            timeout_ms: 5_000,
            ..StripeConfig::default()
        }
    }

    fn gateway(&self) -> StripeGateway {
        StripeGateway::with_clock(self.config(), self.clock.clone()).unwrap()
    }
}

fn request(method: &str) -> AuthorizeRequest {
    AuthorizeRequest {
        order: OrderId::random(),
        amount: Money(4_200),
        currency: "EUR".into(),
        payment_method: method.into(),
    }
}

async fn authorized(gw: &StripeGateway, req: &AuthorizeRequest) -> String {
    let out = tokio::time::timeout(Duration::from_secs(10), gw.authorize(req)).await;
    match out.expect("no hang").unwrap() {
        AuthorizeOutcome::Approved { reference } => reference,
        AuthorizeOutcome::ActionRequired { reference, .. } => reference,
        other => panic!("expected an intent, got {other:?}"),
    }
}

fn by_reference(req: &AuthorizeRequest, reference: &str, created_at: Millis) -> Inquiry {
    Inquiry {
        order: req.order,
        reference: Some(reference.into()),
        created_at,
    }
}

fn by_order(order: OrderId, created_at: Millis) -> Inquiry {
    Inquiry {
        order,
        reference: None,
        created_at,
    }
}

#[boxoffice_testkit::test]
async fn stripe_client_reaches_an_https_provider() {
    let s = setup().await;
    let gw = s.gateway();
    gw.check_credentials().await.unwrap();
    let req = request("pm_card_visa");
    let reference = authorized(&gw, &req).await;
    gw.capture(req.order, &reference).await.unwrap();
    let paid = gw.inquire(&by_reference(&req, &reference, NOW)).await;
    let paid = paid.unwrap().expect("on record");
    assert_eq!(
        (paid.state, paid.amount),
        (ProviderState::Captured, Money(4_200))
    );
}

#[boxoffice_testkit::test]
async fn an_untrusted_certificate_is_refused() {
    let s = setup().await;
    let wrong = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(wrong.path(), TestCa::new("another CA").cert_pem()).unwrap();
    for ca_file in [None, Some(wrong.path().to_path_buf())] {
        let config = StripeConfig {
            ca_file: ca_file.clone(),
            ..s.config()
        };
        let gw = StripeGateway::new(config).unwrap();
        match gw.authorize(&request("pm_card_visa")).await {
            Err(PaymentError::Unavailable(why)) => {
                assert!(why.contains("certificate"), "{ca_file:?}: {why}")
            }
            other => panic!("{ca_file:?}: expected a refused certificate, got {other:?}"),
        }
        let check = gw.check_credentials().await.unwrap_err();
        assert!(
            matches!(&check, CredentialError::Unreachable { why, .. } if why.contains("certificate")),
            "{check}"
        );
    }
    assert!(s.stub.state.intents.lock().is_empty(), "nothing reached it");
}

#[boxoffice_testkit::test]
async fn a_refunded_payment_intent_reads_as_refunded() {
    let s = setup().await;
    let gw = s.gateway();
    let req = request("pm_card_visa");
    let reference = authorized(&gw, &req).await;
    gw.capture(req.order, &reference).await.unwrap();
    gw.refund(req.order, &reference).await.unwrap();
    gw.refund(req.order, &reference).await.unwrap(); // a retry counts as done
    let read = [
        gw.inquire(&by_reference(&req, &reference, NOW)).await,
        gw.inquire(&Inquiry::by_order(req.order)).await,
    ];
    for found in read {
        assert_eq!(found.unwrap().unwrap().state, ProviderState::Refunded);
    }
    let all = gw.all_payments().await.unwrap();
    let mine = all.iter().find(|p| p.order == req.order).unwrap();
    assert_eq!(mine.state, ProviderState::Refunded);
}

#[boxoffice_testkit::test]
async fn an_inquiry_with_a_reference_reads_the_payment_the_search_cannot_see_yet() {
    let s = setup().await;
    let gw = s.gateway();
    s.stub.state.set_search_lag(true);
    let req = request("pm_card_threeDSecure");
    let reference = authorized(&gw, &req).await;
    s.stub.state.authenticate(&reference);
    let found = gw.inquire(&by_reference(&req, &reference, NOW)).await;
    assert_eq!(found.unwrap().unwrap().state, ProviderState::Authorized);
}

#[boxoffice_testkit::test]
async fn a_search_miss_within_the_settle_window_is_not_final() {
    let s = setup().await;
    let gw = s.gateway();
    s.stub.state.set_search_lag(true);
    let req = request("pm_card_visa");
    authorized(&gw, &req).await;
    let settle_ms = StripeConfig::default().search_settle_s as i64 * 1000;
    for order in [req.order, OrderId::random()] {
        let recent = gw.inquire(&by_order(order, Millis(NOW.0 - 10_000))).await;
        assert!(
            matches!(&recent, Err(PaymentError::Unavailable(why)) if why.contains("search")),
            "a miss moments after the order is not yet an answer: {recent:?}"
        );
    }
    let old = Millis(NOW.0 - settle_ms - 1);
    let unknown = gw.inquire(&by_order(OrderId::random(), old)).await;
    assert_eq!(unknown, Ok(None), "past the window a miss is final");
    s.stub.state.set_search_lag(false);
    let caught_up = gw
        .inquire(&by_order(req.order, Millis(NOW.0 - 10_000)))
        .await;
    assert_eq!(caught_up.unwrap().unwrap().state, ProviderState::Authorized);
}

#[boxoffice_testkit::test]
async fn a_rejected_secret_key_fails_the_credential_check() {
    let s = setup().await;
    let config = StripeConfig {
        secret_key: "sk_test_wrong".into(),
        ..s.config()
    };
    let gw = StripeGateway::new(config).unwrap();
    let e = gw.check_credentials().await.unwrap_err();
    assert!(matches!(e, CredentialError::Refused(401)), "{e:?}");
    assert!(
        e.to_string().contains("secret key was refused (401)"),
        "{e}"
    );
    assert_eq!(
        s.stub
            .state
            .balance_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

/// A part refund asked again under the same key (its answer lost, the sweep retrying)
/// refunds once, though the stand-in, like localstripe and like Stripe after a day,
/// keeps no Idempotency-Keys: the adapter finds the refund by the key in its metadata.
#[boxoffice_testkit::test]
async fn a_part_refund_asked_twice_under_one_key_refunds_once() {
    let s = setup().await;
    let gw = s.gateway();
    let req = request("pm_card_visa");
    let reference = authorized(&gw, &req).await;
    gw.capture(req.order, &reference).await.unwrap();
    let key = format!("{}.ticket-1", req.order);
    for _ in 0..2 {
        gw.refund_part(req.order, &reference, Money(1_000), &key)
            .await
            .unwrap();
    }
    let other = format!("{}.rest", req.order);
    gw.refund_part(req.order, &reference, Money(500), &other)
        .await
        .unwrap();
    let intents = s.stub.state.intents.lock();
    let charge = intents[&reference].charge.as_ref().unwrap();
    let made: Vec<i64> = charge.refunds.iter().map(|r| r.amount).collect();
    assert_eq!(made, vec![1_000, 500], "one refund per key");
    assert_eq!(charge.amount_refunded, 1_500);
}

/// Every authorization searches for the order's PaymentIntent first, and Stripe's
/// Search API allows some 20 reads a second: past that a refused search made every
/// checkout an unanswered payment (pending, then voided minutes later) although nothing
/// had been asked of Stripe. A failed search now leaves the create to its
/// Idempotency-Key, and the payment is made.
#[boxoffice_testkit::test]
async fn a_rate_limited_search_before_authorizing_does_not_stop_the_payment() {
    use std::sync::atomic::Ordering;

    let s = setup().await;
    let gw = s.gateway();
    s.stub
        .state
        .search_rate_limited
        .store(true, Ordering::SeqCst);
    let req = request("pm_card_visa");
    let reference = authorized(&gw, &req).await;
    assert!(
        s.stub.state.searches.load(Ordering::SeqCst) >= 1,
        "searched first"
    );
    gw.capture(req.order, &reference).await.unwrap();
    let paid = gw.inquire(&by_reference(&req, &reference, NOW)).await;
    assert_eq!(
        paid.unwrap().map(|p| p.state),
        Some(ProviderState::Captured)
    );
}

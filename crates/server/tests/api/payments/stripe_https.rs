//! The application with `payments = "stripe"` against an HTTPS stand-in whose
//! certificate comes from a CA the test made and configures (`stripe.ca_file`). Its
//! search lags behind writes, as Stripe's does: an order that has the provider's
//! reference must be settled by it, not by a search that cannot see it yet.

use crate::common::{TestApp, spawn_with, spec};
use boxoffice_domain::{BuyerId, HoldId, Money, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{AuthorizeOutcome, AuthorizeRequest, InsertOrder, Order, OrderSeat};
use boxoffice_payment_stripe::StripeConfig;
use boxoffice_server::config::PaymentsChoice;
use boxoffice_testkit::stripe_stub::{STUB_KEY, StripeStub};
use boxoffice_testkit::tls::TestCa;

async fn app_on(stub: &StripeStub, ca: &TestCa, dir: &std::path::Path) -> TestApp {
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    let base_url = stub.base.clone();
    spawn_with(move |c| {
        c.payments = Some(PaymentsChoice::Stripe);
        c.stripe = StripeConfig {
            base_url,
            secret_key: STUB_KEY.into(),
            webhook_secret: "whsec_stub".into(),
            ca_file: Some(ca_file),
            ..StripeConfig::default()
        };
    })
    .await
}

/// An order left `authorized` by a node that died between the provider's approval
/// and the ledger commit; its hold is gone. Returns it with the PaymentIntent's id.
async fn authorized_order_without_its_hold(app: &TestApp) -> (OrderId, String) {
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let ports = app.engine.ports();
    let now = ports.clock.now();
    let order = Order {
        id: OrderId::random(),
        event,
        buyer: BuyerId::random(),
        hold: HoldId::random(event),
        seats: vec![OrderSeat {
            seat_id: "A-1-1".into(),
            price: Money(5_000),
            attendee: None,
        }],
        total: Money(5_000),
        currency: "EUR".into(),
        state: OrderState::PendingPayment,
        payment_ref: None,
        created_at: now,
        updated_at: now,
        attempts: 0,
        next_attempt_at: now,
    };
    let inserted = ports.ledger.insert_order(&order).await.unwrap();
    assert_eq!(inserted, InsertOrder::Inserted);
    let req = AuthorizeRequest {
        order: order.id,
        amount: order.total,
        currency: order.currency.clone(),
        payment_method: "pm_card_visa".into(),
    };
    let AuthorizeOutcome::Approved { reference } = ports.payments.authorize(&req).await.unwrap()
    else {
        panic!("the stand-in approves pm_card_visa");
    };
    let moved = ports
        .ledger
        .apply(order.id, OrderEvent::Authorized, Some(&reference), now);
    moved.await.unwrap();
    (order.id, reference)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_authorization_the_search_cannot_see_is_voided_by_its_reference() {
    let ca = TestCa::new("stripe stand-in CA");
    let stub = StripeStub::start(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let app = app_on(&stub, &ca, dir.path()).await;
    stub.state.set_search_lag(true);
    let (id, reference) = authorized_order_without_its_hold(&app).await;

    app.clock
        .advance_secs(app.engine.config().recovery_after_s as i64 + 1);
    app.engine.recovery_step().await.unwrap();

    let order = app.engine.ports().ledger.order(id).await.unwrap().unwrap();
    assert_eq!(order.state, OrderState::Voided);
    let status = stub.state.intents.lock()[&reference].status.clone();
    assert_eq!(status, "canceled", "the authorization was given back");
}

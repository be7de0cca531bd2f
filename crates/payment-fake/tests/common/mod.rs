//! Shared helpers of the fake gateway's tests.
#![allow(dead_code)] // each test binary uses a different subset

use boxoffice_domain::{Money, OrderId};
use boxoffice_engine::ports::{AuthorizeOutcome, AuthorizeRequest, PaymentGateway};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig};

pub fn gateway() -> FakeGateway {
    FakeGateway::in_memory(FakeGatewayConfig::default()).expect("in-memory fake opens")
}

pub fn request(method: &str) -> AuthorizeRequest {
    AuthorizeRequest {
        order: OrderId::random(),
        amount: Money(12_500),
        currency: "EUR".into(),
        payment_method: method.into(),
    }
}

/// Authorizes with a card that approves and returns the order and its reference.
pub async fn authorized(gw: &FakeGateway) -> (OrderId, String) {
    let req = request("pm_card_visa");
    match gw.authorize(&req).await {
        Ok(AuthorizeOutcome::Approved { reference }) => (req.order, reference),
        other => panic!("expected an approval, got {other:?}"),
    }
}

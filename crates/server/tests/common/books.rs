//! What an embedded node keeps in its data directory, read from the files themselves: the
//! ledger's orders and the fake provider's own book. A test that killed the server reads
//! them before the restart (what the kill left in flight) and after recovery (where every
//! order and every payment ended).

use std::collections::BTreeMap;
use std::path::Path;

use boxoffice_domain::{OrderId, OrderState};
use boxoffice_engine::ports::{Inquiry, Ledger, PaymentGateway, ProviderState};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig};
use boxoffice_store_sqlite::{SqliteLedger, SqliteOptions};

/// The ledger in `dir`, opened beside the server as a second process would.
pub fn ledger(dir: &Path) -> SqliteLedger {
    SqliteLedger::open(dir.join("ledger.db"), SqliteOptions::default())
        .expect("the ledger in the data directory opens")
}

/// Every order of the ledger in `dir`, with its state.
pub async fn ledger_orders(dir: &Path) -> BTreeMap<OrderId, OrderState> {
    let ledger = ledger(dir);
    let facts = ledger.audit_facts().await.expect("the ledger's orders");
    facts.orders.into_iter().map(|(id, s, _)| (id, s)).collect()
}

/// How many orders are in each state, for messages.
pub fn by_state(orders: &BTreeMap<OrderId, OrderState>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for s in orders.values() {
        *out.entry(format!("{s:?}")).or_default() += 1;
    }
    out
}

/// Asserts the kill caught checkouts half-way: at least one order of the ledger is in a
/// state that is not final. Returns how many.
pub async fn assert_orders_in_flight(dir: &Path) -> usize {
    let orders = ledger_orders(dir).await;
    let in_flight = orders.values().filter(|s| !s.is_final()).count();
    assert!(
        in_flight >= 1,
        "the kill landed when no order was in flight (ledger: {:?}); nothing was tested",
        by_state(&orders)
    );
    in_flight
}

/// The fake provider's book in `dir`, opened beside the server as a second process would.
pub fn provider_book(dir: &Path) -> FakeGateway {
    FakeGateway::open(dir.join("fake-provider.db"), FakeGatewayConfig::default())
        .expect("the provider's book opens")
}

/// Every order a buyer was told 201 for is confirmed in the ledger and captured in the
/// provider's own book.
pub async fn assert_confirmed_and_captured(dir: &Path, told_201: &[OrderId]) {
    let orders = ledger_orders(dir).await;
    let book = provider_book(dir);
    for id in told_201 {
        let paid = book.inquire(&Inquiry::by_order(*id)).await;
        let paid = paid.expect("the provider answers");
        let paid = paid.map(|p| p.state);
        assert_eq!(
            (orders.get(id), paid),
            (Some(&OrderState::Confirmed), Some(ProviderState::Captured)),
            "order {id} was answered 201: (ledger, provider) must be (confirmed, captured)"
        );
    }
}

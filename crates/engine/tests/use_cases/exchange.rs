//! The exchange's swaps when two drivers meet one: the buyer's own purchase and a sweep
//! that finds the provider silent.

use std::time::{Duration, Instant};

use boxoffice_domain::exchange::{ExchangeRules, SwapState};
use boxoffice_domain::{Millis, Money};
use boxoffice_engine::ports::{Exchange, Inquiry, PaymentGateway, ProviderState};

use boxoffice_engine::{CheckoutOutcome, EngineConfig, Origin};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};

use super::{admitted, hold_named};
use crate::common::*;

/// A sweep took the provider's silence about a purchase in flight for "never charged"
/// and undid the swap; the buyer's authorization then landed and was captured, the
/// swap's move to `charged` lost to the undo, and the answer was "undone" with the
/// money kept: a charge without a ticket. An authorization whose swap ended meanwhile
/// is now voided instead of captured (and a capture that still loses its move is
/// refunded).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_authorized_after_a_sweep_undid_its_swap_is_not_kept() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node_with_after_sale(&d, EngineConfig::default());
    let doors = Millis(T0.0 + 30 * 86_400_000);
    let event = scheduled_event_with(&n.engine, 1, 4, |sale| {
        sale.exchange = Some(ExchangeRules {
            doors_at: doors,
            closes_before_doors_s: 0,
            fee_bps: 1_000,
            fee_fixed: Money(0),
        });
    })
    .await;
    n.engine.open_sale(event).await.expect("opened");
    let seller = admitted(&n.engine, event).await;
    let hold = hold_named(&n.engine, &seller, &["A-1-1"])
        .await
        .expect("held");
    let bought = n
        .engine
        .checkout(&seller.who, hold.hold, methods::VISA)
        .await;
    assert!(
        matches!(bought, Ok(CheckoutOutcome::Confirmed(_))),
        "{bought:?}"
    );
    let ticket = n.engine.my_tickets(&seller.who).await.expect("tickets")[0].ticket_id;
    let listing = n
        .engine
        .list_ticket(&seller.who, ticket, Money(5_000))
        .await;
    let listing = listing.expect("listed").listing_id;

    // The buyer's authorization waits at the provider's door.
    let buyer = admitted(&n.engine, event).await;
    n.payments.close_gate();
    let engine = n.engine.clone();
    let purchase = tokio::spawn(async move {
        let origin = Origin::default();
        engine
            .buy_listing(&buyer, listing, methods::VISA, &origin)
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while n.payments.waiting_at_gate() == 0 {
        assert!(
            Instant::now() < deadline,
            "the purchase never reached the provider"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A sweep that takes every unfinished swap (as the start-up sweep did) hears
    // nothing of it from the provider and undoes it.
    n.engine
        .exchange_sweep(Millis(i64::MAX))
        .await
        .expect("swept");
    let swaps = d.ledger.unfinished_swaps(Millis(i64::MAX), 10).await;
    assert!(swaps.expect("read").is_empty(), "the sweep undid the swap");

    n.payments.open_gate(1);
    let answered = tokio::time::timeout(Duration::from_secs(10), purchase)
        .await
        .expect("the purchase ends")
        .expect("the task runs");
    let swap = answered.expect("answered").swap_id;
    let swap = d.ledger.swap(swap).await.expect("read").expect("the swap");
    assert_eq!(swap.state, SwapState::Undone);
    let money = d.fake.inquire(&Inquiry::by_order(swap.charge)).await;
    let money = money.expect("the provider answers").map(|p| p.state);
    assert_eq!(
        money,
        Some(ProviderState::Voided),
        "no money was taken for the undone swap"
    );
}

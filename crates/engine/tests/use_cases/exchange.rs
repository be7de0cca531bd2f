//! The exchange's swaps when two drivers meet one: the buyer's own purchase and a sweep
//! that finds the provider silent.

use std::time::{Duration, Instant};

use boxoffice_domain::exchange::{ExchangeRules, SwapState};
use boxoffice_domain::{Millis, Money};
use boxoffice_engine::ports::{Exchange, Inquiry, PaymentGateway, ProviderState};

use boxoffice_engine::{CheckoutOutcome, EngineConfig, Origin};
use boxoffice_payment_fake::{FakeGatewayConfig, Op, methods};

use super::{admitted, hold_named};
use crate::common::watched::Side;
use crate::common::*;

/// A sweep took the provider's silence about a purchase in flight for "never charged"
/// and undid the swap; the buyer's authorization then landed and was captured, the
/// swap's move to `charged` lost to the undo, and the answer was "undone" with the
/// money kept: a charge without a ticket. An authorization whose swap ended meanwhile
/// is now voided instead of captured (and a capture that still loses its move is
/// refunded).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_authorized_after_a_sweep_undid_its_swap_is_not_kept() {
    let (d, n, event, listing) = listed().await;
    // The buyer's authorization waits at the provider's door.
    let buyer = admitted(&n.engine, event).await;
    n.payments.close_gate();
    let purchase = buying(&n, buyer, listing);
    let p = n.payments.clone();
    until_reached("the purchase's authorization", 1, || p.waiting_at_gate()).await;
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
    let money = charge_state(&d, swap.charge).await;
    assert_eq!(
        money,
        Some(ProviderState::Voided),
        "no money was taken for the undone swap"
    );
}

/// A node with an exchange, one seller's ticket listed on it: (durable parts, node,
/// event, listing).
async fn listed() -> (
    Durable,
    Node,
    boxoffice_domain::EventId,
    boxoffice_domain::ListingId,
) {
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
    (d, n, event, listing)
}

/// Polls `reached` until it is `n`, for at most 10 s.
async fn until_reached(what: &str, n: usize, reached: impl Fn() -> usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while reached() < n {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The narrow window the check before the capture leaves: a sweep heard nothing of a
/// purchase from the provider and, as the buyer's authorization landed and its swap
/// read as still reserved, undid the swap; the buyer's capture then took the money and
/// its move to `charged` lost. The refund that gave the money back was tried once, and
/// a failed one left the buyer charged for a ticket they did not get, with nothing but
/// the audit's report to say so. The swap now goes back to `refunding`, whose refund
/// the sweep retries until it is made.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_captured_after_a_sweep_undid_its_swap_is_refunded_even_when_the_first_refund_fails()
 {
    let (d, n, event, listing) = listed().await;
    let buyer = admitted(&n.engine, event).await;
    let p = n.payments.clone();
    p.close_gate_at(Op::Authorize, Side::Before);
    p.close_gate_at(Op::Capture, Side::Before);
    p.close_gate_at(Op::Inquire, Side::After);
    let purchase = buying(&n, buyer, listing);
    until_reached("the authorization", 1, || p.reached(Op::Authorize)).await;
    // The sweep asks the provider while the authorization has not landed: nothing.
    let engine = n.engine.clone();
    let sweep = tokio::spawn(async move { engine.exchange_sweep(Millis(i64::MAX)).await });
    until_reached("the sweep's inquiry", 1, || p.reached(Op::Inquire)).await;
    // The authorization lands, the swap still reads as reserved, the capture waits.
    p.open_gate_at(Op::Authorize, 1);
    until_reached("the capture", 1, || p.reached(Op::Capture)).await;
    // The sweep hears its "nothing" and undoes the swap.
    p.open_gate_at(Op::Inquire, 1);
    let swept = tokio::time::timeout(Duration::from_secs(10), sweep).await;
    swept
        .expect("the sweep ends")
        .expect("the task runs")
        .expect("swept");
    let swaps = d.ledger.unfinished_swaps(Millis(i64::MAX), 10).await;
    assert!(swaps.expect("read").is_empty(), "the sweep undid the swap");

    // The capture takes the money; its move loses; the first refund fails.
    d.fake.fail_next(Op::Refund, 1);
    p.open_gate_at(Op::Capture, 1);
    let answered = tokio::time::timeout(Duration::from_secs(10), purchase)
        .await
        .expect("the purchase ends")
        .expect("the task runs");
    assert!(answered.is_err(), "the refund failed: {answered:?}");
    let swaps = d.ledger.unfinished_swaps(Millis(i64::MAX), 10).await;
    let swaps = swaps.expect("read");
    assert_eq!(swaps.len(), 1, "the swap waits for its refund");
    let swap = &swaps[0];
    assert_eq!(swap.state, SwapState::Refunding);
    let money = charge_state(&d, swap.charge).await;
    assert_eq!(money, Some(ProviderState::Captured), "charged, for now");

    // The next sweep refunds it and ends the swap.
    p.open_gate_at(Op::Inquire, 100);
    n.engine
        .exchange_sweep(Millis(i64::MAX))
        .await
        .expect("swept");
    let swap = d
        .ledger
        .swap(swap.id)
        .await
        .expect("read")
        .expect("the swap");
    assert_eq!(swap.state, SwapState::Undone);
    let money = charge_state(&d, swap.charge).await;
    assert_eq!(
        money,
        Some(ProviderState::Refunded),
        "the buyer has their money back"
    );
    // The listing stayed open to others throughout.
    let open = d
        .ledger
        .listing(listing)
        .await
        .expect("read")
        .expect("the listing");
    assert_eq!(open.state, boxoffice_domain::exchange::ListingState::Open);
}

/// What the provider says became of a swap's charge.
async fn charge_state(d: &Durable, charge: boxoffice_domain::OrderId) -> Option<ProviderState> {
    let money = d.fake.inquire(&Inquiry::by_order(charge)).await;
    money.expect("the provider answers").map(|p| p.state)
}

/// `buyer`'s purchase of `listing` by card, running on its own.
fn buying(
    n: &Node,
    buyer: boxoffice_engine::Admitted,
    listing: boxoffice_domain::ListingId,
) -> tokio::task::JoinHandle<
    Result<boxoffice_engine::exchange::SwapView, boxoffice_engine::EngineError>,
> {
    let engine = n.engine.clone();
    tokio::spawn(async move {
        let origin = Origin::default();
        engine
            .buy_listing(&buyer, listing, methods::VISA, &origin)
            .await
    })
}

//! Building blocks of the ledger cases: unique events, orders for chosen seats, and
//! orders driven to `authorized`. Public so adapter-specific tests and benchmarks can
//! set up the same situations.

use std::sync::Arc;

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::{
    BuyerId, Event, EventSpec, HoldId, Millis, Money, OrderEvent, OrderState, SaleSettings,
};
use boxoffice_engine::ports::{Commit, CommitOutcome, InsertOrder, Ledger, Order, OrderSeat};

/// An instant in 2023, so cases never depend on the machine's clock.
pub const T0: Millis = Millis(1_700_000_000_000);

/// A name no other case (or run) uses: events are shared on a shared backend.
pub fn unique(name: &str) -> String {
    format!("{name} {}", BuyerId::random())
}

/// One section of `rows` rows of `per_row` seats at 50.00, with a per-buyer limit.
pub fn spec(name: &str, rows: u32, per_row: u32, max_per_buyer: u32) -> EventSpec {
    EventSpec {
        venue: None,
        opens_at: None,
        name: unique(name),
        currency: "EUR".into(),
        tiers: vec![PriceTier {
            key: "STD".into(),
            name: "Standard".into(),
            price: Money(5_000),
        }],
        sections: vec![SectionSpec {
            key: "S".into(),
            name: "Stand".into(),
            tier: "STD".into(),
            quality: 0,
            rows: (1..=rows)
                .map(|r| RowSpec {
                    label: r.to_string(),
                    seats: per_row,
                    tier: None,
                })
                .collect(),
            ga_capacity: None,
        }],
        sale: SaleSettings {
            max_tickets_per_buyer: max_per_buyer,
            ..SaleSettings::default()
        },
    }
}

pub async fn event(ledger: &Arc<dyn Ledger>, seats: u32, max_per_buyer: u32) -> Event {
    ledger
        .create_event(&spec("Conformance night", 1, seats, max_per_buyer), T0)
        .await
        .expect("create the event")
}

/// A `pending_payment` order of `buyer` for the seats at `indexes`, priced by the event.
pub fn order(event: &Event, buyer: BuyerId, indexes: &[usize], now: Millis) -> Order {
    let seats: Vec<OrderSeat> = indexes
        .iter()
        .map(|&i| OrderSeat {
            seat_id: event.seats[i].label.clone(),
            price: event.price_of(i as u32),
            attendee: None,
        })
        .collect();
    let total = Money::sum(seats.iter().map(|s| s.price)).expect("a small total");
    Order {
        id: boxoffice_domain::OrderId::random(),
        event: event.id,
        buyer,
        hold: HoldId::random(event.id),
        seats,
        total,
        currency: event.currency.clone(),
        state: OrderState::PendingPayment,
        payment_ref: None,
        created_at: now,
        updated_at: now,
        attempts: 0,
        next_attempt_at: now,
    }
}

/// Inserts the order and moves it to `authorized`, as checkout does before committing.
pub async fn authorized(
    ledger: &Arc<dyn Ledger>,
    event: &Event,
    buyer: BuyerId,
    indexes: &[usize],
) -> Order {
    let order = order(event, buyer, indexes, T0);
    assert_eq!(
        ledger.insert_order(&order).await.expect("insert the order"),
        InsertOrder::Inserted
    );
    let auth = format!("auth_{}", order.id);
    ledger
        .apply(
            order.id,
            OrderEvent::Authorized,
            Some(&auth),
            T0.plus_secs(1),
        )
        .await
        .expect("authorize the order")
}

/// A confirmed order of `buyer` for the seats at `indexes` of `event` (limit `limit`):
/// authorized, committed, and captured at `T0 + 3 s`.
pub async fn captured(
    ledger: &Arc<dyn Ledger>,
    event: &Event,
    buyer: BuyerId,
    indexes: &[usize],
    limit: u32,
) -> Order {
    let o = authorized(ledger, event, buyer, indexes).await;
    let outcome = ledger.commit(&commit_of(&o, limit)).await.unwrap();
    assert_eq!(outcome, CommitOutcome::Committed);
    ledger
        .apply(o.id, OrderEvent::Captured, None, T0.plus_secs(3))
        .await
        .expect("capture the order")
}

pub fn commit_of(order: &Order, max_per_buyer: u32) -> Commit {
    Commit {
        order: order.id,
        max_per_buyer,
        now: T0.plus_secs(2),
    }
}

/// The labels of sold seats of the event, sorted.
pub async fn sold_labels(ledger: &Arc<dyn Ledger>, event: &Event) -> Vec<String> {
    let mut labels: Vec<String> = ledger
        .sold_seats(event.id)
        .await
        .expect("read sold seats")
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    labels.sort();
    labels
}

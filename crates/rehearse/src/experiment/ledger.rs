//! boxoffice's own path on the same database: the in-process seat arbiter decides the
//! hold in one atomic step, and the PostgreSQL ledger commits the order (the primary
//! key on the event's seat is the guard, group commit shares transactions). No payment
//! provider: the experiment is about inventory.

use std::sync::Arc;

use boxoffice_domain::catalog::{PriceTier, SectionSpec};
use boxoffice_domain::{
    BuyerId, Event, EventSpec, HoldId, Money, OrderEvent, OrderId, OrderState, SaleSettings,
};
use boxoffice_engine::EventEntry;
use boxoffice_engine::ports::{
    ArbiterError, Clock, Commit, CommitOutcome, HoldRequest, Ledger, Order, OrderSeat, SeatArbiter,
    SeatChoice, SystemClock,
};
use boxoffice_store_memory::InMemoryArbiter;
use boxoffice_store_postgres::{PostgresLedger, PostgresOptions};

use super::Attempt;

/// The ledger, the arbiter and the general-admission event they sell.
pub struct Boxoffice {
    ledger: Arc<dyn Ledger>,
    arbiter: InMemoryArbiter,
    event: Event,
}

const MAX_PER_BUYER: u32 = 4;

impl Boxoffice {
    /// Migrates the database at `url` and puts `units` general-admission units on sale.
    pub async fn open(url: &str, units: u32) -> anyhow::Result<Boxoffice> {
        let ledger = PostgresLedger::connect(url, PostgresOptions::default()).await?;
        ledger.migrate().await?;
        let ledger: Arc<dyn Ledger> = Arc::new(ledger);
        let event = ledger.create_event(&spec(units), SystemClock.now()).await?;
        let arbiter = InMemoryArbiter::new();
        arbiter
            .load(&EventEntry::new(event.clone()).layout(), &[])
            .await?;
        Ok(Boxoffice {
            ledger,
            arbiter,
            event,
        })
    }

    /// One buyer: a hold of one unit, then the order written, authorized and committed.
    pub async fn buy(&self) -> anyhow::Result<Attempt> {
        let now = SystemClock.now();
        let buyer = BuyerId::random();
        let request = HoldRequest {
            hold: HoldId::random(self.event.id),
            buyer,
            choice: SeatChoice::BestAvailable {
                section: 0,
                quantity: 1,
                adjacent: false,
            },
            expires_at: now.plus_secs(600),
            key: None,
        };
        let hold = match self.arbiter.hold(&request, now).await {
            Ok(h) => h,
            Err(ArbiterError::SoldOut) => return Ok(Attempt::lost(0)),
            Err(e) => return Err(e.into()),
        };
        let seats: Vec<OrderSeat> = hold
            .seats
            .iter()
            .zip(&hold.prices)
            .map(|(&i, &price)| OrderSeat {
                seat_id: self.event.seats[i as usize].label.clone(),
                price,
                attendee: None,
            })
            .collect();
        let order = Order {
            id: OrderId::random(),
            event: self.event.id,
            buyer,
            hold: hold.hold,
            seats,
            total: hold.total(),
            currency: self.event.currency.clone(),
            state: OrderState::PendingPayment,
            payment_ref: None,
            created_at: now,
            updated_at: now,
            attempts: 0,
            next_attempt_at: now,
        };
        self.ledger.insert_order(&order).await?;
        let auth = format!("auth_{}", order.id);
        self.ledger
            .apply(order.id, OrderEvent::Authorized, Some(&auth), now)
            .await
            .map_err(|e| anyhow::anyhow!("authorizing: {e:?}"))?;
        let commit = Commit {
            order: order.id,
            max_per_buyer: MAX_PER_BUYER,
            now,
        };
        match self.ledger.commit(&commit).await? {
            CommitOutcome::Committed => Ok(Attempt::won(0)),
            CommitOutcome::SeatTaken { .. } => Ok(Attempt::lost(1)),
            other => anyhow::bail!("unexpected commit outcome {other:?}"),
        }
    }

    /// (units the ledger sold, units left).
    pub async fn tally(&self) -> anyhow::Result<(i64, i64)> {
        let sold = self.ledger.sold_seats(self.event.id).await?.len() as i64;
        Ok((sold, self.event.seats.len() as i64 - sold))
    }
}

fn spec(units: u32) -> EventSpec {
    EventSpec {
        name: format!("Experiment {}", BuyerId::random()),
        venue: None,
        opens_at: None,
        currency: "EUR".into(),
        tiers: vec![PriceTier {
            key: "STD".into(),
            name: "Standard".into(),
            price: Money(5_000),
        }],
        sections: vec![SectionSpec {
            key: "GA".into(),
            name: "Floor".into(),
            tier: "STD".into(),
            quality: 0,
            rows: vec![],
            ga_capacity: Some(units),
        }],
        sale: SaleSettings {
            max_tickets_per_buyer: MAX_PER_BUYER,
            ..SaleSettings::default()
        },
    }
}

//! The events and helpers the arbiter cases share. Every case loads its own event with a
//! fresh random id, so one shared backend (a Redis) can run the suite in parallel, and
//! unloads it at the end.

use std::sync::Arc;

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::{
    BuyerId, EventId, EventSpec, HoldId, Millis, Money, SaleSettings, SeatIndex,
};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, HoldRequest, HoldView, LayoutSeat, LayoutSection, SeatArbiter,
    SeatChoice, SoldSeat,
};

/// The instant every case starts at.
pub const T0: Millis = Millis(1_700_000_000_000);
/// The hold TTL the cases use.
pub const TTL_MS: i64 = 10_000;
/// When a hold taken at `T0` by `Fixture::request` runs out.
pub const DEADLINE: Millis = Millis(T0.0 + TTL_MS);
/// Section indices of `small_spec`.
pub const FRONT: u16 = 0;
pub const FLOOR: u16 = 1;

/// An event id no other case (or process) is using.
pub fn unique_event() -> EventId {
    EventId((uuid::Uuid::new_v4().as_u128() as i64 & (i64::MAX >> 1)) + 1)
}

/// The arbiter's view of an event, built the way the engine builds it: through
/// `EventSpec::build`, so the ranks are the catalog's.
pub fn layout_of(spec: &EventSpec, event: EventId) -> ArbiterLayout {
    let e = spec
        .build(event, T0)
        .expect("the fixture spec must be valid");
    ArbiterLayout {
        event,
        max_per_buyer: e.sale.max_tickets_per_buyer,
        seats: (0..e.capacity())
            .map(|i| {
                let s = &e.seats[i as usize];
                LayoutSeat {
                    section: s.section,
                    row: s.row,
                    rank: s.rank,
                    price: e.price_of(i),
                }
            })
            .collect(),
        sections: e
            .sections
            .iter()
            .map(|s| LayoutSection {
                seated: s.kind == boxoffice_domain::SectionKind::Seated,
            })
            .collect(),
    }
}

fn tiers() -> Vec<PriceTier> {
    vec![
        PriceTier {
            key: "A".into(),
            name: "Front".into(),
            price: Money(9_000),
        },
        PriceTier {
            key: "B".into(),
            name: "Back".into(),
            price: Money(4_000),
        },
    ]
}

/// Seats 0..10: section FRONT, row "A" = 0..5 (tier A), row "B" = 5..10 (tier B); the
/// centre of a row ranks best, so the best seat is 2, then 1 and 3. Seats 10..20: the
/// GA section FLOOR. Four tickets per buyer.
pub fn small_spec() -> EventSpec {
    let row = |label: &str, tier: Option<&str>| RowSpec {
        label: label.into(),
        seats: 5,
        tier: tier.map(Into::into),
    };
    EventSpec {
        venue: None,
        opens_at: None,
        name: "Conformance night".into(),
        currency: "EUR".into(),
        tiers: tiers(),
        sections: vec![
            SectionSpec {
                key: "FRONT".into(),
                name: "Front".into(),
                tier: "B".into(),
                quality: 0,
                rows: vec![row("A", Some("A")), row("B", None)],
                ga_capacity: None,
            },
            SectionSpec {
                key: "FLOOR".into(),
                name: "Floor".into(),
                tier: "B".into(),
                quality: 1,
                rows: vec![],
                ga_capacity: Some(10),
            },
        ],
        sale: SaleSettings {
            max_tickets_per_buyer: 4,
            ..SaleSettings::default()
        },
    }
}

/// 100 seats in 10 rows of 10 (section 0) and 100 GA units (section 1), for races.
pub fn race_spec() -> EventSpec {
    let rows = (0..10)
        .map(|r| RowSpec {
            label: format!("R{r}"),
            seats: 10,
            tier: None,
        })
        .collect();
    let mut spec = small_spec();
    spec.sections[0].rows = rows;
    spec.sections[1].ga_capacity = Some(100);
    spec
}

/// One loaded event on the arbiter under test.
pub struct Fixture {
    pub arb: Arc<dyn SeatArbiter>,
    pub event: EventId,
    pub layout: ArbiterLayout,
}

impl Fixture {
    pub async fn load(arb: Arc<dyn SeatArbiter>, spec: &EventSpec, sold: &[SoldSeat]) -> Fixture {
        let event = unique_event();
        let layout = layout_of(spec, event);
        arb.load(&layout, sold).await.expect("load");
        Fixture { arb, event, layout }
    }

    pub async fn small(arb: Arc<dyn SeatArbiter>) -> Fixture {
        Fixture::load(arb, &small_spec(), &[]).await
    }

    pub fn request(&self, buyer: BuyerId, choice: SeatChoice) -> HoldRequest {
        HoldRequest {
            hold: HoldId::random(self.event),
            buyer,
            choice,
            expires_at: T0.plus_millis(TTL_MS),
            key: None,
        }
    }

    pub async fn named(
        &self,
        buyer: BuyerId,
        seats: &[SeatIndex],
    ) -> Result<HoldView, ArbiterError> {
        self.arb
            .hold(&self.request(buyer, SeatChoice::Named(seats.to_vec())), T0)
            .await
    }

    pub async fn best(
        &self,
        buyer: BuyerId,
        section: u16,
        quantity: u32,
        adjacent: bool,
    ) -> Result<HoldView, ArbiterError> {
        self.arb
            .hold(
                &self.request(
                    buyer,
                    SeatChoice::BestAvailable {
                        section,
                        quantity,
                        adjacent,
                    },
                ),
                T0,
            )
            .await
    }

    /// Whether each seat is free, read from the availability bitmap.
    pub async fn free(&self, seats: &[SeatIndex]) -> Vec<bool> {
        let bits = self
            .arb
            .availability(self.event)
            .await
            .expect("availability");
        seats
            .iter()
            .map(|&s| bits[s as usize / 8] & (0x80 >> (s % 8)) != 0)
            .collect()
    }

    /// Checks free + held + sold = capacity, then unloads the event.
    pub async fn done(self) {
        let c = self.arb.counts(self.event).await.expect("counts");
        assert_eq!(
            c.free + c.held + c.sold,
            c.capacity,
            "counts must add up: {c:?}"
        );
        self.arb.unload(self.event).await.expect("unload");
        assert!(!self.arb.is_loaded(self.event).await.expect("is_loaded"));
    }
}

/// The seats of a successful hold, sorted.
pub fn sorted(view: &HoldView) -> Vec<SeatIndex> {
    let mut s = view.seats.clone();
    s.sort_unstable();
    s
}

//! An event to sell, shaped by the few numbers tests vary.

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::{EventSpec, Money, SaleSettings};

/// An event with one seated section `A` of `rows` × `per_row` seats and, when `ga` > 0,
/// a general-admission section `GA`; one price (50.00 EUR), admission without pacing.
pub fn spec(rows: u32, per_row: u32, ga: u32, max_per_buyer: u32) -> EventSpec {
    let mut sections = Vec::new();
    if rows > 0 {
        sections.push(seated(rows, per_row));
    }
    if ga > 0 {
        sections.push(standing(ga));
    }
    EventSpec {
        venue: None,
        opens_at: None,
        name: format!("Test event {}", super::uuid()),
        currency: "EUR".into(),
        tiers: vec![PriceTier {
            key: "STD".into(),
            name: "Standard".into(),
            price: Money(5_000),
        }],
        sections,
        sale: SaleSettings {
            max_tickets_per_buyer: max_per_buyer,
            hold_ttl_s: 600,
            payment_grace_s: 120,
            admission_rate_per_s: 1_000_000,
            honour_late_payments: false,
            buyer_refunds: None,
            ..SaleSettings::default()
        },
    }
}

fn seated(rows: u32, per_row: u32) -> SectionSpec {
    let rows = (1..=rows)
        .map(|r| RowSpec {
            label: r.to_string(),
            seats: per_row,
            tier: None,
        })
        .collect();
    SectionSpec {
        key: "A".into(),
        name: "Stand A".into(),
        tier: "STD".into(),
        quality: 1,
        rows,
        ga_capacity: None,
    }
}

fn standing(capacity: u32) -> SectionSpec {
    SectionSpec {
        key: "GA".into(),
        name: "Floor".into(),
        tier: "STD".into(),
        quality: 0,
        rows: vec![],
        ga_capacity: Some(capacity),
    }
}

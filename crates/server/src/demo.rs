//! The demo stadium: 51,000 sellable units — twenty seated stands in two tiers and a
//! general-admission floor — for trying boxoffice out and for load rehearsals.

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::{EventSpec, Money, SaleSettings};

pub fn stadium_spec() -> EventSpec {
    let tier = |key: &str, name: &str, cents: i64| PriceTier {
        key: key.into(),
        name: name.into(),
        price: Money(cents),
    };
    let mut sections = vec![SectionSpec {
        key: "FLOOR".into(),
        name: "Standing floor".into(),
        tier: "FLOOR".into(),
        quality: 0,
        rows: vec![],
        ga_capacity: Some(10_000),
    }];
    for (level, (prefix, rows, seats, tier_key, quality)) in
        [("L", 25, 80, "LOWER", 1), ("U", 30, 70, "UPPER", 2)]
            .into_iter()
            .enumerate()
    {
        for n in 1..=10 {
            let rows = (1..=rows)
                .map(|r| RowSpec {
                    label: r.to_string(),
                    seats,
                    tier: (r <= 5 && level == 0).then(|| "PREMIUM".to_string()),
                })
                .collect();
            sections.push(SectionSpec {
                key: format!("{prefix}{n}"),
                name: format!("{} stand {n}", if level == 0 { "Lower" } else { "Upper" }),
                tier: tier_key.into(),
                quality,
                rows,
                ga_capacity: None,
            });
        }
    }
    EventSpec {
        venue: Some("Boxoffice Arena, Demo City".into()),
        opens_at: None,
        name: "Demo stadium night".into(),
        currency: "EUR".into(),
        tiers: vec![
            tier("PREMIUM", "Premium", 18_900),
            tier("LOWER", "Lower tier", 9_900),
            tier("UPPER", "Upper tier", 5_900),
            tier("FLOOR", "Floor", 7_900),
        ],
        sections,
        sale: SaleSettings {
            admission_rate_per_s: 2_000,
            ..SaleSettings::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::{EventId, Millis};

    #[test]
    fn the_demo_stadium_sells_at_least_fifty_thousand_units() {
        let event = super::stadium_spec().build(EventId(1), Millis(0)).unwrap();
        assert!(event.capacity() >= 50_000, "{}", event.capacity());
    }
}

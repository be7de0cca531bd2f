use super::*;

pub(crate) fn small_spec() -> EventSpec {
    EventSpec {
        venue: None,
        opens_at: None,
        name: "Test night".into(),
        currency: "EUR".into(),
        tiers: vec![
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
        ],
        sections: vec![
            SectionSpec {
                key: "S1".into(),
                name: "Stand".into(),
                tier: "B".into(),
                quality: 1,
                rows: vec![
                    RowSpec {
                        label: "1".into(),
                        seats: 5,
                        tier: Some("A".into()),
                    },
                    RowSpec {
                        label: "2".into(),
                        seats: 5,
                        tier: None,
                    },
                ],
                ga_capacity: None,
            },
            SectionSpec {
                key: "FLOOR".into(),
                name: "Floor".into(),
                tier: "B".into(),
                quality: 0,
                rows: vec![],
                ga_capacity: Some(3),
            },
        ],
        sale: SaleSettings::default(),
    }
}

#[test]
fn seats_are_laid_out_with_labels_tiers_and_ranks() {
    let e = small_spec().build(EventId(1), Millis(0)).unwrap();
    assert_eq!(e.capacity(), 13);
    assert_eq!(e.seats[0].label, "S1-1-1");
    assert_eq!(e.seats[10].label, "FLOOR-GA-000001");
    assert_eq!(e.price_of(0), Money(9_000));
    assert_eq!(e.price_of(5), Money(4_000));
    // The centre of a row ranks best; the front row beats the second.
    assert!(e.seats[2].rank < e.seats[0].rank);
    assert!(e.seats[2].rank < e.seats[7].rank);
    assert_eq!(e.sections[1].kind, SectionKind::GeneralAdmission);
}

#[test]
fn bad_specs_are_rejected_with_a_reason() {
    type Mutation = Box<dyn Fn(&mut EventSpec)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "unknown tier",
            Box::new(|s| s.sections[0].tier = "Z".into()),
        ),
        ("used twice", Box::new(|s| s.sections[1].key = "S1".into())),
        (
            "ga_capacity",
            Box::new(|s| s.sections[1].ga_capacity = Some(0)),
        ),
        (
            "not both",
            Box::new(|s| s.sections[0].ga_capacity = Some(3)),
        ),
        ("currency", Box::new(|s| s.currency = "euro".into())),
        ("price", Box::new(|s| s.tiers[0].price = Money(-1))),
        (
            "max_tickets",
            Box::new(|s| s.sale.max_tickets_per_buyer = 0),
        ),
        (
            "seats must be",
            Box::new(|s| s.sections[0].rows[0].seats = 0),
        ),
    ];
    for (needle, mutate) in cases {
        let mut spec = small_spec();
        mutate(&mut spec);
        let err = spec.build(EventId(1), Millis(0)).unwrap_err().to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn sale_status_names_round_trip_and_are_the_serde_names() {
    for status in SaleStatus::ALL {
        assert_eq!(SaleStatus::parse(status.as_str()), Some(status));
        assert_eq!(
            serde_json::to_value(status).unwrap(),
            serde_json::Value::from(status.as_str())
        );
    }
    assert_eq!(SaleStatus::parse("Open"), None);
}

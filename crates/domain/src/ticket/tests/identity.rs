use super::*;

#[test]
fn a_ticket_id_is_the_same_for_the_same_order_and_seat_and_differs_otherwise() {
    let order = OrderId(Uuid::from_u128(1));
    let id = TicketId::for_seat(order, &seat("A-1-1"));
    assert_eq!(id, TicketId::for_seat(order, &seat("A-1-1")));
    assert_ne!(id, TicketId::for_seat(order, &seat("A-1-2")));
    assert_ne!(
        id,
        TicketId::for_seat(OrderId(Uuid::from_u128(2)), &seat("A-1-1"))
    );
    assert_eq!(id.0.get_version_num(), 8);
    assert_eq!(id.to_string().parse::<TicketId>(), Ok(id));
}

#[test]
fn a_transfer_bumps_the_version_changes_the_holder_and_clears_the_name() {
    let named = ticket(7)
        .named(Some(
            AttendeeName::try_from("Ada Lovelace".to_owned()).unwrap(),
        ))
        .unwrap();
    assert_eq!(named.version, 2);
    let moved = named.transferred_to(buyer(2)).unwrap();
    assert_eq!(
        (moved.version, moved.holder, moved.id),
        (3, buyer(2), named.id)
    );
    assert_eq!(moved.attendee, None);
    let last = Ticket {
        version: u32::MAX,
        ..moved
    };
    assert_eq!(
        last.transferred_to(buyer(3)),
        Err(TicketError::VersionExhausted)
    );
}

#[test]
fn seat_labels_and_attendee_names_are_bounded() {
    for bad in ["", "A 1", "é", &"x".repeat(MAX_SEAT_LABEL + 1)] {
        assert!(SeatLabel::try_from(bad.to_owned()).is_err(), "{bad:?}");
    }
    assert!(SeatLabel::try_from("x".repeat(MAX_SEAT_LABEL)).is_ok());
    for bad in ["", "   ", "Ada\nLovelace", "\u{7}", &"é".repeat(33)] {
        assert!(AttendeeName::try_from(bad.to_owned()).is_err(), "{bad:?}");
    }
    assert!(AttendeeName::try_from("é".repeat(32)).is_ok());
    for bad in [
        " Ada",
        "Ada  Lovelace",
        "Ada4",
        "<script>",
        "Ada\u{200b}",
        "---",
    ] {
        assert!(AttendeeName::try_from(bad.to_owned()).is_err(), "{bad:?}");
    }
    for good in [
        "Zoë O\u{2019}Brien-Núñez",
        "Łukasz Żółć",
        "山田 太郎",
        "J. R. R. Tolkien",
    ] {
        assert_eq!(
            AttendeeName::try_from(good.to_owned()).unwrap().as_str(),
            good
        );
    }
    let typed = AttendeeName::parse("  Ada \t  Lovelace \n").unwrap();
    assert_eq!(typed.as_str(), "Ada Lovelace");
    assert!(AttendeeName::parse(" \t ").is_err());
    let json = serde_json::to_string(&ticket(7)).unwrap();
    assert_eq!(serde_json::from_str::<Ticket>(&json).unwrap(), ticket(7));
    let long = json.replace("FLOOR-C-12", &"x".repeat(MAX_SEAT_LABEL + 1));
    assert!(serde_json::from_str::<Ticket>(&long).is_err());
}

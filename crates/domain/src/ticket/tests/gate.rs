use super::*;

#[test]
fn a_fresh_barcode_verifies_and_says_what_it_admits() {
    let k = keys(1234, 1);
    let t = ticket(1234);
    let (code, secret) = k.issue(&t, NOW).unwrap();
    assert!(secret.is_none() && !code.is_rotating());
    let v = gate(&k).verify(&code.text(), NOW).unwrap();
    assert_eq!(
        (v.event, v.ticket, v.version, v.key),
        (t.event, t.id, 1, KeyId(1))
    );
    assert_eq!((v.issued_at, v.attendee, v.rotating), (NOW, None, false));
}

#[test]
fn a_gate_that_needs_names_refuses_an_unnamed_barcode_and_shows_the_name() {
    let k = keys(1234, 1);
    let mut g = gate(&k);
    g.names_required = true;
    let unnamed = barcode(&k, &ticket(1234));
    assert_eq!(g.verify(&unnamed, NOW), Err(BarcodeRefusal::NameMissing));
    let ada = AttendeeName::parse("Ada Lovelace").unwrap();
    let named = ticket(1234).named(Some(ada.clone())).unwrap();
    let v = g.verify(&barcode(&k, &named), NOW).unwrap();
    assert_eq!((v.version, v.attendee), (2, Some(ada)));
    let json = serde_json::to_vec(&g).unwrap();
    assert_eq!(GateBundle::from_json(&json).unwrap(), g);
}

#[test]
fn a_ticket_the_bundle_lists_as_admitted_is_refused_and_others_are_not() {
    let k = keys(1234, 1);
    let inside = ticket(1234);
    let outside = Ticket::issue(
        OrderId(Uuid::from_u128(0xbeef)),
        EventId(1234),
        seat("FLOOR-C-13"),
        buyer(1),
    );
    let mut g = gate(&k);
    g.admitted.insert(inside.id);
    assert_eq!(
        g.verify(&barcode(&k, &inside), NOW),
        Err(BarcodeRefusal::AlreadyAdmitted)
    );
    assert_eq!(
        g.verify(&barcode(&k, &outside), NOW).unwrap().ticket,
        outside.id
    );
    let json = serde_json::to_vec(&g).unwrap();
    assert_eq!(GateBundle::from_json(&json).unwrap(), g);
    // A bundle without the list (as before it existed) reads as none admitted.
    let none = serde_json::to_vec(&gate(&k)).unwrap();
    assert!(!String::from_utf8_lossy(&none).contains("admitted"));
    assert!(GateBundle::from_json(&none).unwrap().admitted.is_empty());
}

/// The size the module documentation quotes.
#[test]
fn a_typical_barcode_is_91_bytes_and_137_characters_and_95_bytes_rotating() {
    let code = keys(1234, 1).issue(&ticket(1234), NOW).unwrap().0;
    assert_eq!(code.as_bytes().len(), 91);
    assert_eq!(code.text().len(), 137);
    assert!(code.text().len() <= MAX_BARCODE_TEXT);
    let named = ticket(1234)
        .named(Some(AttendeeName::try_from("x".repeat(20)).unwrap()))
        .unwrap();
    assert_eq!(
        keys(1234, 1).issue(&named, NOW).unwrap().0.as_bytes().len(),
        112
    );
    let rotating = keys(1234, 1).with_rotation(RotationSecret::from_bytes([5; 32]));
    let (code, secret) = rotating.issue(&ticket(1234), NOW).unwrap();
    assert_eq!(code.text_at(&secret.unwrap(), NOW).len(), 143, "95 bytes");
}

/// Every byte inverted, and one bit of each byte (each bit position in turn); the
/// property tests mutate at random besides.
#[test]
fn every_flipped_byte_is_refused() {
    let k = keys(7, 1);
    let g = gate(&k);
    let good = k.issue(&ticket(7), NOW).unwrap().0.as_bytes().to_vec();
    for i in 0..good.len() {
        for mask in [0xff, 1 << (i % 8)] {
            let mut bad = good.clone();
            bad[i] ^= mask;
            let text = base45::encode(&bad);
            assert!(g.verify(&text, NOW).is_err(), "byte {i} ^ {mask:#x} passed");
        }
    }
}

#[test]
fn every_changed_character_is_refused() {
    let k = keys(7, 1);
    let g = gate(&k);
    let good = barcode(&k, &ticket(7));
    for i in 0..good.len() {
        let mut bad = good.clone().into_bytes();
        bad[i] = if bad[i] == b'0' { b':' } else { b'0' };
        let bad = String::from_utf8(bad).unwrap();
        assert!(g.verify(&bad, NOW).is_err(), "character {i} changed passed");
    }
    assert_eq!(
        g.verify(&good[..good.len() - 3], NOW),
        Err(BarcodeRefusal::Malformed)
    );
    assert_eq!(
        g.verify(&format!("{good}00"), NOW),
        Err(BarcodeRefusal::Malformed)
    );
    assert_eq!(
        g.verify(&good.to_lowercase(), NOW),
        Err(BarcodeRefusal::Malformed)
    );
}

#[test]
fn a_barcode_signed_with_another_events_key_is_refused() {
    let ours = keys(7, 1);
    let theirs = keys(8, 2);
    // Their genuine barcode at our gate.
    let theirs_text = barcode(&theirs, &ticket(8));
    assert_eq!(
        gate(&ours).verify(&theirs_text, NOW),
        Err(BarcodeRefusal::WrongEvent)
    );
    // A barcode claiming our event and key number, signed with their key.
    let forged = barcode(&keys(7, 2), &ticket(7));
    assert_eq!(
        gate(&ours).verify(&forged, NOW),
        Err(BarcodeRefusal::BadSignature)
    );
    assert!(gate(&ours).verify(&barcode(&ours, &ticket(7)), NOW).is_ok());
}

#[test]
fn a_revoked_version_is_refused_and_the_next_admits() {
    let k = keys(7, 1);
    let first = ticket(7);
    let second = first.transferred_to(buyer(2)).unwrap();
    let mut g = gate(&k);
    assert!(g.revoked.revoke(first.id, first.version));
    let old = barcode(&k, &first);
    assert_eq!(g.verify(&old, NOW), Err(BarcodeRefusal::Revoked));
    let new = barcode(&k, &second);
    assert_eq!(g.verify(&new, NOW).unwrap().version, 2);
    // A refund revokes the live version too; an earlier revocation is kept, not lowered.
    assert!(g.revoked.revoke(second.id, second.version));
    assert!(g.revoked.revoke(second.id, 1));
    assert_eq!(g.verify(&new, NOW), Err(BarcodeRefusal::Revoked));
    assert_eq!(g.revoked.len(), 1);
}

#[test]
fn a_bundle_round_trips_through_json_and_still_decides_the_same() {
    let rotation = RotationSecret::from_bytes([3; 32]);
    let k = keys(7, 1)
        .rotate([2; 32])
        .unwrap()
        .with_rotation(rotation.clone());
    let mut g = gate(&k);
    let old = ticket(7);
    g.revoked.revoke(old.id, 1);
    g.revoked.revoke(TicketId(Uuid::from_u128(5)), 4);
    let json = serde_json::to_string(&g).unwrap();
    let back = GateBundle::from_json(json.as_bytes()).unwrap();
    assert_eq!(back, g);
    let again = serde_json::to_string(&back).unwrap();
    assert_eq!(again, json, "the same bundle writes the same bytes");
    let (fresh, secret) = k
        .issue(&old.transferred_to(buyer(2)).unwrap(), NOW)
        .unwrap();
    let text = fresh.text_at(&secret.unwrap(), NOW);
    assert_eq!(back.verify(&text, NOW), g.verify(&text, NOW));
    assert!(back.verify(&text, NOW).is_ok());
}

#[test]
fn a_bundle_that_is_too_large_inconsistent_or_loose_is_refused() {
    let g = gate(&keys(7, 1));
    let json = serde_json::to_string(&g).unwrap();
    let big = format!("{json}{}", " ".repeat(MAX_BUNDLE_BYTES));
    assert_eq!(
        GateBundle::from_json(big.as_bytes()),
        Err(BundleError::TooLarge)
    );
    let other = json.replacen("\"event_id\":7", "\"event_id\":8", 1);
    assert!(GateBundle::from_json(other.as_bytes()).is_err());
    let extra = json.replacen('{', "{\"admit_all\":true,", 1);
    assert!(GateBundle::from_json(extra.as_bytes()).is_err());
    let bad_secret = json.replacen(
        "\"generated_at\"",
        "\"rotation\":\"AAAA\",\"generated_at\"",
        1,
    );
    assert!(GateBundle::from_json(bad_secret.as_bytes()).is_err());
    assert!(GateBundle::from_json(b"[]").is_err());
}

#[test]
fn the_longest_revocation_list_fits_a_bundle_and_a_longer_one_is_refused() {
    let mut g = gate(&keys(7, 1));
    for n in 0..MAX_REVOCATIONS as u128 {
        assert!(
            g.revoked
                .revoke(TicketId(Uuid::from_u128(u128::MAX - n)), u32::MAX)
        );
    }
    assert!(
        !g.revoked.revoke(TicketId(Uuid::from_u128(1)), 1),
        "the list is full"
    );
    let json = serde_json::to_string(&g).unwrap();
    assert!(json.len() <= MAX_BUNDLE_BYTES, "{} bytes", json.len());
    assert_eq!(
        GateBundle::from_json(json.as_bytes())
            .unwrap()
            .revoked
            .len(),
        MAX_REVOCATIONS
    );
    let one_more = json.replacen(
        "\"revoked\":[",
        "\"revoked\":[{\"ticket_id\":\"00000000-0000-0000-0000-000000000001\",\"version\":1},",
        1,
    );
    assert!(matches!(
        GateBundle::from_json(one_more.as_bytes()),
        Err(BundleError::Invalid(_))
    ));
}

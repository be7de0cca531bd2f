use super::*;

fn rotating_keys() -> EventKeys {
    keys(7, 1).with_rotation(RotationSecret::from_bytes([5; 32]))
}

#[test]
fn a_fresh_code_admits_within_one_step_either_side_and_an_old_one_is_refused() {
    let k = rotating_keys();
    let (code, secret) = k.issue(&ticket(7), NOW).unwrap();
    let secret = secret.unwrap();
    assert!(code.is_rotating());
    let g = gate(&k);
    let shown = code.text_at(&secret, NOW);
    assert!(g.verify(&shown, NOW).unwrap().rotating);
    assert!(g.verify(&shown, NOW.plus_millis(STEP_MS)).is_ok());
    assert!(g.verify(&shown, NOW.plus_millis(-STEP_MS)).is_ok());
    // A screenshot taken now, scanned two steps later.
    let later = NOW.plus_millis(2 * STEP_MS);
    assert_eq!(g.verify(&shown, later), Err(BarcodeRefusal::CodeExpired));
    assert!(g.verify(&code.text_at(&secret, later), later).is_ok());
    // A phone whose clock runs two steps, or a minute, ahead.
    for ahead in [NOW.plus_millis(2 * STEP_MS), NOW.plus_secs(60)] {
        let shown = code.text_at(&secret, ahead);
        assert_eq!(g.verify(&shown, NOW), Err(BarcodeRefusal::CodeNotYetValid));
    }
}

#[test]
fn a_code_made_with_another_versions_secret_is_refused() {
    let k = rotating_keys();
    let first = ticket(7);
    let (_, old_secret) = k.issue(&first, NOW).unwrap();
    let (code, _) = k
        .issue(&first.transferred_to(buyer(2)).unwrap(), NOW)
        .unwrap();
    let shown = code.text_at(&old_secret.unwrap(), NOW);
    assert_eq!(
        gate(&k).verify(&shown, NOW),
        Err(BarcodeRefusal::CodeExpired)
    );
}

#[test]
fn a_code_cannot_be_dropped_and_each_gate_needs_the_right_secret() {
    let k = rotating_keys();
    let (code, _) = k.issue(&ticket(7), NOW).unwrap();
    // The rotating flag is signed: without its code the barcode is incomplete.
    assert_eq!(
        gate(&k).verify(&code.text(), NOW),
        Err(BarcodeRefusal::Malformed)
    );
    let static_keys = keys(7, 1);
    let (shown_static, _) = static_keys.issue(&ticket(7), NOW).unwrap();
    assert_eq!(
        gate(&k).verify(&shown_static.text(), NOW),
        Err(BarcodeRefusal::CodeMissing)
    );
    let (code, secret) = k.issue(&ticket(7), NOW).unwrap();
    let shown = code.text_at(&secret.unwrap(), NOW);
    assert_eq!(
        gate(&static_keys).verify(&shown, NOW),
        Err(BarcodeRefusal::CannotCheckCode)
    );
}

#[test]
fn secrets_never_show_in_debug_output() {
    let k = rotating_keys();
    let secret = k.issue(&ticket(7), NOW).unwrap().1.unwrap();
    assert_eq!(
        format!("{secret:?} {:?}", k.rotation().unwrap()),
        "TicketSecret(..) RotationSecret(..)"
    );
    assert_eq!(secret.to_base64().len(), 43);
}

#[test]
fn a_device_appending_the_code_to_the_given_text_shows_what_the_server_would() {
    let k = keys(7, 1).with_rotation(RotationSecret::from_bytes([4; 32]));
    let (code, secret) = k.issue(&ticket(7), NOW).unwrap();
    let secret = secret.unwrap();
    let received = TicketSecret::from_base64(&secret.to_base64()).unwrap();
    let shown = rotating_text(&code.text(), &received, NOW).unwrap();
    assert_eq!(shown, code.text_at(&secret, NOW));
    assert!(gate(&k).verify(&shown, NOW).is_ok());
    assert!(TicketSecret::from_base64("short").is_none());
    assert!(rotating_text("not base45!", &received, NOW).is_none());
}

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

use super::*;

#[test]
fn old_key_barcodes_verify_while_the_key_is_listed_and_not_after_its_removal() {
    let first = keys(7, 1);
    let old = barcode(&first, &ticket(7));
    let rotated = first.rotate([2; 32]).unwrap();
    assert_eq!(rotated.current(), KeyId(2));
    let new = barcode(&rotated, &ticket(7));
    assert_eq!(gate(&rotated).verify(&old, NOW).unwrap().key, KeyId(1));
    assert_eq!(gate(&rotated).verify(&new, NOW).unwrap().key, KeyId(2));
    let retired = rotated.retire(KeyId(1)).unwrap();
    assert_eq!(
        gate(&retired).verify(&old, NOW),
        Err(BarcodeRefusal::UnknownKey)
    );
    assert!(gate(&retired).verify(&new, NOW).is_ok());
    // A gate that has not yet downloaded the new key refuses new barcodes the same way.
    assert_eq!(
        gate(&first).verify(&new, NOW),
        Err(BarcodeRefusal::UnknownKey)
    );
}

#[test]
fn the_current_key_cannot_be_retired_and_the_set_is_bounded() {
    let mut k = keys(7, 1);
    assert_eq!(k.retire(KeyId(1)).err(), Some(KeyError::CurrentKey));
    for seed in 2..=MAX_KEYS as u8 {
        k = k.rotate([seed; 32]).unwrap();
    }
    assert_eq!(k.public().ids().count(), MAX_KEYS);
    assert_eq!(k.rotate([99; 32]).err(), Some(KeyError::TooManyKeys));
    assert!(k.retire(KeyId(1)).unwrap().rotate([99; 32]).is_ok());
    assert_eq!(
        EventKeys::generate(EventId(0), [1; 32]).err(),
        Some(KeyError::BadEvent)
    );
}

#[test]
fn keys_restored_from_their_stored_parts_sign_and_verify_as_before() {
    let rotated = keys(7, 1).rotate([2; 32]).unwrap();
    let retired = vec![(KeyId(1), keys(7, 1).public().keys[0].1.to_bytes())];
    let restored = EventKeys::restore(EventId(7), KeyId(2), [2; 32], retired).unwrap();
    assert_eq!(restored.public(), rotated.public());
    let t = ticket(7);
    assert_eq!(barcode(&restored, &t), barcode(&rotated, &t));
    assert_eq!(
        keys(8, 1).issue(&t, NOW).err(),
        Some(TicketError::WrongEvent)
    );
}

#[test]
fn the_published_key_set_is_a_jwks_whose_keys_check_the_signature_directly() {
    let k = keys(7, 1).rotate([2; 32]).unwrap();
    let json: serde_json::Value = serde_json::to_value(k.public()).unwrap();
    assert_eq!(json["event_id"], 7);
    let current = &json["keys"][0];
    assert_eq!(
        (&current["kty"], &current["crv"], &current["kid"]),
        (&"OKP".into(), &"Ed25519".into(), &"2".into())
    );
    assert_eq!(
        json["keys"][1]["kid"], "1",
        "retired keys follow the current one"
    );
    let x: [u8; 32] = B64
        .decode(current["x"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let key = ed25519_dalek::VerifyingKey::from_bytes(&x).unwrap();
    let bytes = k.issue(&ticket(7), NOW).unwrap().0.as_bytes().to_vec();
    let (signed, sig) = bytes.split_at(bytes.len() - 64);
    let message = [&b"boxoffice/barcode\0"[..], signed].concat();
    let sig = ed25519_dalek::Signature::from_slice(sig).unwrap();
    assert!(key.verify_strict(&message, &sig).is_ok());
    let back: PublicKeys = serde_json::from_value(json).unwrap();
    assert_eq!(&back, k.public());
}

#[test]
fn a_key_set_with_a_foreign_key_or_a_loose_kid_is_refused() {
    let json = serde_json::to_string(keys(7, 1).public()).unwrap();
    let x = serde_json::from_str::<serde_json::Value>(&json).unwrap()["keys"][0]["x"].clone();
    let x = x.as_str().unwrap().to_owned();
    for bad in [
        json.replace("\"OKP\"", "\"EC\""),
        json.replace("\"Ed25519\"", "\"X25519\""),
        json.replace("\"EdDSA\"", "\"HS256\""),
        json.replace("\"kid\":\"1\"", "\"kid\":\"01\""),
        json.replace("\"kid\":\"1\"", "\"kid\":\"k1\""),
        json.replace(&x, &x[..42]),
        // The identity point: a small-order key would accept forged signatures.
        json.replace(
            &x,
            &B64.encode(
                [1u8; 1]
                    .iter()
                    .chain(&[0u8; 31])
                    .copied()
                    .collect::<Vec<_>>(),
            ),
        ),
        json.replace("\"event_id\":7", "\"event_id\":-7"),
        json.replace("\"keys\":[", "\"keys\":[],\"more\":["),
    ] {
        assert!(serde_json::from_str::<PublicKeys>(&bad).is_err(), "{bad}");
    }
    let two = json.replace(
        "}]",
        &format!(
            "}},{}]",
            &json[json.find("{\"kty").unwrap()..json.len() - 2]
        ),
    );
    assert!(
        serde_json::from_str::<PublicKeys>(&two).is_err(),
        "duplicate kid: {two}"
    );
}

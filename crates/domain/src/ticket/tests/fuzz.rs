//! Parsing and verifying never panic, whatever the input, and accept nothing but what
//! was signed.

use proptest::prelude::*;

use super::payload::{self, Fields};
use super::*;

fn fields() -> impl Strategy<Value = Fields> {
    let name = proptest::option::of("([a-zA-Zé]{1,6} ){0,3}[a-z]{1,2}");
    (
        1..=i64::MAX,
        any::<u128>(),
        any::<u32>(),
        any::<u32>(),
        0..=i64::MAX as u64 / 1000,
    )
        .prop_flat_map(move |f| (Just(f), name.clone(), any::<bool>()))
        .prop_map(
            |((event, ticket, version, key, secs), name, rotating)| Fields {
                event: EventId(event),
                ticket: TicketId(Uuid::from_u128(ticket)),
                version,
                key: KeyId(key),
                issued_at_secs: secs,
                attendee: name.map(|n| AttendeeName::try_from(n).unwrap()),
                rotating,
            },
        )
}

/// One random edit of a byte string: replace, insert, delete or cut.
fn mutate(bytes: &[u8], at: usize, op: u8, value: u8) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let at = at % (out.len() + 1);
    match op % 4 {
        0 if at < out.len() => out[at] = value,
        1 => out.insert(at, value),
        2 if at < out.len() => {
            out.remove(at);
        }
        _ => out.truncate(at),
    }
    out
}

proptest! {
    #[test]
    fn any_fields_encode_and_parse_back_exactly(f in fields(), sig in any::<[u8; 32]>()) {
        let mut bytes = payload::encode(&f);
        let signed_len = bytes.len();
        bytes.extend_from_slice(&sig);
        bytes.extend_from_slice(&sig);
        if f.rotating {
            bytes.extend_from_slice(&[9; CODE_LEN]);
        }
        prop_assert!(bytes.len() <= payload::MAX_LEN);
        let p = payload::parse(&bytes).unwrap();
        prop_assert_eq!(&p.fields, &f);
        prop_assert_eq!(p.signed.len(), signed_len);
    }

    #[test]
    fn base45_round_trips_and_every_text_has_one_meaning(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        text in "[0-9A-Z $%*+./:-]{0,60}",
    ) {
        prop_assert_eq!(base45::decode(&base45::encode(&bytes)), Some(bytes));
        if let Some(decoded) = base45::decode(&text) {
            prop_assert_eq!(base45::encode(&decoded), text);
        }
    }

    #[test]
    fn random_bytes_never_parse_into_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = payload::parse(&bytes);
        let g = gate(&keys(7, 1));
        prop_assert!(g.verify(&base45::encode(&bytes), NOW).is_err());
    }

    #[test]
    fn random_text_is_refused(text in "\\PC{0,400}") {
        prop_assert!(gate(&keys(7, 1)).verify(&text, NOW).is_err());
    }
}

proptest! {
    // Each case checks a signature, slow in unoptimised test builds.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_mutated_barcode_is_refused(at in any::<usize>(), op in any::<u8>(), value in any::<u8>(), rotating in any::<bool>()) {
        let k = if rotating {
            keys(7, 1).with_rotation(RotationSecret::from_bytes([5; 32]))
        } else {
            keys(7, 1)
        };
        let (code, secret) = k.issue(&ticket(7), NOW).unwrap();
        let good = match &secret {
            Some(s) => base45::decode(&code.text_at(s, NOW)).unwrap(),
            None => code.as_bytes().to_vec(),
        };
        let bad = mutate(&good, at, op, value);
        let verdict = gate(&k).verify(&base45::encode(&bad), NOW);
        prop_assert_eq!(verdict.is_ok(), bad == good, "{:?}", verdict);
    }
}

//! Request bodies: a valid one per route shape, and the ways the fuzz breaks them —
//! wrong JSON types, numbers no field holds, unicode, missing and extra fields, deep
//! nesting, truncation, blank and non-JSON bodies, and padding.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::routes::Shape;
use super::world::World;

#[derive(Clone, Debug)]
pub enum Mutation {
    None,
    /// A value replaced by one of another JSON type.
    WrongType {
        at: usize,
        kind: usize,
    },
    /// A value replaced by a number no field can hold.
    Huge {
        at: usize,
        kind: usize,
    },
    Unicode {
        at: usize,
    },
    /// A field removed.
    Missing {
        at: usize,
    },
    /// A field no schema has.
    Extra,
    /// The body nested this deep in arrays.
    Deep(usize),
    Truncated,
    Blank,
    NotJson(usize),
    /// 200 KB of padding.
    Big,
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0..64usize;
    prop_oneof![
        3 => (at.clone(), 0..6usize).prop_map(|(at, kind)| Mutation::WrongType { at, kind }),
        1 => (at.clone(), 0..HUGE.len()).prop_map(|(at, kind)| Mutation::Huge { at, kind }),
        1 => at.clone().prop_map(|at| Mutation::Unicode { at }),
        2 => at.prop_map(|at| Mutation::Missing { at }),
        1 => Just(Mutation::Extra),
        1 => prop_oneof![Just(64usize), Just(2_000), Just(100_000)].prop_map(Mutation::Deep),
        1 => Just(Mutation::Truncated),
        1 => Just(Mutation::Blank),
        1 => (0..NOT_JSON.len()).prop_map(Mutation::NotJson),
        1 => Just(Mutation::Big),
    ]
}

const HUGE: &[&str] = &[
    "1e999",
    "-1e999",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890.5",
    "4294967296",
];
const NOT_JSON: &[&str] = &[
    "not json",
    "{'single': 1}",
    "\u{feff}{}",
    "{\"a\":1,}",
    "null",
    "[]",
    "0",
    "\"\"",
];

/// The body text: `v` broken by `mutation`.
pub fn mutate(mut v: Value, mutation: Mutation) -> Vec<u8> {
    let text = match mutation {
        Mutation::None => v.to_string(),
        Mutation::WrongType { at, kind } => {
            let other = [
                json!("text"),
                json!(1),
                json!(true),
                Value::Null,
                json!([]),
                json!({}),
            ];
            replace(&mut v, at, other[kind % other.len()].clone());
            v.to_string()
        }
        Mutation::Huge { at, kind } => {
            replace(&mut v, at, json!("__HUGE__"));
            v.to_string().replace("\"__HUGE__\"", HUGE[kind])
        }
        Mutation::Unicode { at } => {
            replace(&mut v, at, json!("\u{e9}\u{1F600}\u{0}\u{202e}\u{fdfa}"));
            v.to_string()
        }
        Mutation::Missing { at } => {
            remove(&mut v, at);
            v.to_string()
        }
        Mutation::Extra => {
            if let Some(o) = v.as_object_mut() {
                o.insert("unexpected".into(), json!(1));
            }
            v.to_string()
        }
        Mutation::Deep(depth) => format!("{}{v}{}", "[".repeat(depth), "]".repeat(depth)),
        Mutation::Truncated => {
            let t = v.to_string();
            t[..t.len() / 2].to_string()
        }
        Mutation::Blank => String::new(),
        Mutation::NotJson(k) => NOT_JSON[k].to_string(),
        Mutation::Big => json!({"pad": "x".repeat(200_000), "body": v}).to_string(),
    };
    text.into_bytes()
}

/// A body the route accepts, in one of a few variants.
pub fn valid(w: &World, shape: Shape, variant: usize) -> Value {
    let known = w.known.lock();
    let order = known
        .orders
        .first()
        .map(|o| o.0.to_string())
        .unwrap_or_default();
    match shape {
        Shape::Empty => json!({}),
        Shape::Spec => {
            serde_json::to_value(crate::common::spec(1, 4, variant as u32, 2)).expect("a spec")
        }
        Shape::Admission => [
            json!({"mode": "adaptive", "rate_per_s": 40}),
            json!({"mode": "fixed"}),
            json!({"rate_per_s": 0}),
            json!({}),
        ][variant]
            .clone(),
        Shape::Rules => [
            json!({"max_active_shoppers": 25, "buyers_per_free_seat": 2}),
            json!({"require_verified": true}),
            json!({"pow_difficulty": 1}),
            json!({"sold_out_margin": 2, "accounts_created_before": 1_700_000_000_000i64}),
        ][variant]
            .clone(),
        Shape::Grant => json!({
            "buyer_id": uuid::Uuid::now_v7().to_string(),
            "verified": matches!(variant, 0 | 2),
            "account_created_at": 1_700_000_000_000i64,
        }),
        Shape::Hold => [
            json!({"best_available": {"section": "A", "quantity": 1}}),
            json!({"seat_ids": ["A-1-2"]}),
            json!({"best_available": {"section": "GA", "quantity": 2, "adjacent": false}}),
            json!({"seat_ids": ["A-2-1", "A-2-2"]}),
        ][variant]
            .clone(),
        Shape::Checkout => {
            let methods = [
                "pm_card_visa",
                "pm_card_declined",
                "pm_card_threeDSecure",
                "pm_nope",
            ];
            json!({"payment_method": methods[variant]})
        }
        Shape::Webhook => json!({
            "id": "evt_fuzz",
            "type": "payment_intent.succeeded",
            "data": {"object": {"id": "pi_fuzz", "metadata": {"order_id": order}}},
        }),
    }
}

/// How many values the document has, containers included.
fn size(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(size).sum(),
        Value::Object(o) => o.values().map(size).sum(),
        _ => 0,
    }
}

/// The `n`th value in document order (0 is the whole document).
fn nth(v: &mut Value, n: usize) -> Option<&mut Value> {
    let Some(mut n) = n.checked_sub(1) else {
        return Some(v);
    };
    let children: Box<dyn Iterator<Item = &mut Value>> = match v {
        Value::Array(a) => Box::new(a.iter_mut()),
        Value::Object(o) => Box::new(o.values_mut()),
        _ => return None,
    };
    for c in children {
        let s = size(c);
        if n < s {
            return nth(c, n);
        }
        n -= s;
    }
    None
}

fn replace(v: &mut Value, at: usize, with: Value) {
    let n = at % size(v);
    if let Some(slot) = nth(v, n) {
        *slot = with;
    }
}

/// How many object members the document has, nested ones included.
fn fields(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.iter().map(fields).sum(),
        Value::Object(o) => o.len() + o.values().map(fields).sum::<usize>(),
        _ => 0,
    }
}

/// Removes the `n`th object member in document order.
fn remove_field(v: &mut Value, n: &mut usize) -> bool {
    match v {
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for k in keys {
                if *n == 0 {
                    o.remove(&k);
                    return true;
                }
                *n -= 1;
                if o.get_mut(&k).is_some_and(|c| remove_field(c, n)) {
                    return true;
                }
            }
            false
        }
        Value::Array(a) => a.iter_mut().any(|x| remove_field(x, n)),
        _ => false,
    }
}

fn remove(v: &mut Value, at: usize) {
    let total = fields(v);
    if total > 0 {
        remove_field(v, &mut (at % total));
    }
}

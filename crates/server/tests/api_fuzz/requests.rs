//! The generated requests: a coherent request to one route (its method, the world's ids,
//! the token the route takes, a fresh Idempotency-Key, JSON, a valid body), with up to
//! three faults, each breaking one part the way clients (and attackers) break it: the
//! method, an id, the token, the key, the content type or the body. Choices are small
//! indices, turned into a request against the world's own ids and tokens, so that a
//! failure shrinks to a readable case.

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::world::World;

/// (method, path, body, who may call, how often drawn) of every route, plus two that
/// do not exist. Routes that change something are drawn more often than reads: that is
/// where a refusal could still have acted.
const ROUTES: &[(&str, &str, Shape, Auth, usize)] = &[
    ("POST", "/v1/buyers", Shape::Empty, Auth::Nobody, 2),
    ("POST", "/v1/events", Shape::Spec, Auth::Operator, 1),
    ("GET", "/v1/events/{event}", Shape::Empty, Auth::Nobody, 1),
    (
        "POST",
        "/v1/events/{event}/open",
        Shape::Empty,
        Auth::Operator,
        1,
    ),
    (
        "POST",
        "/v1/events/{event}/close",
        Shape::Empty,
        Auth::Operator,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/stats",
        Shape::Empty,
        Auth::Operator,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/seatmap",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/availability",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/availability/stream",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    (
        "POST",
        "/v1/events/{event}/queue",
        Shape::Empty,
        Auth::Buyer,
        3,
    ),
    (
        "GET",
        "/v1/events/{event}/queue",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    ("GET", "/v1/queue/status", Shape::Empty, Auth::Ticket, 1),
    (
        "GET",
        "/v1/events/{event}/queue/stream",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/queue/challenge",
        Shape::Empty,
        Auth::Buyer,
        1,
    ),
    (
        "GET",
        "/v1/events/{event}/queue/fairness",
        Shape::Empty,
        Auth::Nobody,
        1,
    ),
    (
        "PUT",
        "/v1/events/{event}/admission",
        Shape::Admission,
        Auth::Operator,
        2,
    ),
    (
        "PUT",
        "/v1/events/{event}/waiting-room",
        Shape::Rules,
        Auth::Operator,
        2,
    ),
    ("POST", "/v1/buyer-tokens", Shape::Grant, Auth::Operator, 2),
    (
        "POST",
        "/v1/events/{event}/holds",
        Shape::Hold,
        Auth::Admission,
        8,
    ),
    ("GET", "/v1/holds/{hold}", Shape::Empty, Auth::Owner, 1),
    ("DELETE", "/v1/holds/{hold}", Shape::Empty, Auth::Owner, 2),
    (
        "POST",
        "/v1/holds/{hold}/checkout",
        Shape::Checkout,
        Auth::Owner,
        5,
    ),
    (
        "POST",
        "/v1/payments/webhook",
        Shape::Webhook,
        Auth::Nobody,
        2,
    ),
    ("GET", "/v1/orders/{order}", Shape::Empty, Auth::Owner, 1),
    ("GET", "/v1/me/orders", Shape::Empty, Auth::Buyer, 1),
    ("GET", "/healthz", Shape::Empty, Auth::Nobody, 1),
    ("GET", "/metrics", Shape::Empty, Auth::Nobody, 1),
    ("GET", "/openapi.json", Shape::Empty, Auth::Nobody, 1),
    ("GET", "/v1/nothing/here", Shape::Empty, Auth::Nobody, 1),
    (
        "POST",
        "/v1/events/{event}/nothing",
        Shape::Hold,
        Auth::Admission,
        1,
    ),
];

/// Whose token a coherent request carries.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Auth {
    Nobody,
    Operator,
    Buyer,
    /// The queue ticket.
    Ticket,
    /// The admission to the event in the path.
    Admission,
    /// The buyer who owns the hold or order in the path.
    Owner,
}

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

/// Ids no store can have, and text that is no id at all (URI-safe, as clients send it).
const MALFORMED_IDS: &[&str] = &[
    "abc",
    "-1",
    "0",
    "1e3",
    "99999999999999999999999",
    "%00",
    "%C3%A9%F0%9F%98%80",
    "1-",
    "1-zz",
    "..%2F..",
    "%7Btag%7D",
    "00000000-0000-0000-0000-000000000000",
    "1.5",
    "+1",
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Empty,
    Spec,
    Admission,
    Rules,
    Grant,
    Hold,
    Checkout,
    Webhook,
}

#[derive(Clone, Debug)]
pub enum Id {
    /// One of the world's (events: open, other, draft; holds and orders: known ones).
    Known(usize),
    /// Well-formed, but nothing has it.
    Unknown,
    Malformed(usize),
}

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

/// One broken part of a request.
#[derive(Clone, Debug)]
pub enum Fault {
    Method(usize),
    Event(Id),
    Hold(Id),
    Order(Id),
    /// Another Authorization header (see `authorization`).
    Token(usize),
    /// Another Idempotency-Key (see `key`).
    Key(usize),
    ContentType(usize),
    Body(Mutation),
}

#[derive(Clone, Debug)]
pub struct Fuzz {
    route: usize,
    /// Which of the world's events, holds and orders the path names.
    target: usize,
    variant: usize,
    peer: u8,
    faults: Vec<Fault>,
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        2 => (0..8usize).prop_map(Id::Known),
        1 => Just(Id::Unknown),
        2 => (0..MALFORMED_IDS.len()).prop_map(Id::Malformed),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
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

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        1 => (0..METHODS.len()).prop_map(Fault::Method),
        1 => id().prop_map(Fault::Event),
        1 => id().prop_map(Fault::Hold),
        1 => id().prop_map(Fault::Order),
        3 => (0..TOKENS_EXTRA + 10).prop_map(Fault::Token),
        2 => (0..KEYS.len() + 4).prop_map(Fault::Key),
        1 => (1..CONTENT_TYPES.len()).prop_map(Fault::ContentType),
        4 => mutation().prop_map(Fault::Body),
    ]
}

/// The total weight of the first `n` routes.
fn weight(n: usize) -> usize {
    ROUTES[..n].iter().map(|r| r.4).sum()
}

fn route_at(w: usize) -> usize {
    (0..ROUTES.len()).find(|&i| weight(i + 1) > w).unwrap_or(0)
}

pub fn fuzz() -> impl Strategy<Value = Fuzz> {
    let faults = prop_oneof![
        4 => Just(Vec::new()),
        4 => proptest::collection::vec(fault(), 1..=1),
        2 => proptest::collection::vec(fault(), 2..=3),
    ];
    (
        0..weight(ROUTES.len()),
        0..8usize,
        0..4usize,
        any::<u8>(),
        faults,
    )
        .prop_map(|(route, target, variant, peer, faults)| Fuzz {
            route: route_at(route),
            target,
            variant,
            peer,
            faults,
        })
}

/// Header values no token is: besides the world's own tokens (forged ones included).
const TOKENS_EXTRA: usize = 6;
const KEYS: &[&str] = &["", " ", "{tag}key", "k\u{e9}y"];
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "",
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/json; charset=utf-16",
    "multipart/form-data; boundary=x",
];
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

impl Fuzz {
    pub fn peer(&self) -> u8 {
        self.peer
    }

    fn fault<T>(&self, f: impl Fn(&Fault) -> Option<T>) -> Option<T> {
        self.faults.iter().rev().find_map(f)
    }

    /// The request this case stands for, with a line saying what it is, and the name of
    /// the token it carries (to know whose holds and orders its answer makes).
    pub fn request(&self, w: &World) -> (String, &'static str, Request<Body>) {
        let (method, template, shape, auth, _) = ROUTES[self.route];
        let method = self
            .fault(|f| match f {
                Fault::Method(m) => Some(METHODS[*m]),
                _ => None,
            })
            .unwrap_or(method);
        let (path, owner) = self.path(w, template);
        let mut req = Request::builder().method(method).uri(&path);
        let (auth, token_name) = self.authorization(w, auth, owner);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let key = self.key(w);
        if let Some(k) = &key {
            req = req.header("idempotency-key", k.as_slice());
        }
        let ct = self.fault(|f| match f {
            Fault::ContentType(c) => Some(CONTENT_TYPES[*c]),
            _ => None,
        });
        let ct = ct.unwrap_or(CONTENT_TYPES[0]);
        if !ct.is_empty() {
            req = req.header("content-type", ct);
        }
        let body = self.body(w, shape);
        let what = format!(
            "{method} {path} as {token_name}, key {:?}, content type {ct:?}, body {}",
            key.map(|k| String::from_utf8_lossy(&k)
                .chars()
                .take(40)
                .collect::<String>()),
            preview(&body)
        );
        let req = req
            .body(Body::from(body))
            .expect("a request the fuzz can build");
        (what, token_name, req)
    }

    /// The path with its ids, and the name of the token of the owner of its hold or order.
    /// A coherent path names one of the world's three events and one of the latest
    /// holds and orders (the likeliest still to be live).
    fn path(&self, w: &World, template: &str) -> (String, &'static str) {
        let known = w.known.lock();
        let events: Vec<String> = (w.events.iter().chain(&known.events))
            .map(|e| e.to_string())
            .collect();
        let holds: Vec<String> = known.holds.iter().map(|h| h.0.to_string()).collect();
        let orders: Vec<String> = known.orders.iter().map(|o| o.0.to_string()).collect();
        let latest = |n: usize| n - 1 - self.target % n.min(4);
        let (hold_at, order_at) = (latest(holds.len()), latest(orders.len()));
        let event = self.fault(|f| match f {
            Fault::Event(i) => Some(pick(i, &events, "987654321")),
            _ => None,
        });
        let hold = self.fault(|f| match f {
            Fault::Hold(i) => Some(pick(i, &holds, &format!("{}-{:032x}", w.events[0], 7))),
            _ => None,
        });
        let order = self.fault(|f| match f {
            Fault::Order(i) => Some(pick(i, &orders, &uuid::Uuid::now_v7().to_string())),
            _ => None,
        });
        // Opening and closing aim at the draft unless a fault says otherwise: closing the
        // open events early would leave nothing on sale to fuzz.
        let coherent = match template.ends_with("/open") || template.ends_with("/close") {
            true => events[2].clone(),
            false => events[self.target % 3].clone(),
        };
        let path = template
            .replace("{event}", &event.unwrap_or(coherent))
            .replace("{hold}", &hold.unwrap_or_else(|| holds[hold_at].clone()))
            .replace(
                "{order}",
                &order.unwrap_or_else(|| orders[order_at].clone()),
            );
        let owner = match template {
            t if t.contains("{hold}") => known.holds[hold_at].1,
            t if t.contains("{order}") => known.orders[order_at].1,
            _ => "buyer",
        };
        (path, owner)
    }

    /// The Authorization header (if any) and the name of the token in it.
    fn authorization(
        &self,
        w: &World,
        auth: Auth,
        owner: &'static str,
    ) -> (Option<Vec<u8>>, &'static str) {
        let bearer = |t: &str| Some(format!("Bearer {t}").into_bytes());
        let named = |name: &'static str| (bearer(w.token(name)), name);
        let choice = self.fault(|f| match f {
            Fault::Token(t) => Some(*t),
            _ => None,
        });
        let Some(choice) = choice else {
            return match auth {
                Auth::Nobody => (None, "nobody"),
                Auth::Operator => named("operator"),
                // A buyer of its own where the world has one: joins are limited per buyer.
                Auth::Buyer => match w.known.lock().buyers.get(self.target) {
                    Some(t) => (bearer(t), "a new buyer"),
                    None => named("buyer"),
                },
                Auth::Ticket => named("queue ticket"),
                Auth::Admission if self.target % 3 == 1 => named("other event's admission"),
                Auth::Admission => named("admission"),
                Auth::Owner => named(owner),
            };
        };
        match choice {
            0 => (None, "nobody"),
            1 => (Some(b"Basic dXNlcjpwYXNz".to_vec()), "basic auth"),
            2 => (Some(b"Bearer ".to_vec()), "an empty bearer"),
            3 => (bearer("garbage.token"), "garbage"),
            4 => (
                Some("Bearer \u{e9}\u{1F600}".as_bytes().to_vec()),
                "non-ASCII bytes",
            ),
            5 => (bearer(&"x".repeat(10_000)), "a 10 KB token"),
            n => named(w.tokens[(n - TOKENS_EXTRA) % w.tokens.len()].0),
        }
    }

    fn key(&self, w: &World) -> Option<Vec<u8>> {
        let choice = self.fault(|f| match f {
            Fault::Key(k) => Some(*k),
            _ => None,
        });
        match choice {
            None => Some(uuid::Uuid::new_v4().to_string().into_bytes()),
            Some(0) => None,
            Some(1) => Some(w.keys[self.variant % w.keys.len()].clone().into_bytes()),
            Some(2) => Some(w.keys[self.target % w.keys.len()].clone().into_bytes()),
            Some(3) => Some("k".repeat(300).into_bytes()),
            Some(n) => Some(KEYS[n - 4].as_bytes().to_vec()),
        }
    }

    fn body(&self, w: &World, shape: Shape) -> Vec<u8> {
        let mut v = valid(w, shape, self.variant);
        let mutation = self.fault(|f| match f {
            Fault::Body(m) => Some(m.clone()),
            _ => None,
        });
        let text = match mutation.unwrap_or(Mutation::None) {
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
}

/// A body the route accepts, in one of a few variants.
fn valid(w: &World, shape: Shape, variant: usize) -> Value {
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
            json!({"max_active_shoppers": 25}),
            json!({"require_verified": true}),
            json!({"pow_difficulty": 1}),
            json!({"sold_out_margin": 2, "accounts_created_before": 1_700_000_000_000i64}),
        ][variant]
            .clone(),
        Shape::Grant => json!({
            "buyer_id": uuid::Uuid::now_v7().to_string(),
            "verified": variant % 2 == 0,
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

fn pick(id: &Id, known: &[String], unknown: &str) -> String {
    match id {
        Id::Known(i) if !known.is_empty() => known[i % known.len()].clone(),
        Id::Known(_) | Id::Unknown => unknown.to_string(),
        Id::Malformed(i) => MALFORMED_IDS[*i].to_string(),
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

fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match text.chars().count() {
        n if n > 120 => format!(
            "{}… ({} bytes)",
            text.chars().take(120).collect::<String>(),
            body.len()
        ),
        _ => text.into_owned(),
    }
}

//! The generated requests: a coherent request to one route (its method, the world's ids,
//! the token the route takes, a fresh Idempotency-Key, JSON, a valid body), with up to
//! three faults, each breaking one part the way clients (and attackers) break it: the
//! method, an id, the token, the key, the content type or the body. Choices are small
//! indices, turned into a request against the world's own ids and tokens, so that a
//! failure shrinks to a readable case.

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;

use super::bodies::{Mutation, mutate, mutation, valid};
use super::routes::{Auth, METHODS, ROUTES, Shape, route_at, total_weight};
use super::world::World;

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

#[derive(Clone, Debug)]
pub enum Id {
    /// One of the world's (events: open, other, draft; holds and orders: known ones).
    Known(usize),
    /// Well-formed, but nothing has it.
    Unknown,
    Malformed(usize),
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

pub fn fuzz() -> impl Strategy<Value = Fuzz> {
    let faults = prop_oneof![
        4 => Just(Vec::new()),
        4 => proptest::collection::vec(fault(), 1..=1),
        2 => proptest::collection::vec(fault(), 2..=3),
    ];
    (0..total_weight(), 0..8usize, 0..4usize, any::<u8>(), faults).prop_map(
        |(route, target, variant, peer, faults)| Fuzz {
            route: route_at(route),
            target,
            variant,
            peer,
            faults,
        },
    )
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
        let route = &ROUTES[self.route];
        let (template, shape, auth) = (route.path, route.shape, route.auth);
        let method = self
            .fault(|f| match f {
                Fault::Method(m) => Some(METHODS[*m]),
                _ => None,
            })
            .unwrap_or(route.method);
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
        let mutation = self.fault(|f| match f {
            Fault::Body(m) => Some(m.clone()),
            _ => None,
        });
        mutate(
            valid(w, shape, self.variant),
            mutation.unwrap_or(Mutation::None),
        )
    }
}

fn pick(id: &Id, known: &[String], unknown: &str) -> String {
    match id {
        Id::Known(i) if !known.is_empty() => known[i % known.len()].clone(),
        Id::Known(_) | Id::Unknown => unknown.to_string(),
        Id::Malformed(i) => MALFORMED_IDS[*i].to_string(),
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

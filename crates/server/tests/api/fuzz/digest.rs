//! The state a refused request must leave as it was, read from the ports themselves: per
//! event its ledger record and sold seats, the hot store's bitmap, counts and sold seats,
//! its queue and waiting-room settings; every known hold; every order and what the audit
//! reads of the ledger; and the provider's book.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use boxoffice_domain::EventId;
use boxoffice_engine::Ports;

use super::world::World;

/// What each part of the state is, in words (its `Debug` form).
pub type Digest = BTreeMap<String, String>;

fn text(v: impl Debug) -> String {
    format!("{v:?}")
}

pub async fn digest(w: &World) -> Digest {
    let p = w.engine.ports();
    let (events, holds) = {
        let known = w.known.lock();
        let events: Vec<_> = w.events.iter().chain(&known.events).copied().collect();
        (events, known.holds.iter().map(|h| h.0).collect::<Vec<_>>())
    };
    let mut d = Digest::new();
    for e in events {
        event(p, e, &mut d).await;
    }
    for h in holds {
        d.insert(format!("hold {h}"), text(p.arbiter.get(h).await));
    }
    // What the audit reads, rather than its verdict: every order and payment as it is.
    let facts = p.ledger.audit_facts().await.map(text);
    d.insert("orders and the audit's facts".into(), text(facts));
    let book = p.payments.all_payments().await.map(text);
    d.insert("the provider's book".into(), text(book));
    d
}

async fn event(p: &Ports, e: EventId, d: &mut Digest) {
    let settings = p.queue.settings(e).await;
    let settings = settings.map(|s| s.into_iter().collect::<BTreeMap<_, _>>());
    let parts = [
        ("in the ledger", text(p.ledger.event(e).await)),
        ("sold (ledger)", text(p.ledger.sold_seats(e).await)),
        ("bitmap", text(p.arbiter.availability(e).await)),
        ("counts", text(p.arbiter.counts(e).await)),
        ("sold (hot store)", text(p.arbiter.sold_seats(e).await)),
        ("queue", text(p.queue.state(e).await)),
        ("waiting-room settings", text(settings)),
    ];
    for (what, v) in parts {
        d.insert(format!("event {e} {what}"), v);
    }
}

/// The entries that differ, as "key: before → after" lines.
pub fn changes(before: &Digest, after: &Digest) -> Vec<String> {
    let keys: BTreeSet<_> = before.keys().chain(after.keys()).collect();
    (keys.into_iter())
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("{k}: {:?} → {:?}", before.get(k), after.get(k)))
        .collect()
}

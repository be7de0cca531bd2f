//! The case every suite has (STYLE habit 8), for claims: K deliveries, N relays
//! claiming at once, each delivery held by exactly one relay at a time and none lost;
//! and every order's events still reach the sink in order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use futures::stream;
use parking_lot::Mutex;

use super::{OutboxUnderTest, authorized_order, claim_of, webhook};
use crate::ledger::fixtures::T0;

const LATER: boxoffice_domain::Millis = boxoffice_domain::Millis(T0.0 + 60_000);

const ORDERS: usize = 150;
const RELAYS: usize = 12;

#[derive(Default)]
struct Seen {
    /// (sink, row) being delivered right now.
    held: HashSet<(String, i64)>,
    /// (sink, row) delivered, with the tick it was delivered at.
    done: HashMap<(String, i64), u64>,
    /// (sink, order, sequence) → the tick its claim was made at.
    claimed_at: HashMap<(String, String, u32), u64>,
    /// (sink, order, sequence) → the tick it was delivered at.
    delivered_at: HashMap<(String, String, u32), u64>,
}

pub async fn n_relays_racing_for_k_deliveries_each_claim_one_exactly_once(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    t.outbox.add_sink(&webhook("we_b")).await.unwrap();
    let ledger = t.ledger.clone();
    stream::iter(0..ORDERS)
        .map(|_| {
            let ledger = ledger.clone();
            async move { authorized_order(&ledger).await }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let expected = ORDERS * 2 * 2; // two events per order, two sinks
    let seen = Arc::new(Mutex::new(Seen::default()));
    let tick = Arc::new(AtomicU64::new(0));
    let relays: Vec<_> = (0..RELAYS)
        .map(|r| {
            let (outbox, seen, tick) = (t.outbox.clone(), seen.clone(), tick.clone());
            tokio::spawn(async move {
                let owner = format!("relay-{r}");
                loop {
                    let batch = outbox.claim(&claim_of(&owner, LATER, 7)).await.unwrap();
                    if batch.is_empty() && seen.lock().done.len() == expected {
                        return;
                    }
                    for d in &batch {
                        let key = (d.sink.clone(), d.event.row);
                        let at = tick.fetch_add(1, Ordering::SeqCst);
                        let mut s = seen.lock();
                        assert!(s.held.insert(key.clone()), "{key:?} claimed twice at once");
                        assert!(!s.done.contains_key(&key), "{key:?} claimed after delivery");
                        let ordered = (d.sink.clone(), d.event.order.to_string(), d.event.sequence);
                        s.claimed_at.insert(ordered, at);
                    }
                    for d in batch {
                        // The sink has it from here on; the ledger hears so next.
                        let at = tick.fetch_add(1, Ordering::SeqCst);
                        {
                            let mut s = seen.lock();
                            let key = (d.sink.clone(), d.event.row);
                            s.held.remove(&key);
                            s.done.insert(key, at);
                            let ordered =
                                (d.sink.clone(), d.event.order.to_string(), d.event.sequence);
                            s.delivered_at.insert(ordered, at);
                        }
                        outbox.delivered(&d.sink, d.event.row).await.unwrap();
                    }
                    if seen.lock().done.len() < expected {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for r in relays {
        r.await.expect("a relay ran to the end");
    }
    let s = seen.lock();
    assert_eq!(
        s.done.len(),
        expected,
        "every delivery made once, none lost"
    );
    for ((sink, order, seq), claimed) in &s.claimed_at {
        if *seq > 1 {
            let before = (sink.clone(), order.clone(), seq - 1);
            assert!(
                s.delivered_at[&before] < *claimed,
                "{sink} {order}: event {seq} claimed before {} was delivered",
                seq - 1
            );
        }
    }
}

//! The `ClaimedJoins` conformance suite: a queue join under an Idempotency-Key claim
//! answers as `IdempotencyStore::begin` followed (when the claim is granted) by
//! `QueueStore::join_line`, whether the adapter does both in one step or in two.
//!
//! ```ignore
//! boxoffice_testkit::claimed_joins_conformance!(async { ClaimedLine { joins, queue } });
//! ```
//!
//! `joins` must keep its claims in `joins.replays()` and place buyers in `queue`. Every
//! case uses its own event and buyers, so one shared backend runs the suite in parallel.
//! A store may keep `KeptOutcome::Joined` as the key's answer in the step itself
//! (`Claimed::Kept`): a retry is then refused with it, where a store that leaves the
//! keeping to the caller answers what the caller kept, or `InFlight` until then.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::{
    Begin, Claimed, ClaimedJoins, KeptOutcome, Place, QueueStore, StoreError, StoredResponse,
};
use futures::future::join_all;

use crate::arbiter::unique_event;
use crate::claimed::Key;
use crate::idempotency::claimant;

/// What a case runs on: the joins under claims and the line they place buyers in.
#[derive(Clone)]
pub struct ClaimedLine {
    pub joins: Arc<dyn ClaimedJoins>,
    pub queue: Arc<dyn QueueStore>,
}

/// Expands into `mod claimed_joins { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! claimed_joins_conformance {
    ($make:expr) => {
        mod claimed_joins {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(claimed_joins, $make;
                a_granted_claim_takes_a_place_and_its_retry_takes_none,
                a_key_reused_for_another_request_is_a_mismatch_and_takes_no_place,
                a_duplicate_while_the_first_runs_takes_no_second_place,
                a_claim_on_a_line_the_store_has_not_opened_is_taken_and_places_nobody,
                many_buyers_racing_with_duplicates_get_dense_places_and_each_key_runs_once,
            );
        }
    };
}

/// A new key of `buyer`'s, as a fresh process claims it.
fn new_key(buyer: BuyerId) -> Key {
    Key::new(buyer, claimant())
}

/// The same key and claimant, sent with another request.
fn other_request(key: &Key) -> Key {
    Key {
        replay: key.replay.clone(),
        fingerprint: key.fingerprint.map(|b| !b),
        claimant: key.claimant,
    }
}

type Outcome = Claimed<Result<Option<Place>, StoreError>>;

async fn join(p: &ClaimedLine, key: &Key, event: EventId, buyer: BuyerId) -> Outcome {
    p.joins
        .join_line(&key.claim(), event, buyer)
        .await
        .expect("the store answers")
}

/// An event whose line is open, with one buyer in it (position 1).
async fn open_line(p: &ClaimedLine) -> EventId {
    let event = unique_event();
    let first = p.queue.join(event, BuyerId::random(), true).await;
    assert_eq!(first.expect("join").position, Some(1));
    event
}

/// The place a granted step took.
fn placed(outcome: &Outcome) -> Place {
    match outcome {
        Claimed::Ran(Ok(Some(place))) | Claimed::Kept(Ok(Some(place))) => *place,
        other => panic!("a place taken under the claim, got {other:?}"),
    }
}

/// Keeps the answer where the store left the keeping to the caller, as the HTTP layer
/// does after a step that ran.
async fn finish(p: &ClaimedLine, key: &Key, outcome: &Outcome) {
    if let Claimed::Ran(_) = outcome {
        let answer = StoredResponse {
            status: 200,
            body: b"{}".to_vec(),
        };
        let kept = p
            .joins
            .replays()
            .finish(&key.replay, key.lease(), &answer)
            .await;
        kept.expect("the store keeps the answer");
    }
}

/// A refusal that says the key's join ran: its kept outcome, or the caller's answer.
fn answered(begin: &Begin) -> bool {
    matches!(begin, Begin::Replay(_))
        || matches!(begin, Begin::Kept(k) if **k == KeptOutcome::Joined)
}

async fn length(p: &ClaimedLine, event: EventId) -> u64 {
    p.queue.state(event).await.expect("state").queue_length
}

pub async fn a_granted_claim_takes_a_place_and_its_retry_takes_none(p: ClaimedLine) {
    let event = open_line(&p).await;
    let buyer = BuyerId::random();
    let key = new_key(buyer);
    let first = join(&p, &key, event, buyer).await;
    assert_eq!(
        placed(&first),
        Place {
            position: Some(2),
            new: true
        }
    );
    finish(&p, &key, &first).await;
    match join(&p, &key, event, buyer).await {
        Claimed::Refused(begin) => assert!(answered(&begin), "{begin:?}"),
        other => panic!("a retry is answered, not run: {other:?}"),
    }
    assert_eq!(length(&p, event).await, 2, "no second place");
    // The same buyer under a new key finds their place (one per buyer and event).
    let again = new_key(buyer);
    let found = join(&p, &again, event, buyer).await;
    assert_eq!(
        placed(&found),
        Place {
            position: Some(2),
            new: false
        }
    );
    p.queue.drop_event(event).await.expect("drop");
}

pub async fn a_key_reused_for_another_request_is_a_mismatch_and_takes_no_place(p: ClaimedLine) {
    let (event, other_event) = (open_line(&p).await, open_line(&p).await);
    let buyer = BuyerId::random();
    let key = new_key(buyer);
    let first = join(&p, &key, event, buyer).await;
    placed(&first);
    finish(&p, &key, &first).await;
    // The same key sent with another request (here: another event's join).
    let reused = other_request(&key);
    let outcome = join(&p, &reused, other_event, buyer).await;
    assert_eq!(outcome, Claimed::Refused(Begin::Mismatch));
    assert_eq!(p.queue.place(other_event, buyer).await, Ok(None));
    assert_eq!(length(&p, other_event).await, 1, "nobody placed");
    for e in [event, other_event] {
        p.queue.drop_event(e).await.expect("drop");
    }
}

pub async fn a_duplicate_while_the_first_runs_takes_no_second_place(p: ClaimedLine) {
    let event = open_line(&p).await;
    let buyer = BuyerId::random();
    let key = new_key(buyer);
    let first = join(&p, &key, event, buyer).await;
    placed(&first);
    // Not finished: the first request is still running, or its store kept it.
    match (&first, join(&p, &key, event, buyer).await) {
        (Claimed::Ran(_), Claimed::Refused(Begin::InFlight)) => {}
        (Claimed::Kept(_), Claimed::Refused(begin)) => assert!(answered(&begin), "{begin:?}"),
        (first, other) => panic!("the duplicate of {first:?} ran: {other:?}"),
    }
    assert_eq!(length(&p, event).await, 2);
    p.queue.drop_event(event).await.expect("drop");
}

pub async fn a_claim_on_a_line_the_store_has_not_opened_is_taken_and_places_nobody(p: ClaimedLine) {
    let event = unique_event();
    let buyer = BuyerId::random();
    let key = new_key(buyer);
    match join(&p, &key, event, buyer).await {
        Claimed::Ran(Ok(None)) | Claimed::Kept(Ok(None)) => {}
        other => panic!("the claim is taken and the line not joined: {other:?}"),
    }
    assert_eq!(p.queue.place(event, buyer).await, Ok(None));
    let state = p.queue.state(event).await.expect("state");
    assert!(!state.opened && state.queue_length == 0, "{state:?}");
    p.queue.drop_event(event).await.expect("drop");
}

/// Buyers with a key each join at once, each sending its request twice: per key
/// exactly one step runs, and the places are 2..=N+1, each given once.
pub async fn many_buyers_racing_with_duplicates_get_dense_places_and_each_key_runs_once(
    p: ClaimedLine,
) {
    const BUYERS: usize = 200;
    let event = open_line(&p).await;
    let keys: Vec<(BuyerId, Arc<Key>)> = (0..BUYERS)
        .map(|_| {
            let buyer = BuyerId::random();
            (buyer, Arc::new(new_key(buyer)))
        })
        .collect();
    let sends = keys.iter().flat_map(|(buyer, key)| {
        (0..2).map(|_| {
            let (p, key, buyer) = (p.clone(), key.clone(), *buyer);
            tokio::spawn(async move { join(&p, &key, event, buyer).await })
        })
    });
    let outcomes: Vec<Outcome> = join_all(sends)
        .await
        .into_iter()
        .map(|r| r.expect("join task"))
        .collect();
    let mut positions = HashSet::new();
    for pair in outcomes.chunks(2) {
        let ran: Vec<&Outcome> = pair
            .iter()
            .filter(|o| !matches!(o, Claimed::Refused(_)))
            .collect();
        assert_eq!(ran.len(), 1, "each key runs once: {pair:?}");
        let place = placed(ran[0]);
        assert!(place.new, "{place:?}");
        let position = place.position.expect("a position");
        assert!(positions.insert(position), "{position} given twice");
    }
    let expected: HashSet<u64> = (2..=BUYERS as u64 + 1).collect();
    assert_eq!(positions, expected, "dense, unique places");
    assert_eq!(length(&p, event).await, BUYERS as u64 + 1);
    p.queue.drop_event(event).await.expect("drop");
}

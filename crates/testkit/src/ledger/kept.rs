//! Cases: an order's move whose answer the replay store keeps in the same write
//! (`IdempotencyStore::apply_kept`), for a replay store kept in the ledger's database.
//! A store that keeps its records elsewhere answers `None` and must have written
//! nothing: its callers move and finish in turn.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderState};
use boxoffice_engine::OrderView;
use boxoffice_engine::ports::{
    Begin, CommitOutcome, IdempotencyStore, KeptMove, Ledger, LedgerError, RenderKept, ReplayKey,
    StoredResponse,
};

use super::fixtures::{T0, authorized, commit_of, event};
use crate::idempotency::claimant;

/// A ledger and the replay store beside it, of one database.
pub struct KeptPorts {
    pub ledger: Arc<dyn Ledger>,
    pub replays: Arc<dyn IdempotencyStore>,
}

/// An answer rendered from the order's view, so a case can tell it was rendered from
/// the order the move left.
fn render() -> Arc<RenderKept> {
    Arc::new(|view: &OrderView| {
        Some(StoredResponse {
            status: 201,
            body: format!("{}:{}", view.order_id, view.status.as_str()).into_bytes(),
        })
    })
}

fn key() -> ReplayKey {
    ReplayKey::new(format!("buyer:{}", BuyerId::random()), "checkout-1")
}

/// The captured move and its answer are written by the one call: the order is
/// confirmed, and the key (claimed by a request still running) is answered by the
/// answer rendered from the confirmed order, for any later request, with no `finish`.
pub async fn a_captured_move_keeps_its_answer_in_the_same_write(ports: KeptPorts) {
    let KeptPorts { ledger, replays } = ports;
    let e = event(&ledger, 3, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    let committed = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let (key, me, fp) = (key(), claimant(), [3; 32]);
    assert_eq!(
        replays.begin(&key, &fp, T0, &me).await.unwrap(),
        Begin::Proceed
    );
    let at = T0.plus_secs(3);
    let moved = replays
        .apply_kept(
            &key,
            me.lease_from(T0),
            o.id,
            OrderEvent::Captured,
            at,
            render(),
        )
        .await
        .unwrap();
    let Some(KeptMove { order, kept }) = moved else {
        // Left to the caller: nothing moved, and the claim still runs.
        let stored = ledger.order(o.id).await.unwrap().unwrap();
        assert_eq!(stored.state, OrderState::Committed);
        let again = replays.begin(&key, &fp, T0, &me).await.unwrap();
        assert_eq!(again, Begin::InFlight);
        return;
    };
    assert_eq!(
        (order.id, order.state, order.updated_at),
        (o.id, OrderState::Confirmed, at)
    );
    let answer = StoredResponse {
        status: 201,
        body: format!("{}:confirmed", o.id).into_bytes(),
    };
    assert_eq!(kept, Some(answer.clone()));
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(stored.state, OrderState::Confirmed);
    // A retry from another process, later: the answer kept by the move.
    let later = T0.plus_secs(3_600);
    let retried = replays.begin(&key, &fp, later, &claimant()).await.unwrap();
    assert_eq!(retried, Begin::Replay(answer));
}

/// The request's claim was taken over by a retry (its process counted dead) before its
/// capture was written: the move is the ledger's truth and is written, but the answer
/// is not kept under the key, which waits for the retry's own.
pub async fn a_kept_move_under_a_claim_taken_over_moves_and_keeps_no_answer(ports: KeptPorts) {
    let KeptPorts { ledger, replays } = ports;
    let e = event(&ledger, 3, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[1]).await;
    let committed = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let (key, first, retry, fp) = (key(), claimant(), claimant(), [6; 32]);
    replays
        .heartbeat(first.node, T0.plus_millis(-3_600_000))
        .await
        .unwrap();
    replays.heartbeat(retry.node, T0).await.unwrap();
    let begun = replays.begin(&key, &fp, T0, &first).await.unwrap();
    assert_eq!(begun, Begin::Proceed);
    let soon = T0.plus_millis(1);
    let taken = replays.begin(&key, &fp, soon, &retry).await.unwrap();
    assert_eq!(
        taken,
        Begin::Proceed,
        "the retry takes the dead holder's claim"
    );
    let at = T0.plus_secs(3);
    let lease = first.lease_from(T0);
    let moved = (replays.apply_kept(&key, lease, o.id, OrderEvent::Captured, at, render()))
        .await
        .unwrap();
    let Some(KeptMove { order, kept }) = moved else {
        // Left to the caller, which moves and finishes in turn: nothing was written.
        let stored = ledger.order(o.id).await.unwrap().unwrap();
        assert_eq!(stored.state, OrderState::Committed);
        return;
    };
    assert_eq!((order.id, order.state), (o.id, OrderState::Confirmed));
    assert_eq!(
        kept, None,
        "no answer is kept under a claim the request lost"
    );
    let again = replays.begin(&key, &fp, soon, &retry).await.unwrap();
    assert_eq!(
        again,
        Begin::InFlight,
        "the key waits for the retry's answer"
    );
}

/// A move the order's state refuses (it is not capturable: still authorized) writes
/// nothing and keeps nothing: the order stays as it was, the render is never asked, and
/// the key's claim still runs for its request to keep its own answer.
pub async fn a_kept_move_that_loses_keeps_nothing(ports: KeptPorts) {
    let KeptPorts { ledger, replays } = ports;
    let e = event(&ledger, 3, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[1]).await;
    let (key, me, fp) = (key(), claimant(), [4; 32]);
    assert_eq!(
        replays.begin(&key, &fp, T0, &me).await.unwrap(),
        Begin::Proceed
    );
    let never: Arc<RenderKept> = Arc::new(|_: &OrderView| panic!("rendered for a lost move"));
    let moved = replays
        .apply_kept(
            &key,
            me.lease_from(T0),
            o.id,
            OrderEvent::Captured,
            T0.plus_secs(3),
            never,
        )
        .await;
    match moved {
        Ok(None) => {}
        Err(LedgerError::Conflict(state)) => assert_eq!(state, OrderState::Authorized),
        other => panic!("a refused move answered {other:?}"),
    }
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(stored.state, OrderState::Authorized);
    let again = replays.begin(&key, &fp, T0, &me).await.unwrap();
    assert_eq!(again, Begin::InFlight, "the claim was finished");
    // Its request keeps its own answer, as it would have.
    let own = StoredResponse {
        status: 409,
        body: b"own".to_vec(),
    };
    replays.finish(&key, me.lease_from(T0), &own).await.unwrap();
    let later = T0.plus_secs(3_600);
    let retried = replays.begin(&key, &fp, later, &claimant()).await.unwrap();
    assert_eq!(retried, Begin::Replay(own));
}

/// Two requests under two keys race to capture one committed order, each keeping its
/// answer in the move's write: exactly one moves the order and keeps its answer; the
/// other's write changes nothing (told the state it found, or left to its caller) and
/// keeps nothing under its key, whose claim still runs for its request to answer.
pub async fn two_kept_moves_racing_on_one_order_move_it_once(ports: KeptPorts) {
    let KeptPorts { ledger, replays } = ports;
    let e = event(&ledger, 3, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[2]).await;
    let committed = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let fp = [5; 32];
    let (keys, mine) = ([key(), key()], [claimant(), claimant()]);
    for (k, me) in keys.iter().zip(&mine) {
        let begun = replays.begin(k, &fp, T0, me).await.unwrap();
        assert_eq!(begun, Begin::Proceed);
    }
    let at = T0.plus_secs(3);
    let racers = keys.iter().zip(&mine).map(|(k, me)| {
        let (replays, k, lease) = (replays.clone(), k.clone(), me.lease_from(T0));
        tokio::spawn(async move {
            replays
                .apply_kept(&k, lease, o.id, OrderEvent::Captured, at, render())
                .await
        })
    });
    let answers: Vec<_> = futures::future::join_all(racers)
        .await
        .into_iter()
        .map(|joined| joined.expect("the racer ran"))
        .collect();
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    let moved: Vec<usize> = (0..2)
        .filter(|&i| matches!(answers[i], Ok(Some(_))))
        .collect();
    if moved.is_empty() {
        // A store that leaves moves to its callers: neither wrote anything.
        assert!(answers.iter().all(|a| matches!(a, Ok(None))), "{answers:?}");
        assert_eq!(stored.state, OrderState::Committed);
        for (k, me) in keys.iter().zip(&mine) {
            let again = replays.begin(k, &fp, T0, me).await.unwrap();
            assert_eq!(again, Begin::InFlight);
        }
        return;
    }
    assert_eq!(moved.len(), 1, "one racer moved the order: {answers:?}");
    let (winner, loser) = (moved[0], 1 - moved[0]);
    match &answers[loser] {
        Ok(None) => {}
        Err(LedgerError::Conflict(state)) => assert_eq!(*state, OrderState::Confirmed),
        other => panic!("the losing racer answered {other:?}"),
    }
    assert_eq!(
        (stored.state, stored.updated_at),
        (OrderState::Confirmed, at)
    );
    let answer = StoredResponse {
        status: 201,
        body: format!("{}:confirmed", o.id).into_bytes(),
    };
    let later = T0.plus_secs(3_600);
    let retry = claimant();
    let won = replays.begin(&keys[winner], &fp, later, &retry).await;
    assert_eq!(won.unwrap(), Begin::Replay(answer));
    let lost = replays.begin(&keys[loser], &fp, T0, &mine[loser]);
    let lost = lost.await.unwrap();
    assert_eq!(lost, Begin::InFlight, "the loser's key kept nothing");
}

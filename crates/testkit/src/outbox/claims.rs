//! Cases: what becomes an event, per-order order per sink, leases, dead letters, sinks.

use boxoffice_domain::{Millis, OrderState};
use boxoffice_engine::ports::{ClaimDeliveries, Failure, NATS_SINK, Sink, SinkKind};

use super::{
    LEASE_MS, OutboxUnderTest, authorized_order, claim_of, confirmed_order, drain, webhook,
};
use crate::ledger::fixtures::T0;

const LATER: Millis = Millis(T0.0 + 3_600_000);

pub async fn every_order_move_becomes_an_event_with_its_sequence_and_document(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    let o = confirmed_order(&t.ledger).await;
    let got = drain(&t.outbox, LATER).await;
    let kinds: Vec<&str> = got.iter().map(|d| d.event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "order.created",
            "order.authorized",
            "order.committed",
            "order.captured"
        ]
    );
    for (i, d) in got.iter().enumerate() {
        let n = i as u32 + 1;
        assert_eq!(
            (d.sink.as_str(), d.event.order, d.event.sequence),
            ("we_a", o.id, n)
        );
        assert_eq!(d.event.id(), format!("{}.{n}", o.id));
        assert_eq!(d.event.sale_event, o.event);
        let doc: serde_json::Value = serde_json::from_str(&d.event.payload).unwrap();
        assert_eq!(doc["id"], d.event.id());
        assert_eq!(doc["type"], d.event.kind);
        assert_eq!(doc["sequence"], n);
        assert_eq!(doc["order_id"], o.id.to_string());
        assert_eq!(doc["order"]["event_id"], o.event.0);
        assert_eq!(doc["order"]["buyer_id"], o.buyer.to_string());
        assert_eq!(doc["order"]["total"], o.total.0);
        assert_eq!(doc["order"]["seats"][0]["seat_id"], o.seats[0].seat_id);
    }
    let last: serde_json::Value = serde_json::from_str(&got[3].event.payload).unwrap();
    assert_eq!(
        (&last["from_state"], &last["to_state"], &last["occurred_at"]),
        (
            &serde_json::json!("committed"),
            &serde_json::json!("confirmed"),
            &serde_json::json!(T0.plus_secs(3).0)
        )
    );
    let first: serde_json::Value = serde_json::from_str(&got[0].event.payload).unwrap();
    assert!(first["from_state"].is_null());
}

pub async fn the_history_lists_every_line_oldest_first(t: OutboxUnderTest) {
    let o = confirmed_order(&t.ledger).await;
    let lines = t.outbox.history(o.id).await.unwrap();
    let seen: Vec<(u32, &str, Option<OrderState>, OrderState, Millis)> = lines
        .iter()
        .map(|l| (l.sequence, l.event.as_str(), l.from_state, l.to_state, l.at))
        .collect();
    use OrderState as S;
    assert_eq!(
        seen,
        [
            (1, "created", None, S::PendingPayment, T0),
            (
                2,
                "authorized",
                Some(S::PendingPayment),
                S::Authorized,
                T0.plus_secs(1)
            ),
            (
                3,
                "committed",
                Some(S::Authorized),
                S::Committed,
                T0.plus_secs(2)
            ),
            (
                4,
                "captured",
                Some(S::Committed),
                S::Confirmed,
                T0.plus_secs(3)
            ),
        ]
    );
    let unknown = boxoffice_domain::OrderId::random();
    assert!(t.outbox.history(unknown).await.unwrap().is_empty());
}

pub async fn a_later_event_waits_until_the_earlier_one_reached_the_sink(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    let o = authorized_order(&t.ledger).await;
    let first = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    assert_eq!(
        first.len(),
        1,
        "only the oldest event of the order: {first:?}"
    );
    assert_eq!((first[0].event.sequence, first[0].attempts), (1, 1));
    let other = t.outbox.claim(&claim_of("r2", LATER, 10)).await.unwrap();
    assert!(
        other.is_empty(),
        "leased, and the next waits for it: {other:?}"
    );
    // A failed attempt waits out its backoff, and the next event still waits for it.
    let retry_at = Millis(LATER.0 + 5_000);
    let f = Failure {
        owner: "r1",
        retry_at,
        dead: false,
        error: "503 from the endpoint",
        now: LATER,
    };
    t.outbox
        .failed("we_a", first[0].event.row, &f)
        .await
        .unwrap();
    assert!(
        t.outbox
            .claim(&claim_of("r2", LATER, 10))
            .await
            .unwrap()
            .is_empty()
    );
    let again = t.outbox.claim(&claim_of("r2", retry_at, 10)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].event.sequence, again[0].attempts), (1, 2));
    t.outbox
        .delivered("we_a", again[0].event.row)
        .await
        .unwrap();
    let next = t.outbox.claim(&claim_of("r2", retry_at, 10)).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!((next[0].event.order, next[0].event.sequence), (o.id, 2));
}

pub async fn sinks_wait_for_each_other_never(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_down")).await.unwrap();
    t.outbox.add_sink(&webhook("we_up")).await.unwrap();
    authorized_order(&t.ledger).await;
    let first = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    assert_eq!(first.len(), 2, "one per sink: {first:?}");
    for d in &first {
        if d.sink == "we_up" {
            t.outbox.delivered(&d.sink, d.event.row).await.unwrap();
        }
    }
    let next = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    let seen: Vec<(&str, u32)> = next
        .iter()
        .map(|d| (d.sink.as_str(), d.event.sequence))
        .collect();
    assert_eq!(seen, [("we_up", 2)], "the healthy sink moves on alone");
}

pub async fn a_lapsed_lease_is_claimed_again_and_only_its_holder_can_fail_it(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    authorized_order(&t.ledger).await;
    let mine = t.outbox.claim(&claim_of("r1", LATER, 1)).await.unwrap();
    assert_eq!(mine.len(), 1);
    let before_lapse = Millis(LATER.0 + LEASE_MS - 1);
    assert!(
        t.outbox
            .claim(&claim_of("r2", before_lapse, 1))
            .await
            .unwrap()
            .is_empty()
    );
    let lapsed = Millis(LATER.0 + LEASE_MS);
    let theirs = t.outbox.claim(&claim_of("r2", lapsed, 1)).await.unwrap();
    assert_eq!(
        theirs.len(),
        1,
        "a relay that died gives its claim up by lapsing"
    );
    assert_eq!(
        (theirs[0].event.row, theirs[0].attempts),
        (mine[0].event.row, 2)
    );
    // The first relay comes back and fails: the claim is no longer its own.
    let late = Failure {
        owner: "r1",
        retry_at: lapsed,
        dead: true,
        error: "timeout",
        now: lapsed,
    };
    t.outbox
        .failed("we_a", mine[0].event.row, &late)
        .await
        .unwrap();
    assert!(t.outbox.dead_letters("we_a", 10).await.unwrap().is_empty());
    let at_lease_end = Millis(lapsed.0 + LEASE_MS - 1);
    assert!(
        t.outbox
            .claim(&claim_of("r3", at_lease_end, 1))
            .await
            .unwrap()
            .is_empty()
    );
}

/// A restarted single-process relay gives back what its dead incarnation held: claimed
/// again at once, not a lease later; its own claims and the attempts count are kept.
pub async fn released_claims_of_a_dead_incarnation_are_claimed_at_once(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    t.outbox.add_sink(&webhook("we_b")).await.unwrap();
    authorized_order(&t.ledger).await;
    let dead = t.outbox.claim(&claim_of("old", LATER, 1)).await.unwrap();
    let kept = t.outbox.claim(&claim_of("new", LATER, 1)).await.unwrap();
    assert_eq!((dead.len(), kept.len()), (1, 1));
    assert_ne!(dead[0].sink, kept[0].sink);
    assert_eq!(t.outbox.release_claims("new").await.unwrap(), 1);
    let now = Millis(LATER.0 + 1);
    let again = t.outbox.claim(&claim_of("new", now, 10)).await.unwrap();
    assert_eq!(
        again
            .iter()
            .map(|d| (d.sink.as_str(), d.attempts))
            .collect::<Vec<_>>(),
        vec![(dead[0].sink.as_str(), 2)],
        "only the dead incarnation's claim comes back; the live one's stays claimed"
    );
    assert_eq!(t.outbox.release_claims("new").await.unwrap(), 0);
}

pub async fn a_dead_letter_stops_blocking_its_order_and_can_be_replayed(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    let o = authorized_order(&t.ledger).await;
    let first = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    let dead = Failure {
        owner: "r1",
        retry_at: LATER,
        dead: true,
        error: "410 Gone",
        now: LATER,
    };
    t.outbox
        .failed("we_a", first[0].event.row, &dead)
        .await
        .unwrap();
    let letters = t.outbox.dead_letters("we_a", 10).await.unwrap();
    assert_eq!(letters.len(), 1);
    let l = &letters[0];
    assert_eq!(
        (
            l.event.order,
            l.event.sequence,
            l.attempts,
            l.last_error.as_str(),
            l.dead_at
        ),
        (o.id, 1, 1, "410 Gone", LATER)
    );
    let next = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].event.sequence, 2, "a dead letter holds nothing up");
    t.outbox.delivered("we_a", next[0].event.row).await.unwrap();
    assert_eq!(t.outbox.replay_dead("we_a", LATER).await.unwrap(), 1);
    assert_eq!(t.outbox.replay_dead("we_a", LATER).await.unwrap(), 0);
    assert!(t.outbox.dead_letters("we_a", 10).await.unwrap().is_empty());
    let replayed = t.outbox.claim(&claim_of("r1", LATER, 10)).await.unwrap();
    assert_eq!(replayed.len(), 1);
    assert_eq!((replayed[0].event.sequence, replayed[0].attempts), (1, 1));
}

pub async fn a_sink_gets_what_was_written_after_it_was_added_until_it_is_removed(
    t: OutboxUnderTest,
) {
    authorized_order(&t.ledger).await;
    assert!(
        drain(&t.outbox, LATER).await.is_empty(),
        "no sink, no delivery"
    );
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    t.outbox.add_sink(&webhook("we_a")).await.unwrap();
    let sinks = t.outbox.sinks().await.unwrap();
    assert_eq!(sinks, [webhook("we_a")], "added once");
    let o = authorized_order(&t.ledger).await;
    let got = drain(&t.outbox, LATER).await;
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|d| d.event.order == o.id));
    authorized_order(&t.ledger).await;
    assert!(t.outbox.remove_sink("we_a").await.unwrap());
    assert!(!t.outbox.remove_sink("we_a").await.unwrap());
    assert!(t.outbox.sinks().await.unwrap().is_empty());
    assert!(
        drain(&t.outbox, LATER).await.is_empty(),
        "its deliveries went with it"
    );
}

pub async fn only_relays_that_can_reach_nats_claim_its_deliveries(t: OutboxUnderTest) {
    let nats = Sink {
        id: NATS_SINK.into(),
        kind: SinkKind::Nats,
        created_at: T0,
    };
    t.outbox.add_sink(&nats).await.unwrap();
    authorized_order(&t.ledger).await;
    let without = ClaimDeliveries {
        nats: false,
        ..claim_of("r1", LATER, 10)
    };
    assert!(t.outbox.claim(&without).await.unwrap().is_empty());
    let with = t.outbox.claim(&claim_of("r2", LATER, 10)).await.unwrap();
    assert_eq!(with.len(), 1);
    assert_eq!(with[0].sink, NATS_SINK);
    assert_eq!(t.outbox.sinks().await.unwrap(), [nats]);
}

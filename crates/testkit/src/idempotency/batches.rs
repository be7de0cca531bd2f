//! Claims and answers made many at a time (`begin_many`, `finish_many`, and the
//! batches `BatchedReplays` gathers from concurrent calls): each answered as the call
//! alone would be, whatever else shares its batch.

use std::sync::Arc;

use boxoffice_engine::ports::{
    Answer, Begin, Claimant, IdempotencyStore, KeyClaim, ReplayKey, StoredResponse,
};

use super::{FP, NOW, claimant, created, scope};

/// One batch holding every kind of claim: new keys, a finished key asked again with its
/// own request and with another, a key still running, a key whose holder died, and a
/// key claimed twice in the batch, each time with the same request and with another.
pub async fn claims_in_one_batch_answer_as_claims_made_one_by_one(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    let key = |k: &str| ReplayKey::new(&s, k);
    let begin = |k: &'static str| {
        let (store, key) = (store.clone(), key(k));
        async move { store.begin(&key, &FP, NOW, &me).await.unwrap() }
    };
    assert_eq!(begin("done").await, Begin::Proceed);
    store
        .finish(&key("done"), me.lease_from(NOW), &created())
        .await
        .unwrap();
    assert_eq!(begin("running").await, Begin::Proceed);
    // Another process's claim: a dead holder, taken over by the batch's claim of it.
    let dead = store.begin(&key("dead"), &FP, NOW, &claimant()).await;
    assert_eq!(dead.unwrap(), Begin::Proceed);

    let claim = |k: &str, fingerprint| KeyClaim {
        key: key(k),
        fingerprint,
        now: NOW,
    };
    let batch = [
        claim("new-1", FP),
        claim("done", FP),
        claim("done", [8; 32]),
        claim("running", FP),
        claim("dead", FP),
        claim("new-1", FP),
        claim("new-2", [9; 32]),
        claim("new-2", [8; 32]),
    ];
    let begun: Vec<Begin> = store
        .begin_many(&batch, &me)
        .await
        .into_iter()
        .map(|b| b.expect("a claim of the batch failed"))
        .collect();
    assert_eq!(
        begun,
        [
            Begin::Proceed,
            Begin::Replay(created()),
            Begin::Mismatch,
            Begin::InFlight,
            Begin::Proceed,
            Begin::InFlight,
            Begin::Proceed,
            Begin::Mismatch,
        ]
    );
    // What the batch claimed is claimed: finished, it replays.
    store
        .finish(&key("new-1"), me.lease_from(NOW), &created())
        .await
        .unwrap();
    assert_eq!(begin("new-1").await, Begin::Replay(created()));
    assert_eq!(begin("dead").await, Begin::InFlight);
}

/// A batch of answers keeps each for its own key, as `finish` in turn would; a key with
/// nothing claimed, or claimed under another lease, keeps nothing and spoils nothing for
/// the others.
pub async fn answers_in_one_batch_are_each_kept_for_their_own_key(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    let key = |k: &str| ReplayKey::new(&s, k);
    let answer = |n: u16| StoredResponse {
        status: n,
        body: format!("answer {n}").into_bytes(),
    };
    for k in ["a", "b", "c"] {
        assert_eq!(
            store.begin(&key(k), &FP, NOW, &me).await.unwrap(),
            Begin::Proceed
        );
    }
    let other = claimant();
    let answered = |k: &str, by: &Claimant, n: u16| Answer {
        key: key(k),
        lease: by.lease_from(NOW),
        response: answer(n),
    };
    let batch = [
        answered("a", &me, 201),
        answered("never-claimed", &me, 500),
        answered("b", &me, 202),
        answered("c", &me, 409),
        answered("c", &me, 201),
        answered("b", &other, 500),
    ];
    let done = store.finish_many(&batch).await;
    assert_eq!(done.len(), batch.len());
    for i in [0, 2, 3] {
        assert!(done[i].is_ok(), "answer {i} was refused: {:?}", done[i]);
    }
    let later = NOW.plus_secs(60);
    let replayed = |k: &'static str| {
        let (store, key) = (store.clone(), key(k));
        async move { store.begin(&key, &FP, later, &claimant()).await.unwrap() }
    };
    assert_eq!(replayed("a").await, Begin::Replay(answer(201)));
    assert_eq!(replayed("b").await, Begin::Replay(answer(202)));
    // A key answered twice keeps the first: the second found the claim finished.
    assert_eq!(replayed("c").await, Begin::Replay(answer(409)));
    assert_eq!(replayed("never-claimed").await, Begin::Proceed);
}

/// Claims of one batch made at different times each take the lease of their own time,
/// so each request finishes under the lease it computes from its own claim: claimed
/// together (`begin_many`), or one by one at once, as a crowd's requests are (which a
/// store behind `BatchedReplays` gathers into batches).
pub async fn claims_made_together_at_different_times_finish_under_their_own_leases(
    store: Arc<dyn IdempotencyStore>,
) {
    const CLAIMS: i64 = 32;
    let (s, me) = (scope(), claimant());
    let at = |i: i64| NOW.plus_millis(i * 7);
    let together: Vec<KeyClaim> = (0..CLAIMS)
        .map(|i| KeyClaim {
            key: ReplayKey::new(&s, format!("together-{i}")),
            fingerprint: FP,
            now: at(i),
        })
        .collect();
    for begun in store.begin_many(&together, &me).await {
        assert_eq!(begun.expect("a claim of the batch failed"), Begin::Proceed);
    }
    let at_once = (0..CLAIMS).map(|i| {
        let (store, key) = (store.clone(), ReplayKey::new(&s, format!("at-once-{i}")));
        let when = at(i);
        tokio::spawn(async move { store.begin(&key, &FP, when, &me).await })
    });
    for begun in futures::future::join_all(at_once).await {
        let begun = begun.expect("a claim panicked").expect("a claim failed");
        assert_eq!(begun, Begin::Proceed);
    }
    let later = NOW.plus_secs(3_600);
    for name in ["together", "at-once"] {
        for i in 0..CLAIMS {
            let key = ReplayKey::new(&s, format!("{name}-{i}"));
            let kept = store.finish(&key, me.lease_from(at(i)), &created()).await;
            kept.unwrap_or_else(|e| panic!("{name}-{i} was not finished: {e}"));
            let again = store.begin(&key, &FP, later, &claimant()).await.unwrap();
            assert_eq!(again, Begin::Replay(created()), "{name}-{i}");
        }
    }
}

/// Concurrent claims, as a crowd sends them: under one key exactly one proceeds and
/// every other is in flight; under keys of their own every one proceeds.
pub async fn claims_racing_under_one_key_proceed_once(store: Arc<dyn IdempotencyStore>) {
    const RACERS: usize = 64;
    let (s, me) = (scope(), claimant());
    let race = |keys: Vec<ReplayKey>| {
        let racers = keys.into_iter().map(|key| {
            let store = store.clone();
            tokio::spawn(async move { store.begin(&key, &FP, NOW, &me).await })
        });
        futures::future::join_all(racers)
    };
    let one = ReplayKey::new(&s, "one");
    let mut proceeded = 0;
    for racer in race(vec![one; RACERS]).await {
        match racer.expect("a racer panicked").expect("a claim failed") {
            Begin::Proceed => proceeded += 1,
            Begin::InFlight => {}
            other => panic!("a racer under one key was answered {other:?}"),
        }
    }
    assert_eq!(proceeded, 1, "claims under one key that proceeded");
    let own = (0..RACERS).map(|i| ReplayKey::new(&s, format!("own-{i}")));
    for racer in race(own.collect()).await {
        let begun = racer.expect("a racer panicked").expect("a claim failed");
        assert_eq!(begun, Begin::Proceed);
    }
}

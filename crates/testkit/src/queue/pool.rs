//! Conformance cases for the pre-opening pool, finished shoppers and shared settings.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::{Place, QueueStore, RestoredLine};

use crate::arbiter::unique_event;

const WAITING: Place = Place {
    position: None,
    new: true,
};

pub async fn pool_members_wait_without_a_position_and_later_arrivals_append(
    q: Arc<dyn QueueStore>,
) {
    let (event, a, b, late) = (
        unique_event(),
        BuyerId::random(),
        BuyerId::random(),
        BuyerId::random(),
    );
    assert_eq!(q.join(event, a, false).await, Ok(WAITING));
    assert_eq!(q.join(event, b, false).await, Ok(WAITING));
    let again = q.join(event, a, false).await.expect("join again");
    assert_eq!((again.position, again.new), (None, false));
    let s = q.state(event).await.expect("state");
    assert_eq!((s.queue_length, s.pool_size, s.opened), (2, 2, false));
    let sealed: HashSet<_> = q
        .seal_pool(event)
        .await
        .expect("seal")
        .into_iter()
        .collect();
    assert_eq!(sealed, HashSet::from([a, b]));
    assert_eq!(
        q.join(event, late, false).await.map(|p| p.position),
        Ok(Some(3)),
        "after the seal a join appends behind the pool"
    );
    assert_eq!(
        q.place(event, a).await,
        Ok(Some(Place {
            position: None,
            new: false
        }))
    );
    assert_eq!(q.place(event, BuyerId::random()).await, Ok(None));
    q.drop_event(event).await.expect("drop");
}

pub async fn placing_the_pool_gives_it_the_first_positions_in_the_given_order(
    q: Arc<dyn QueueStore>,
) {
    let event = unique_event();
    let pool: Vec<BuyerId> = (0..25).map(|_| BuyerId::random()).collect();
    for &b in &pool {
        q.join(event, b, false).await.expect("join");
    }
    let mut ordered = q.seal_pool(event).await.expect("seal");
    assert_eq!(ordered.len(), pool.len());
    ordered.reverse();
    q.place_pool(event, &ordered).await.expect("place");
    q.place_pool(event, &ordered)
        .await
        .expect("placing again is harmless");
    for (i, &b) in ordered.iter().enumerate() {
        let place = q.place(event, b).await.expect("place").expect("in line");
        assert_eq!(place.position, Some(i as u64 + 1));
    }
    let s = q.state(event).await.expect("state");
    assert!(s.opened && s.placed);
    let published = q.pool_members(event, 0, 1_000).await.expect("pool");
    assert_eq!(published, pool, "the pool stays published in arrival order");
    let page = q.pool_members(event, 20, 10).await.expect("page");
    assert_eq!(page, pool[20..].to_vec());
    assert_eq!(
        q.seal_pool(event).await,
        Ok(vec![]),
        "nothing left to place"
    );
    q.drop_event(event).await.expect("drop");
}

pub async fn placing_a_pool_that_is_not_the_sealed_one_is_refused(q: Arc<dyn QueueStore>) {
    let (event, a, b) = (unique_event(), BuyerId::random(), BuyerId::random());
    q.join(event, a, false).await.expect("join");
    q.join(event, b, false).await.expect("join");
    assert!(
        q.place_pool(event, &[a, b]).await.is_err(),
        "not sealed yet"
    );
    q.seal_pool(event).await.expect("seal");
    assert!(
        q.place_pool(event, &[a]).await.is_err(),
        "a member is missing"
    );
    assert!(
        q.place_pool(event, &[a, BuyerId::random()]).await.is_err(),
        "a stranger is not a pool member"
    );
    assert!(!q.state(event).await.expect("state").placed);
    q.place_pool(event, &[b, a]).await.expect("the real pool");
    q.drop_event(event).await.expect("drop");
}

pub async fn joins_racing_the_opening_still_get_unique_dense_positions(q: Arc<dyn QueueStore>) {
    const N: usize = 2_000;
    let event = unique_event();
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let q = q.clone();
            tokio::spawn(async move {
                let b = BuyerId::random();
                q.join(event, b, i >= N / 2).await.map(|_| b)
            })
        })
        .collect();
    let mut everyone = Vec::new();
    for t in tasks {
        everyone.push(t.await.expect("task").expect("join"));
    }
    let pool = q.seal_pool(event).await.expect("seal");
    q.place_pool(event, &pool).await.expect("place");
    let mut positions = HashSet::new();
    for b in everyone {
        let p = q.place(event, b).await.expect("place").expect("in line");
        assert!(positions.insert(p.position.expect("placed")), "duplicate");
    }
    assert_eq!(positions, (1..=N as u64).collect::<HashSet<_>>());
    q.drop_event(event).await.expect("drop");
}

pub async fn a_finished_shopper_is_counted_once(q: Arc<dyn QueueStore>) {
    let (event, a) = (unique_event(), BuyerId::random());
    q.join(event, a, true).await.expect("join");
    assert_eq!(q.finish(event, a).await, Ok(true));
    assert_eq!(q.finish(event, a).await, Ok(false));
    assert_eq!(q.finish(event, BuyerId::random()).await, Ok(true));
    assert_eq!(q.state(event).await.map(|s| s.finished), Ok(2));
    q.drop_event(event).await.expect("drop");
}

pub async fn the_first_writer_of_a_setting_wins_when_asked(q: Arc<dyn QueueStore>) {
    let event = unique_event();
    assert_eq!(
        q.set_setting(event, "seed", "one", true).await,
        Ok("one".into())
    );
    assert_eq!(
        q.set_setting(event, "seed", "two", true).await,
        Ok("one".into())
    );
    assert_eq!(
        q.set_setting(event, "rate", "5", false).await,
        Ok("5".into())
    );
    assert_eq!(
        q.set_setting(event, "rate", "6", false).await,
        Ok("6".into())
    );
    let all = q.settings(event).await.expect("settings");
    assert_eq!(all.get("seed").map(String::as_str), Some("one"));
    assert_eq!(all.get("rate").map(String::as_str), Some("6"));
    q.drop_event(event).await.expect("drop");
    assert!(q.settings(event).await.expect("settings").is_empty());
}

pub async fn a_line_join_waits_until_the_line_is_opened(q: Arc<dyn QueueStore>) {
    let (event, a, b) = (unique_event(), BuyerId::random(), BuyerId::random());
    assert_eq!(
        q.join_line(event, a).await,
        Ok(None),
        "nobody opened the line"
    );
    assert_eq!(q.state(event).await.map(|s| s.queue_length), Ok(0));
    q.join(event, b, false).await.expect("a pool member");
    assert_eq!(
        q.join_line(event, a).await,
        Ok(None),
        "the pool is not sealed"
    );
    q.seal_pool(event).await.expect("seal");
    let place = q.join_line(event, a).await.expect("join");
    assert_eq!(place.map(|p| p.position), Some(Some(2)), "after the pool");
    assert_eq!(
        q.join_line(event, a).await,
        Ok(Some(Place {
            position: Some(2),
            new: false
        }))
    );
    q.drop_event(event).await.expect("drop");
}

pub async fn a_restored_line_has_its_places_pool_and_admissions_back(q: Arc<dyn QueueStore>) {
    let event = unique_event();
    let buyers: Vec<BuyerId> = (0..5).map(|_| BuyerId::random()).collect();
    // Something left behind by the lost line, replaced as a whole.
    q.join(event, BuyerId::random(), true).await.expect("join");
    q.set_setting(event, "seed", "kept", false)
        .await
        .expect("set");
    let line = RestoredLine {
        // Positions 1-2 the drawn pool, 3 a gap (never confirmed), 4-6 later joins.
        positions: vec![
            (buyers[1], 1),
            (buyers[0], 2),
            (buyers[2], 4),
            (buyers[3], 5),
            (buyers[4], 6),
        ],
        pool: vec![buyers[0], buyers[1]],
        batches: vec![(2, Millis(1_000)), (4, Millis(2_000))],
    };
    q.restore_line(event, &line).await.expect("restore");
    let state = q.state(event).await.expect("state");
    assert_eq!(
        (state.queue_length, state.serving_up_to, state.advanced_at),
        (6, 4, Millis(2_000))
    );
    assert_eq!(
        (state.pool_size, state.opened, state.placed),
        (2, true, true)
    );
    assert_eq!(state.finished, 0);
    for &(buyer, position) in &line.positions {
        let place = q.place(event, buyer).await.expect("place");
        assert_eq!(place.and_then(|p| p.position), Some(position));
    }
    assert_eq!(q.pool_members(event, 0, 10).await, Ok(line.pool.clone()));
    assert_eq!(q.admitted_at(event, 1).await, Ok(Some(Millis(1_000))));
    assert_eq!(q.admitted_at(event, 4).await, Ok(Some(Millis(2_000))));
    assert_eq!(q.admitted_at(event, 5).await, Ok(None));
    let settings = q.settings(event).await.expect("settings");
    assert_eq!(settings.get("seed").map(String::as_str), Some("kept"));
    // Joins go on after the restored line, and admission from where it was.
    let next = q.join_line(event, BuyerId::random()).await.expect("join");
    assert_eq!(next.and_then(|p| p.position), Some(7));
    let moved = q.advance(event, 10, Millis(3_000)).await.expect("advance");
    assert_eq!(moved.serving_up_to, 7);
    q.drop_event(event).await.expect("drop");
}

//! What only the Redis arbiter has to prove: a 50,000-seat rebuild, an event whose keys
//! were deleted behind its back reads as unloaded (so the engine rebuilds it, P5), and
//! two concurrent loads never leave a mixture of both, and of the nodes that find an event
//! missing at once only one is told to rebuild it.

mod common;

use std::sync::Arc;
use std::time::Instant;

use boxoffice_domain::{BuyerId, EventId, HoldId, Money};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, HoldRequest, LayoutSeat, LayoutSection, RebuildClaim, SeatArbiter,
    SeatChoice, SoldSeat,
};
use boxoffice_store_redis::{Prefix, RedisArbiter, RedisArbiterConfig};
use boxoffice_testkit::arbiter::{T0, TTL_MS, unique_event};
use common::{PREFIX, connect, delete_prefix, redis_url, tracked_arbiter};

async fn arbiter() -> Arc<dyn SeatArbiter> {
    let url = redis_url();
    let prefix = Prefix::new(PREFIX.as_str()).expect("prefix");
    let arb = RedisArbiter::new(connect(&url).await, prefix, RedisArbiterConfig::default());
    tracked_arbiter(arb, &url)
}

/// 10 sections × 50 rows × 100 seats; the front rows and row centres rank best.
fn stadium(event: EventId) -> ArbiterLayout {
    let mut seats = Vec::with_capacity(50_000);
    for section in 0..10u16 {
        for row in 0..50u16 {
            for n in 0..100u32 {
                let centre = n.abs_diff(50);
                seats.push(LayoutSeat {
                    section,
                    row,
                    rank: u32::from(row) * 100 + centre,
                    price: Money(5_000 + i64::from(section) * 100),
                });
            }
        }
    }
    ArbiterLayout {
        event,
        max_per_buyer: 8,
        seats,
        sections: vec![LayoutSection { seated: true }; 10],
    }
}

fn best(event: EventId, section: u16, quantity: u32) -> HoldRequest {
    HoldRequest {
        hold: HoldId::random(event),
        buyer: BuyerId::random(),
        choice: SeatChoice::BestAvailable {
            section,
            quantity,
            adjacent: true,
        },
        expires_at: T0.plus_millis(TTL_MS),
        key: None,
    }
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stadium_rebuilds_with_its_sold_seats_and_sells_the_best_pair_next() {
    let (arb, event) = (arbiter().await, unique_event());
    let buyer = BuyerId::random();
    // Every seventh seat is sold, among them the centre of section 0's front row (49).
    let sold: Vec<SoldSeat> = (0..50_000)
        .step_by(7)
        .map(|seat| SoldSeat { seat, buyer })
        .collect();
    let started = Instant::now();
    arb.load(&stadium(event), &sold).await.expect("load");
    eprintln!(
        "loaded 50,000 seats ({} sold) in {:?}",
        sold.len(),
        started.elapsed()
    );
    let c = arb.counts(event).await.expect("counts");
    assert_eq!((c.capacity, c.sold, c.held), (50_000, sold.len() as u32, 0));
    let want: Vec<u32> = sold.iter().map(|s| s.seat).collect();
    assert_eq!(arb.sold_seats(event).await, Ok(want));
    assert_eq!(arb.availability(event).await.map(|b| b.len()), Ok(6_250));
    let pair = arb.hold(&best(event, 0, 2), T0).await.expect("pair");
    // Row 0: 49 is sold, so 50+51 (ranks 0+1) is the best free pair side by side.
    assert_eq!(pair.seats, vec![50, 51]);
    arb.unload(event).await.expect("unload");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_keys_were_deleted_reads_as_unloaded_and_rebuilds() {
    let (arb, event) = (arbiter().await, unique_event());
    let layout = stadium(event);
    arb.load(&layout, &[]).await.expect("load");
    let held = arb.hold(&best(event, 3, 4), T0).await.expect("hold");
    // Someone deletes the event's keys one by one, as a fault or an operator would.
    let deleted = delete_prefix(&redis_url(), &format!("{}:{event}}}", *PREFIX)).expect("del");
    assert!(deleted > 0);
    assert_eq!(arb.is_loaded(event).await, Ok(false));
    assert_eq!(
        arb.hold(&best(event, 3, 1), T0).await,
        Err(ArbiterError::UnknownEvent)
    );
    assert_eq!(arb.get(held.hold).await, Ok(None));
    arb.load(&layout, &[]).await.expect("rebuild");
    assert_eq!(arb.is_loaded(event).await, Ok(true));
    let again = arb
        .hold(&best(event, 3, 4), T0)
        .await
        .expect("hold after rebuild");
    assert_eq!(
        again.seats, held.seats,
        "holds are lost by design; the seats came back"
    );
    arb.unload(event).await.expect("unload");
}

/// An event that kept its marker but lost one structural key reads as unloaded, and
/// its rebuild must load it: `load_lost` once decided "loaded" from the marker alone,
/// so the event could never be loaded again and every hold answered unknown_event.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_lost_one_of_its_keys_is_rebuilt_by_load_lost() {
    let (arb, event) = (arbiter().await, unique_event());
    let layout = stadium(event);
    let sold = vec![SoldSeat {
        seat: 49,
        buyer: BuyerId::random(),
    }];
    arb.load(&layout, &sold).await.expect("load");
    for key in ["sold", "free", "layout"] {
        arb.hold(&best(event, 3, 4), T0).await.expect("hold");
        // (The names that begin so: "free" takes "freez", the free seats' order, with it.)
        let name = format!("{}:{event}}}:{key}", *PREFIX);
        assert!(
            delete_prefix(&redis_url(), &name).expect("del") >= 1,
            "{key}"
        );
        assert_eq!(arb.is_loaded(event).await, Ok(false), "{key}");
        assert_eq!(arb.claim_rebuild(event).await, Ok(RebuildClaim::Mine));
        assert_eq!(arb.load_lost(&layout, &sold).await, Ok(true), "{key}");
        assert_eq!(arb.is_loaded(event).await, Ok(true), "{key}");
        assert_eq!(arb.sold_seats(event).await, Ok(vec![49]), "{key}");
        let pair = arb.hold(&best(event, 0, 2), T0).await;
        assert_eq!(pair.map(|h| h.seats), Ok(vec![50, 51]), "{key}");
    }
    arb.unload(event).await.expect("unload");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_loads_never_leave_a_mixture_of_both() {
    let (arb, event) = (arbiter().await, unique_event());
    let layout = stadium(event);
    let buyer = BuyerId::random();
    let a: Vec<SoldSeat> = (0..40_000)
        .step_by(2)
        .map(|seat| SoldSeat { seat, buyer })
        .collect();
    let b: Vec<SoldSeat> = (1..40_000)
        .step_by(2)
        .map(|seat| SoldSeat { seat, buyer })
        .collect();
    let (ra, rb) = tokio::join!(arb.load(&layout, &a), arb.load(&layout, &b));
    assert!(ra.is_ok() || rb.is_ok(), "one load must win: {ra:?} {rb:?}");
    if arb.is_loaded(event).await.expect("is_loaded") {
        let sold = arb.sold_seats(event).await.expect("sold");
        let of = |v: &[SoldSeat]| v.iter().map(|s| s.seat).collect::<Vec<_>>();
        assert!(
            sold == of(&a) || sold == of(&b),
            "a mixture of two loads is loaded"
        );
        let c = arb.counts(event).await.expect("counts");
        assert_eq!(c.free + c.sold, c.capacity);
    }
    arb.unload(event).await.expect("unload");
}

/// Ten nodes find the event missing at the same moment: one claims the rebuild, the
/// others are told to wait; once it is loaded every claim answers "loaded", so nobody
/// rebuilds it again (each rebuild would drop the holds granted since the last one).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_the_nodes_that_find_an_event_missing_one_rebuilds_it() {
    let (arb, event) = (arbiter().await, unique_event());
    let claims = futures::future::join_all((0..10).map(|_| arb.claim_rebuild(event))).await;
    let claims: Vec<RebuildClaim> = claims.into_iter().map(|c| c.expect("claim")).collect();
    let mine = claims.iter().filter(|c| **c == RebuildClaim::Mine).count();
    let busy = claims.iter().filter(|c| **c == RebuildClaim::Busy).count();
    assert_eq!((mine, busy), (1, 9), "{claims:?}");
    let layout = stadium(event);
    arb.load(&layout, &[]).await.expect("the claimant loads");
    let held = arb.hold(&best(event, 0, 2), T0).await.expect("hold");
    assert_eq!(arb.claim_rebuild(event).await, Ok(RebuildClaim::Loaded));
    assert!(
        arb.get(held.hold).await.expect("get").is_some(),
        "nothing was wiped"
    );
    // Lost again: the claim the load ended is free to take once more.
    arb.unload(event).await.expect("unload");
    assert_eq!(arb.claim_rebuild(event).await, Ok(RebuildClaim::Mine));
    assert_eq!(arb.claim_rebuild(event).await, Ok(RebuildClaim::Busy));
    arb.unload(event).await.expect("unload");
}

/// Fifty nodes ask for an event's expiry sweep at once: exactly one is granted it and
/// the others are told how long it is held; the holder renews it, another sweep of the
/// same event is leased apart, and once it lapses another node takes it.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_the_nodes_asking_for_an_events_sweep_one_is_granted_it() {
    let (arb, event) = (arbiter().await, unique_event());
    let nodes: Vec<String> = (0..50).map(|i| format!("node-{i}")).collect();
    let asks = nodes
        .iter()
        .map(|n| arb.sweep_lease(event, "expiry", n, 300));
    let answers: Vec<Option<u64>> = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(|a| a.expect("lease"))
        .collect();
    let granted: Vec<usize> = (0..50).filter(|&i| answers[i].is_none()).collect();
    assert_eq!(granted.len(), 1, "{answers:?}");
    assert!(answers.iter().flatten().all(|&ms| ms <= 300), "{answers:?}");
    let holder = &nodes[granted[0]];
    assert_eq!(
        arb.sweep_lease(event, "expiry", holder, 300).await,
        Ok(None)
    );
    assert_eq!(
        arb.sweep_lease(event, "drift", "other", 300).await,
        Ok(None)
    );
    let other = if granted[0] == 0 {
        &nodes[1]
    } else {
        &nodes[0]
    };
    assert!(matches!(
        arb.sweep_lease(event, "expiry", other, 300).await,
        Ok(Some(_))
    ));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(arb.sweep_lease(event, "expiry", other, 300).await, Ok(None));
    arb.unload(event).await.expect("unload");
}

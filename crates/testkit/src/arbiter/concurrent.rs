//! Cases: the race. K seats, N ≫ K buyers at the same instant on a multi-thread
//! runtime; exactly K (or K / quantity) win and no seat is held twice.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, SeatIndex};
use boxoffice_engine::ports::{ArbiterError, HoldView, SeatArbiter, SeatChoice};

use super::fixtures::*;

const BUYERS: usize = 2_000;
const SEATS: usize = 100;

/// Runs one task per buyer, all released at once, and returns every outcome.
async fn race(
    fx: &Fixture,
    choice: impl Fn(usize) -> SeatChoice,
) -> Vec<Result<HoldView, ArbiterError>> {
    let start = Arc::new(tokio::sync::Barrier::new(BUYERS));
    let tasks: Vec<_> = (0..BUYERS)
        .map(|i| {
            let (arb, start) = (fx.arb.clone(), start.clone());
            let req = fx.request(BuyerId::random(), choice(i));
            tokio::spawn(async move {
                start.wait().await;
                arb.hold(&req, T0).await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(BUYERS);
    for t in tasks {
        out.push(t.await.expect("a buyer task panicked"));
    }
    out
}

/// Exactly `winners` holds won, the losers lost for `lost`, no seat appears twice, and
/// the store agrees.
async fn check(
    fx: &Fixture,
    results: &[Result<HoldView, ArbiterError>],
    winners: usize,
    lost: fn(&ArbiterError) -> bool,
) {
    let won: Vec<&HoldView> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), winners, "exactly {winners} buyers must win");
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            lost(r),
            "a loser must be told the seats are gone, got {r:?}"
        );
    }
    let mut seen = HashSet::new();
    for seat in won.iter().flat_map(|h| &h.seats) {
        assert!(seen.insert(*seat), "seat {seat} is held twice");
    }
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!(
        (c.held as usize, c.active_holds as usize),
        (seen.len(), winners)
    );
}

pub async fn many_buyers_racing_for_named_seats_exactly_one_wins_each_seat(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::load(arb, &race_spec(), &[]).await;
    let results = race(&fx, |i| SeatChoice::Named(vec![(i % SEATS) as SeatIndex])).await;
    check(&fx, &results, SEATS, |e| {
        matches!(e, ArbiterError::SeatUnavailable(_))
    })
    .await;
    fx.done().await;
}

pub async fn many_buyers_racing_for_best_available_pairs_exactly_k_win(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::load(arb, &race_spec(), &[]).await;
    let results = race(&fx, |i| SeatChoice::BestAvailable {
        section: 0,
        quantity: 2,
        adjacent: i % 2 == 0,
    })
    .await;
    check(&fx, &results, SEATS / 2, |e| *e == ArbiterError::SoldOut).await;
    assert_eq!(
        fx.arb.counts(fx.event).await.map(|c| c.held),
        Ok(SEATS as u32)
    );
    fx.done().await;
}

pub async fn many_buyers_racing_for_general_admission_exactly_k_win(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::load(arb, &race_spec(), &[]).await;
    let results = race(&fx, |_| SeatChoice::BestAvailable {
        section: 1,
        quantity: 1,
        adjacent: false,
    })
    .await;
    check(&fx, &results, SEATS, |e| *e == ArbiterError::SoldOut).await;
    fx.done().await;
}

/// K held holds, each met at the same instant by its buyer's release and a checkout's
/// pin (two tabs): of each pair exactly one wins, and the seats end where the winner
/// left them (pinned and held, or back in stock), never freed under a pinned hold.
pub async fn a_release_racing_a_pin_lets_exactly_one_win_each_hold(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::load(arb, &race_spec(), &[]).await;
    let mut holds = Vec::new();
    for seat in 0..SEATS {
        let buyer = BuyerId::random();
        let h = fx.named(buyer, &[seat as SeatIndex]).await.expect("hold");
        holds.push((buyer, h.hold));
    }
    let start = Arc::new(tokio::sync::Barrier::new(2 * SEATS));
    let mut tasks = Vec::new();
    for &(buyer, hold) in &holds {
        let (arb, go) = (fx.arb.clone(), start.clone());
        let pin = tokio::spawn(async move {
            go.wait().await;
            arb.pin(hold, boxoffice_domain::OrderId::random(), DEADLINE, T0)
                .await
                .is_ok()
        });
        let (arb, go) = (fx.arb.clone(), start.clone());
        let release = tokio::spawn(async move {
            go.wait().await;
            matches!(arb.release_held(hold, buyer).await, Ok((_, true)))
        });
        tasks.push((pin, release));
    }
    let (mut pinned, mut released) = (0, 0);
    for (seat, (pin, release)) in tasks.into_iter().enumerate() {
        let (p, r) = (
            pin.await.expect("pin task"),
            release.await.expect("release task"),
        );
        assert!(p != r, "hold on seat {seat}: pin won {p}, release won {r}");
        pinned += usize::from(p);
        released += usize::from(r);
        let free = fx.free(&[seat as SeatIndex]).await;
        assert_eq!(free, vec![r], "seat {seat} follows the winner");
    }
    assert_eq!(pinned + released, SEATS);
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.held as usize, c.active_holds as usize), (pinned, pinned));
    fx.done().await;
}

/// Rebuilds of one lost event.
const LOADERS: usize = 24;

/// Rebuilds of a lost event racing each other, each followed by a hold of a seat of its
/// own: the event is loaded once (exactly one `load_lost` loads it; another answers
/// that it was loaded meanwhile, or, in a store whose load takes several steps, fails
/// because a later load took over), and no load wipes a hold taken after another load
/// finished. A hold may be refused while the event is not loaded yet (`UnknownEvent`),
/// never otherwise.
pub async fn rebuilds_of_a_lost_event_racing_load_it_once_and_keep_its_holds(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::load(arb, &race_spec(), &[]).await;
    fx.arb.unload(fx.event).await.expect("lost");
    let start = Arc::new(tokio::sync::Barrier::new(LOADERS));
    let tasks: Vec<_> = (0..LOADERS)
        .map(|i| {
            let (arb, start, layout) = (fx.arb.clone(), start.clone(), fx.layout.clone());
            let req = fx.request(BuyerId::random(), SeatChoice::Named(vec![i as SeatIndex]));
            tokio::spawn(async move {
                start.wait().await;
                let loaded = match arb.load_lost(&layout, &[]).await {
                    Ok(loaded) => loaded,
                    Err(e) if e.0.contains("took over") => false,
                    Err(e) => panic!("the load failed: {e:?}"),
                };
                (loaded, arb.hold(&req, T0).await)
            })
        })
        .collect();
    let mut loads = 0;
    let mut held = Vec::new();
    for t in tasks {
        let (loaded, hold) = t.await.expect("a rebuild task panicked");
        loads += usize::from(loaded);
        match hold {
            Ok(view) => held.push(view),
            Err(ArbiterError::UnknownEvent) => {}
            Err(other) => panic!("a hold after a rebuild was refused: {other:?}"),
        }
    }
    assert_eq!(loads, 1, "the lost event is loaded exactly once");
    assert!(!held.is_empty(), "the loader's own hold follows its load");
    // Rebuilds whose claims lapsed, beginning together after the load finished and holds
    // were taken: none loads, and the holds stay.
    let late: Vec<_> = (0..LOADERS / 2)
        .map(|_| {
            let (arb, layout) = (fx.arb.clone(), fx.layout.clone());
            tokio::spawn(async move { arb.load_lost(&layout, &[]).await })
        })
        .collect();
    for t in late {
        let loaded = t.await.expect("a late rebuild task panicked");
        assert_eq!(loaded, Ok(false), "a late rebuild leaves the loaded event");
    }
    for view in &held {
        let now = fx.arb.get(view.hold).await.expect("get");
        assert_eq!(
            now.map(|v| v.state),
            Some(boxoffice_domain::HoldState::Held),
            "hold {} survives every later load",
            view.hold
        );
    }
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!(c.held as usize, held.len(), "the store counts every hold");
    fx.done().await;
}

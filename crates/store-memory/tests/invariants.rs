//! Random sequences of holds, pins, sales, releases, sweeps and clock ticks against the
//! in-memory arbiter, checking after every step what must always hold: no seat in two
//! live holds, free + held + sold = capacity, the bitmap agrees with the holds, and no
//! buyer over the limit.

use std::collections::HashSet;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use boxoffice_domain::{BuyerId, EventId, HoldId, HoldState, Millis, OrderId};
use boxoffice_engine::ports::{HoldRequest, SeatArbiter, SeatChoice};
use boxoffice_store_memory::InMemoryArbiter;
use boxoffice_testkit::arbiter::{T0, layout_of, small_spec};
use proptest::prelude::*;

fn now<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory arbiter must not wait"),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Named {
        buyer: usize,
        seats: Vec<u32>,
    },
    Best {
        buyer: usize,
        section: u16,
        quantity: u32,
        adjacent: bool,
    },
    Pin(usize),
    Uncertain(usize),
    Sold(usize),
    Release(usize),
    Tick(i64),
    Sweep(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..5usize, proptest::collection::vec(0..21u32, 0..5)).prop_map(|(buyer, seats)| Op::Named { buyer, seats }),
        3 => (0..5usize, 0..3u16, 0..6u32, any::<bool>()).prop_map(|(buyer, section, quantity, adjacent)| Op::Best { buyer, section, quantity, adjacent }),
        1 => any::<usize>().prop_map(Op::Pin),
        1 => any::<usize>().prop_map(Op::Uncertain),
        1 => any::<usize>().prop_map(Op::Sold),
        1 => any::<usize>().prop_map(Op::Release),
        1 => (0..15_000i64).prop_map(Op::Tick),
        1 => (1..4usize).prop_map(Op::Sweep),
    ]
}

struct World {
    arb: InMemoryArbiter,
    event: EventId,
    buyers: Vec<BuyerId>,
    holds: Vec<HoldId>,
    at: Millis,
}

impl World {
    fn pick(&self, i: usize) -> Option<HoldId> {
        (!self.holds.is_empty()).then(|| self.holds[i % self.holds.len()])
    }

    fn step(&mut self, op: Op) {
        let choice = match op {
            Op::Named { buyer, seats } => Some((buyer, SeatChoice::Named(seats))),
            Op::Best {
                buyer,
                section,
                quantity,
                adjacent,
            } => Some((
                buyer,
                SeatChoice::BestAvailable {
                    section,
                    quantity,
                    adjacent,
                },
            )),
            Op::Tick(ms) => {
                self.at = self.at.plus_millis(ms);
                None
            }
            Op::Sweep(limit) => {
                let _ = now(self.arb.expire_due(self.event, self.at, limit));
                None
            }
            Op::Pin(i) | Op::Uncertain(i) | Op::Sold(i) | Op::Release(i) => {
                let Some(h) = self.pick(i) else { return };
                let _ = match op {
                    Op::Pin(_) => now(self.arb.pin(
                        h,
                        OrderId::random(),
                        self.at.plus_millis(30_000),
                        self.at,
                    )),
                    Op::Uncertain(_) => now(self.arb.mark_uncertain(h)),
                    Op::Sold(_) => now(self.arb.mark_sold(h)),
                    _ => now(self.arb.release(h)),
                };
                None
            }
        };
        if let Some((buyer, choice)) = choice {
            let req = HoldRequest {
                hold: HoldId::random(self.event),
                buyer: self.buyers[buyer],
                choice,
                expires_at: self.at.plus_millis(10_000),
                key: None,
            };
            if let Ok(v) = now(self.arb.hold(&req, self.at)) {
                self.holds.push(v.hold);
            }
        }
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let c = now(self.arb.counts(self.event)).expect("counts");
        prop_assert_eq!(c.free + c.held + c.sold, c.capacity);
        let bits = now(self.arb.availability(self.event)).expect("bitmap");
        prop_assert_eq!(bits.iter().map(|b| b.count_ones()).sum::<u32>(), c.free);
        let free = |s: u32| bits[s as usize / 8] & (0x80 >> (s % 8)) != 0;
        let (mut live_seats, mut live_holds, mut per_buyer) =
            (HashSet::new(), 0, vec![0u32; self.buyers.len()]);
        for h in &self.holds {
            let Some(v) = now(self.arb.get(*h)).expect("get") else {
                continue;
            };
            let b = self
                .buyers
                .iter()
                .position(|x| *x == v.buyer)
                .expect("a known buyer");
            if v.state.is_live() || v.state == HoldState::Sold {
                per_buyer[b] += v.seats.len() as u32;
            }
            if v.state.is_live() {
                live_holds += 1;
                for s in &v.seats {
                    prop_assert!(live_seats.insert(*s), "seat {} is in two live holds", s);
                    prop_assert!(!free(*s), "held seat {} shows free", s);
                }
            }
        }
        prop_assert_eq!(live_seats.len() as u32, c.held);
        prop_assert_eq!(live_holds, c.active_holds);
        prop_assert!(
            per_buyer.iter().all(|&n| n <= 4),
            "a buyer is over the limit: {:?}",
            per_buyer
        );
        let sold = now(self.arb.sold_seats(self.event)).expect("sold");
        prop_assert_eq!(sold.len() as u32, c.sold);
        prop_assert!(sold.iter().all(|s| !free(*s) && !live_seats.contains(s)));
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_sequence_of_requests_breaks_the_seat_invariants(ops in proptest::collection::vec(op(), 1..80)) {
        let event = EventId(1);
        let arb = InMemoryArbiter::new();
        now(arb.load(&layout_of(&small_spec(), event), &[])).expect("load");
        let mut w = World { arb, event, buyers: (0..5).map(|_| BuyerId::random()).collect(), holds: vec![], at: T0 };
        for op in ops {
            w.step(op);
            w.check()?;
        }
    }
}

//! The random inputs of the model test: an event's seats sold at load, then a sequence
//! of operations. Holds, buyers and orders are named by small indices that the runner
//! maps to ids, so that retries, clashes and unknown ids all come up often.

use proptest::collection::vec;
use proptest::prelude::*;

/// Buyers in play; few, so that the per-buyer limit (4) is reached.
pub const BUYERS: usize = 4;
/// Orders in play; few, so that a pin or retake repeats an order now and then.
pub const ORDERS: usize = 4;
/// Seats of the test event (`arbiter::small_spec`): 0..10 seated, 10..20 general
/// admission. Indices up to `SEATS` are generated, so that one is always unknown.
pub const SEATS: u32 = 20;

/// Which hold an operation acts on: 0 is an id never used before, any other value
/// one of the holds that exist (see the runner).
pub type HoldPick = usize;

#[derive(Clone, Debug)]
pub enum Op {
    Hold {
        /// A hold id used before (a retry, or another buyer's id) or a new one.
        reuse: Option<HoldPick>,
        buyer: usize,
        choice: Choice,
        ttl_ms: i64,
    },
    Pin {
        hold: HoldPick,
        order: usize,
        grace_ms: i64,
    },
    Uncertain(HoldPick),
    Sold(HoldPick),
    Release(HoldPick),
    /// A late payment takes seats again under an ended (or unknown) hold's id.
    Retake {
        hold: HoldPick,
        order: usize,
        /// Another buyer than the hold's, by index; `None` = the hold's own.
        buyer: Option<usize>,
        /// Other seats than the hold's; `None` = the hold's own.
        seats: Option<Vec<u32>>,
        grace_ms: i64,
        /// An order, by index, whose live hold gives way (`Retake::replacing`).
        replacing: Option<usize>,
    },
    /// A sold seat (the `seat`-th sold, by index; any seat while none is sold) given
    /// by its owner to a buyer, by index.
    Give {
        seat: usize,
        to: usize,
    },
    /// The clock moves on.
    Tick(i64),
    /// The expiry sweep, reporting at most this many holds.
    Sweep(usize),
}

#[derive(Clone, Debug)]
pub enum Choice {
    Named(Vec<u32>),
    Best {
        section: u16,
        quantity: u32,
        adjacent: bool,
    },
}

/// Durations on a coarse grid, so deadlines tie and land exactly on "now".
fn span() -> impl Strategy<Value = i64> {
    (0..4i64).prop_map(|n| n * 5_000)
}

/// Mostly 1 to 4 seats (the limit), sometimes none or too many.
fn seats() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![8 => vec(0..=SEATS, 1..5), 1 => vec(0..=SEATS, 0..7)]
}

fn hold_pick() -> impl Strategy<Value = HoldPick> {
    prop_oneof![1 => Just(0), 8 => 1..16usize]
}

fn choice() -> impl Strategy<Value = Choice> {
    let sections = prop_oneof![8 => 0..2u16, 1 => 2..4u16];
    let quantity = prop_oneof![8 => 1..5u32, 1 => 0..7u32];
    prop_oneof![
        seats().prop_map(Choice::Named),
        (sections, quantity, any::<bool>()).prop_map(|(section, quantity, adjacent)| {
            Choice::Best {
                section,
                quantity,
                adjacent,
            }
        }),
    ]
}

fn hold() -> impl Strategy<Value = Op> {
    let reuse = prop_oneof![4 => Just(None), 1 => (0..16usize).prop_map(Some)];
    (reuse, 0..BUYERS, choice(), span()).prop_map(|(reuse, buyer, choice, ttl_ms)| Op::Hold {
        reuse,
        buyer,
        choice,
        ttl_ms,
    })
}

fn retake() -> impl Strategy<Value = Op> {
    let buyer = prop_oneof![3 => Just(None), 1 => (0..BUYERS).prop_map(Some)];
    let other = prop_oneof![3 => Just(None), 1 => seats().prop_map(Some)];
    let replacing = prop_oneof![1 => Just(None), 1 => (0..ORDERS).prop_map(Some)];
    (hold_pick(), 0..ORDERS, buyer, other, span(), replacing).prop_map(
        |(hold, order, buyer, seats, grace_ms, replacing)| Op::Retake {
            hold,
            order,
            buyer,
            seats,
            grace_ms,
            replacing,
        },
    )
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => hold(),
        3 => (hold_pick(), 0..ORDERS, span()).prop_map(|(hold, order, grace_ms)| Op::Pin { hold, order, grace_ms }),
        1 => hold_pick().prop_map(Op::Uncertain),
        2 => hold_pick().prop_map(Op::Sold),
        1 => hold_pick().prop_map(Op::Release),
        1 => retake(),
        1 => (0..32usize, 0..BUYERS).prop_map(|(seat, to)| Op::Give { seat, to }),
        2 => (1..4i64).prop_map(|n| Op::Tick(n * 2_500)),
        2 => (0..4usize).prop_map(Op::Sweep),
    ]
}

/// A case: seats already sold at load, as (seat, buyer index), and the operations.
#[derive(Clone, Debug)]
pub struct Case {
    pub sold: Vec<(u32, usize)>,
    pub ops: Vec<Op>,
}

pub fn case(max_ops: usize) -> impl Strategy<Value = Case> {
    let sold = vec((0..SEATS, 0..BUYERS), 0..4);
    (sold, vec(op(), 1..max_ops)).prop_map(|(sold, ops)| Case { sold, ops })
}

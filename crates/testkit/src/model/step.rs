//! One case of the model test: the same operations on the adapter and on the model,
//! compared after every step.

use std::fmt::Debug;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, HoldId, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{HoldRequest, Retake, SeatArbiter, SeatChoice, SoldSeat};
use proptest::test_runner::TestCaseError;

use super::ops::{BUYERS, Case, Choice, ORDERS, Op};
use super::reference::Model;
use crate::arbiter::{T0, layout_of, small_spec, unique_event};

struct World {
    arb: Arc<dyn SeatArbiter>,
    model: Model,
    event: EventId,
    buyers: Vec<BuyerId>,
    orders: Vec<OrderId>,
    /// Every hold id used so far, known to the arbiter or not.
    holds: Vec<HoldId>,
    now: Millis,
}

/// Loads a fresh event on `arb` and in a model, runs `case` on both, and unloads.
pub async fn run_case(arb: Arc<dyn SeatArbiter>, case: Case) -> Result<(), TestCaseError> {
    let event = unique_event();
    let layout = layout_of(&small_spec(), event);
    let buyers: Vec<BuyerId> = (0..BUYERS).map(|_| BuyerId::random()).collect();
    let sold: Vec<SoldSeat> = (case.sold.iter())
        .map(|&(seat, b)| SoldSeat {
            seat,
            buyer: buyers[b],
        })
        .collect();
    arb.load(&layout, &sold).await.map_err(fail("load"))?;
    let mut w = World {
        model: Model::load(&layout, &sold),
        arb,
        event,
        buyers,
        orders: (0..ORDERS).map(|_| OrderId::random()).collect(),
        holds: Vec::new(),
        now: T0,
    };
    for (i, op) in case.ops.iter().enumerate() {
        let at = format!("step {i}, {op:?}, at {}", w.now.0 - T0.0);
        w.step(op, &at).await?;
        w.same_state(&at).await?;
    }
    w.arb.unload(event).await.map_err(fail("unload"))?;
    Ok(())
}

fn fail<E: Debug>(what: &'static str) -> impl Fn(E) -> TestCaseError {
    move |e| TestCaseError::fail(format!("{what} failed: {e:?}"))
}

fn same<T: PartialEq + Debug>(got: T, want: T, at: &str, what: &str) -> Result<(), TestCaseError> {
    if got == want {
        return Ok(());
    }
    Err(TestCaseError::fail(format!(
        "{at}: {what} differs\n  arbiter: {got:?}\n  model:   {want:?}"
    )))
}

impl World {
    /// The hold an index names: 0 is an id never used before; any other value one of
    /// the holds the model knows, if there are any.
    fn pick(&mut self, n: usize) -> HoldId {
        let known: Vec<HoldId> = (self.holds.iter().copied())
            .filter(|&h| self.model.get(h).is_some())
            .collect();
        match n {
            0 => self.fresh(),
            _ if known.is_empty() => self.fresh(),
            n => known[(n - 1) % known.len()],
        }
    }

    fn fresh(&mut self) -> HoldId {
        let id = HoldId::random(self.event);
        self.holds.push(id);
        id
    }

    async fn step(&mut self, op: &Op, at: &str) -> Result<(), TestCaseError> {
        let now = self.now;
        let (arb, m) = (self.arb.clone(), &mut self.model);
        match op {
            Op::Hold { .. } => return self.hold(op, at).await,
            Op::Retake { .. } => return self.retake(op, at).await,
            Op::Pin {
                hold,
                order,
                grace_ms,
            } => {
                let (id, order) = (self.pick(*hold), self.orders[*order]);
                let until = now.plus_millis(*grace_ms);
                let want = self.model.pin(id, order, until, now);
                same(arb.pin(id, order, until, now).await, want, at, "pin")
            }
            Op::Uncertain(h) => {
                let id = self.pick(*h);
                let want = self.model.mark_uncertain(id);
                same(arb.mark_uncertain(id).await, want, at, "mark_uncertain")
            }
            Op::Sold(h) => {
                let id = self.pick(*h);
                same(
                    arb.mark_sold(id).await,
                    self.model.mark_sold(id),
                    at,
                    "mark_sold",
                )
            }
            Op::Release(h) => {
                let id = self.pick(*h);
                same(arb.release(id).await, self.model.release(id), at, "release")
            }
            Op::Give { seat, to } => {
                let sold = self.model.sold_seats();
                let (seat, from) = match sold.get(seat % sold.len().max(1)) {
                    Some(&s) => (s, self.model.owner(s).expect("a sold seat's owner")),
                    None => (*seat as SeatIndex, self.buyers[0]),
                };
                let to = self.buyers[*to];
                let want = self.model.give_sold_seat(seat, from, to);
                let got = arb.give_sold_seat(self.event, seat, from, to).await;
                same(got, want, at, "give_sold_seat")
            }
            Op::Tick(ms) => {
                self.now = now.plus_millis(*ms);
                Ok(())
            }
            Op::Sweep(limit) => {
                let got = arb.expire_due(self.event, now, *limit).await;
                let want = m.expire_due(now, *limit);
                same(got.map_err(fail("expire_due"))?, want, at, "expire_due")
            }
        }
    }

    async fn hold(&mut self, op: &Op, at: &str) -> Result<(), TestCaseError> {
        let Op::Hold {
            reuse,
            buyer,
            choice,
            ttl_ms,
        } = op
        else {
            unreachable!("called for holds only")
        };
        let hold = match reuse {
            Some(n) if !self.holds.is_empty() => self.holds[n % self.holds.len()],
            _ => self.fresh(),
        };
        let choice = match choice.clone() {
            Choice::Named(seats) => SeatChoice::Named(seats),
            Choice::Best {
                section,
                quantity,
                adjacent,
            } => SeatChoice::BestAvailable {
                section,
                quantity,
                adjacent,
            },
        };
        let req = HoldRequest {
            hold,
            buyer: self.buyers[*buyer],
            choice,
            expires_at: self.now.plus_millis(*ttl_ms),
            key: None,
        };
        let want = self.model.hold(&req, self.now);
        same(self.arb.hold(&req, self.now).await, want, at, "hold")
    }

    async fn retake(&mut self, op: &Op, at: &str) -> Result<(), TestCaseError> {
        let Op::Retake {
            hold,
            order,
            buyer,
            seats,
            grace_ms,
            replacing,
        } = op
        else {
            unreachable!("called for retakes only")
        };
        let id = self.pick(*hold);
        let known = self.model.get(id);
        let req = Retake {
            hold: id,
            buyer: match (buyer, &known) {
                (None, Some(h)) => h.buyer,
                (Some(_), _) | (None, None) => self.buyers[buyer.unwrap_or(0)],
            },
            order: self.orders[*order],
            seats: (seats.clone())
                .or_else(|| known.map(|h| h.seats))
                .unwrap_or_default(),
            pinned_until: self.now.plus_millis(*grace_ms),
            replacing: replacing.map(|i| self.orders[i]),
        };
        let want = self.model.retake(&req, self.now);
        same(self.arb.retake(&req, self.now).await, want, at, "retake")
    }

    /// The bitmap, the counts, the sold seats and every hold seen so far.
    async fn same_state(&self, at: &str) -> Result<(), TestCaseError> {
        let (arb, m) = (&self.arb, &self.model);
        let bits = arb
            .availability(self.event)
            .await
            .map_err(fail("availability"))?;
        same(bits, m.availability(), at, "the availability bitmap")?;
        let counts = arb.counts(self.event).await.map_err(fail("counts"))?;
        same(counts, m.counts(), at, "the counts")?;
        let mut sold = arb
            .sold_seats(self.event)
            .await
            .map_err(fail("sold_seats"))?;
        sold.sort_unstable();
        same(sold, m.sold_seats(), at, "the sold seats")?;
        for &h in &self.holds {
            let got = arb.get(h).await.map_err(fail("get"))?;
            same(got, m.get(h), at, &format!("hold {h}"))?;
        }
        Ok(())
    }
}

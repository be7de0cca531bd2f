//! Moves of an existing hold: pin, uncertain, sold, release, expire. Each follows
//! `HoldState::apply`, as the Redis scripts do through their generated table (pinned
//! together by the arbiter cases `moves_out_of_order_are_refused` and
//! `retried_moves_answer_with_the_hold_as_it_is`); repeating a move that already
//! happened answers with the hold as it is (a retried request must not fail or act
//! twice, docs/ARCHITECTURE.md P4).

use boxoffice_domain::hold::HoldMove;
use boxoffice_domain::{BuyerId, HoldId, HoldState, Millis, OrderId};
use boxoffice_engine::ports::{ArbiterError, Expired, HoldView};

use super::event::EventState;

impl EventState {
    /// Held → checking_out with the deadline moved to `pinned_until`.
    pub fn pin(
        &mut self,
        id: HoldId,
        order: OrderId,
        pinned_until: Millis,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        let rec = self.holds.get(&id).ok_or(ArbiterError::UnknownHold)?;
        if rec.state.is_live() && rec.expires_at <= now {
            // Its deadline has passed: expire it now rather than let it be paid for.
            let at = rec.expires_at;
            if let Some(expired) = self.expire(id, at) {
                self.report_later(expired);
            }
            return Err(ArbiterError::Expired);
        }
        match rec.state {
            HoldState::Expired => return Err(ArbiterError::Expired),
            HoldState::CheckingOut | HoldState::PaymentPending if rec.order == Some(order) => {
                return Ok(self.view(id, rec));
            }
            _ => {}
        }
        let (old_deadline, next) = (rec.expires_at, apply(rec.state, HoldMove::Checkout)?);
        self.deadlines.remove(old_deadline, id);
        self.deadlines.insert(pinned_until, id);
        let rec = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        (rec.state, rec.expires_at, rec.order) = (next, pinned_until, Some(order));
        self.view_of(id)
    }

    /// checking_out → payment_pending; the pin stays.
    pub fn mark_uncertain(&mut self, id: HoldId) -> Result<HoldView, ArbiterError> {
        let rec = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        match rec.state {
            HoldState::PaymentPending => {}
            HoldState::Expired => return Err(ArbiterError::Expired),
            s => rec.state = apply(s, HoldMove::PaymentUncertain)?,
        }
        self.view_of(id)
    }

    /// checking_out | payment_pending → sold: the seats leave stock for good.
    pub fn mark_sold(&mut self, id: HoldId) -> Result<HoldView, ArbiterError> {
        let rec = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        match rec.state {
            HoldState::Sold => return self.view_of(id),
            HoldState::Expired => return Err(ArbiterError::Expired),
            s => rec.state = apply(s, HoldMove::Commit)?,
        }
        rec.seats.iter().for_each(|&s| self.inv.sell(s));
        self.deadlines.remove(rec.expires_at, id);
        self.active_holds -= 1;
        self.finished(id);
        self.view_of(id)
    }

    /// A live hold's seats back to stock. Released or expired already: as it is.
    pub fn release(&mut self, id: HoldId) -> Result<HoldView, ArbiterError> {
        let rec = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        match rec.state {
            HoldState::Released | HoldState::Expired => return self.view_of(id),
            s => rec.state = apply(s, HoldMove::Release)?,
        }
        self.return_seats(id);
        self.view_of(id)
    }

    /// `SeatArbiter::release_held`: the buyer's own hold, released only while held.
    pub fn release_held(
        &mut self,
        id: HoldId,
        buyer: BuyerId,
    ) -> Result<(HoldView, bool), ArbiterError> {
        let rec = self.holds.get(&id).ok_or(ArbiterError::UnknownHold)?;
        if rec.buyer != buyer {
            return Err(ArbiterError::UnknownHold);
        }
        match rec.state {
            HoldState::Held => self.release(id).map(|v| (v, true)),
            HoldState::Released | HoldState::Expired => self.view_of(id).map(|v| (v, false)),
            other => Err(ArbiterError::WrongState(other)),
        }
    }

    /// Expires due holds (deadline ≤ `now`), up to `limit` reports, after first handing
    /// over those `hold`/`pin` already expired.
    pub fn expire_due(&mut self, now: Millis, limit: usize) -> Vec<Expired> {
        let take = self.unreported.len().min(limit);
        let mut out: Vec<Expired> = self.unreported.drain(..take).collect();
        while out.len() < limit {
            match self.deadlines.first() {
                Some((at, id)) if at <= now => out.extend(self.expire(id, at)),
                _ => break,
            }
        }
        out
    }

    /// Expires every due hold, keeping the reports for the worker's next `expire_due`.
    pub fn expire_due_unreported(&mut self, now: Millis) {
        while let Some((at, id)) = self.deadlines.first() {
            if at > now {
                break;
            }
            if let Some(expired) = self.expire(id, at) {
                self.report_later(expired);
            }
        }
    }

    fn report_later(&mut self, expired: Expired) {
        // Bounded like the finished holds: a worker that never runs must not cost memory.
        if self.unreported.len() >= self.keep_finished {
            self.unreported.pop_front();
        }
        self.unreported.push_back(expired);
    }

    /// A live hold whose deadline is `at` → expired, its seats back in stock.
    fn expire(&mut self, id: HoldId, at: Millis) -> Option<Expired> {
        let expiring = self.holds.get_mut(&id).and_then(|r| {
            let to = r.state.apply(HoldMove::Expire).ok()?;
            Some((r, to))
        });
        let Some((rec, expired)) = expiring else {
            // Unreachable while `deadlines` lists only live holds; drop a stray entry so
            // the sweep cannot spin on it.
            self.deadlines.remove(at, id);
            return None;
        };
        rec.state = expired;
        let report = Expired {
            hold: id,
            buyer: rec.buyer,
            seats: rec.seats.to_vec(),
            order: rec.order,
        };
        self.return_seats(id);
        Some(report)
    }

    /// Seats of `id` (already moved to released/expired) back in stock; counts follow.
    fn return_seats(&mut self, id: HoldId) {
        let Some(rec) = self.holds.get(&id) else {
            return;
        };
        rec.seats.iter().for_each(|&s| self.inv.put_back(s));
        self.deadlines.remove(rec.expires_at, id);
        let n = rec.seats.len() as u32;
        if let Some(t) = self.taken.get_mut(&rec.buyer) {
            *t = t.saturating_sub(n);
            if *t == 0 {
                self.taken.remove(&rec.buyer);
            }
        }
        self.active_holds -= 1;
        self.finished(id);
    }

    /// Remembers a finished hold, forgetting the oldest beyond `keep_finished`.
    fn finished(&mut self, id: HoldId) {
        self.finished.push_back(id);
        while self.finished.len() > self.keep_finished {
            if let Some(old) = self.finished.pop_front() {
                self.holds.remove(&old);
            }
        }
    }

    /// The hold after a move; `keep_finished` ≥ 1 keeps a just-finished hold present.
    pub(super) fn view_of(&self, id: HoldId) -> Result<HoldView, ArbiterError> {
        self.get(id).ok_or(ArbiterError::UnknownHold)
    }
}

fn apply(from: HoldState, by: HoldMove) -> Result<HoldState, ArbiterError> {
    from.apply(by).map_err(|e| ArbiterError::WrongState(e.from))
}

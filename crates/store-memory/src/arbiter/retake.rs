//! Retaking an ended hold's exact seats for a late payment the event honours. One step
//! under the event's lock, like `hold`: the seats are checked free and taken together.

use boxoffice_domain::{HoldState, Millis};
use boxoffice_engine::ports::{ArbiterError, HoldView, Retake};

use super::event::{EventState, HoldRec};

impl EventState {
    pub fn retake(&mut self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError> {
        self.expire_due_unreported(now);
        if let Some(rec) = self.holds.get(&req.hold) {
            match rec.state {
                HoldState::Released | HoldState::Expired => {}
                HoldState::CheckingOut | HoldState::PaymentPending | HoldState::Sold
                    if rec.order == Some(req.order) =>
                {
                    return Ok(self.view(req.hold, rec));
                }
                s => return Err(ArbiterError::WrongState(s)),
            }
        }
        let quantity = self.check_named(&req.seats)?;
        let owned = self.taken.get(&req.buyer).copied().unwrap_or(0);
        if owned + quantity > self.max_per_buyer {
            return Err(ArbiterError::LimitExceeded {
                limit: self.max_per_buyer,
            });
        }
        if let Some(&s) = req.seats.iter().find(|&&s| !self.inv.is_free(s)) {
            return Err(ArbiterError::SeatUnavailable(s));
        }
        req.seats.iter().for_each(|&s| self.inv.take(s));
        *self.taken.entry(req.buyer).or_default() += quantity;
        self.active_holds += 1;
        self.deadlines.insert((req.pinned_until, req.hold));
        // Live again: the trimming of finished holds must not forget it. Rare enough
        // (a late payment) for a linear scan.
        self.finished.retain(|&id| id != req.hold);
        let rec = HoldRec {
            buyer: req.buyer,
            seats: req.seats.as_slice().into(),
            state: HoldState::CheckingOut,
            expires_at: req.pinned_until,
            order: Some(req.order),
        };
        let view = self.view(req.hold, &rec);
        self.holds.insert(req.hold, rec);
        Ok(view)
    }
}

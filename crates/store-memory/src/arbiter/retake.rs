//! Retaking an ended hold's exact seats for a late payment the event honours, or pinning
//! a live one for the order the ledger has. One step under the event's lock, like `hold`:
//! the seats are checked free and taken together.

use boxoffice_domain::hold::HoldMove;
use boxoffice_domain::{HoldState, Millis};
use boxoffice_engine::ports::{ArbiterError, HoldView, Retake};

use super::event::{EventState, HoldRec};

impl EventState {
    pub fn retake(&mut self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError> {
        self.expire_due_unreported(now);
        if let Some(rec) = self.holds.get(&req.hold) {
            let for_this_order = rec.order == Some(req.order) && rec.state != HoldState::Held;
            let for_the_refused = req.replacing.is_some() && rec.order == req.replacing;
            if let (false, true, Ok(to)) = (
                for_this_order,
                for_the_refused,
                rec.state.apply(HoldMove::Repin),
            ) {
                // Pinned for the order the ledger has, in place: its seats stay taken.
                let old_deadline = rec.expires_at;
                self.deadlines.remove(old_deadline, req.hold);
                self.deadlines.insert(req.pinned_until, req.hold);
                let rec = self
                    .holds
                    .get_mut(&req.hold)
                    .ok_or(ArbiterError::UnknownHold)?;
                (rec.state, rec.expires_at, rec.order) = (to, req.pinned_until, Some(req.order));
                return self.view_of(req.hold);
            }
            if let Err(e) = rec.state.apply(HoldMove::Retake) {
                // Still live or sold for this order: a retry answers with the hold as it is.
                return match for_this_order {
                    true => Ok(self.view(req.hold, rec)),
                    false => Err(ArbiterError::WrongState(e.from)),
                };
            }
        }
        let quantity = self.check_named(&req.seats)?;
        self.within_limit(req.buyer, quantity)?;
        self.all_free(&req.seats)?;
        // Live again: the trimming of finished holds must not forget it. Rare enough
        // (a late payment) for a linear scan.
        self.finished.retain(|&id| id != req.hold);
        // A hold still remembered keeps the key it was taken with.
        let key = self.holds.get(&req.hold).and_then(|r| r.key.clone());
        let rec = HoldRec {
            key,
            buyer: req.buyer,
            seats: req.seats.as_slice().into(),
            // Where `HoldMove::Retake` leads, also for a hold already forgotten.
            state: HoldState::CheckingOut,
            expires_at: req.pinned_until,
            order: Some(req.order),
        };
        Ok(self.take(req.hold, rec))
    }
}

//! Bringing the hot store in line with the ledger's sold seats: seats the ledger sold
//! that the hot store still offers or holds (drift, or a commit that lost at the
//! ledger's primary key), and seats whose sale the ledger cancelled. One step under the
//! event's lock each, like every other move.

use boxoffice_domain::{BuyerId, HoldId, HoldState, SeatIndex};
use boxoffice_engine::ports::{ArbiterError, SoldSeat};

use super::event::EventState;
use crate::hash::FxHashMap;

impl EventState {
    pub fn mark_seats_sold(&mut self, seats: &[SoldSeat]) -> Result<u32, ArbiterError> {
        self.check_exist(seats)?;
        let mut listed: FxHashMap<SeatIndex, BuyerId> = FxHashMap::default();
        for s in seats.iter().filter(|s| !self.inv.is_sold(s.seat)) {
            listed.entry(s.seat).or_insert(s.buyer);
        }
        self.end_holds_on(&listed)?;
        for (&seat, &buyer) in &listed {
            // Free now, unless a hold's own sale just sold it.
            if self.inv.is_free(seat) {
                self.inv.take(seat);
                self.inv.sell(seat);
                *self.taken.entry(buyer).or_default() += 1;
            }
        }
        Ok(listed.len() as u32)
    }

    pub fn return_sold_seats(&mut self, seats: &[SoldSeat]) -> Result<u32, ArbiterError> {
        self.check_exist(seats)?;
        let mut back = 0;
        for s in seats {
            // A seat listed twice, or returned before, is no longer sold.
            if self.inv.is_sold(s.seat) {
                self.inv.unsell(s.seat);
                self.uncount(s.buyer);
                back += 1;
            }
        }
        Ok(back)
    }

    pub fn give_sold_seat(
        &mut self,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError> {
        if !self.inv.exists(seat) {
            return Err(ArbiterError::NoSuchSeat(seat));
        }
        if !self.inv.is_sold(seat) {
            return Ok(false);
        }
        self.uncount(from);
        *self.taken.entry(to).or_default() += 1;
        Ok(true)
    }

    /// One seat off `buyer`'s count, which never goes below zero.
    fn uncount(&mut self, buyer: BuyerId) {
        if let Some(t) = self.taken.get_mut(&buyer) {
            *t = t.saturating_sub(1);
            if *t == 0 {
                self.taken.remove(&buyer);
            }
        }
    }

    fn check_exist(&self, seats: &[SoldSeat]) -> Result<(), ArbiterError> {
        match seats.iter().find(|s| !self.inv.exists(s.seat)) {
            Some(s) => Err(ArbiterError::NoSuchSeat(s.seat)),
            None => Ok(()),
        }
    }

    /// Ends every live hold on a listed seat: sold as a whole if it is the listed sale
    /// being recorded, released otherwise. Scans the live holds, which only drift makes
    /// necessary: with no listed seat held, nothing is scanned.
    fn end_holds_on(&mut self, listed: &FxHashMap<SeatIndex, BuyerId>) -> Result<(), ArbiterError> {
        if listed.keys().all(|&s| self.inv.is_free(s)) {
            return Ok(());
        }
        let touched: Vec<HoldId> = self
            .deadlines
            .holds()
            .filter(|id| {
                self.holds
                    .get(id)
                    .is_some_and(|r| r.seats.iter().any(|s| listed.contains_key(s)))
            })
            .collect();
        for id in touched {
            let selling = self.holds.get(&id).is_some_and(|r| {
                matches!(r.state, HoldState::CheckingOut | HoldState::PaymentPending)
                    && r.seats.iter().all(|s| listed.get(s) == Some(&r.buyer))
            });
            if selling {
                self.mark_sold(id)?;
            } else {
                self.release(id)?;
            }
        }
        Ok(())
    }
}

//! Best available: which free seats of a section a request gets. Reads only; the caller
//! takes the seats in the same locked step.

use boxoffice_domain::SeatIndex;
use boxoffice_engine::ports::ArbiterError;

use super::inventory::{Inventory, Section};

impl Inventory {
    /// The `quantity` best free seats of `section`: the best-ranked run side by side in
    /// one row when `adjacent` means something there and such a run exists, else the
    /// best seats one by one.
    pub fn pick_best(
        &self,
        section: u16,
        quantity: u32,
        adjacent: bool,
    ) -> Result<Vec<SeatIndex>, ArbiterError> {
        let sec = self
            .sections
            .get(section as usize)
            .ok_or(ArbiterError::NoSuchSection)?;
        if sec.free.len() < quantity {
            return Err(ArbiterError::SoldOut);
        }
        if adjacent
            && sec.seated
            && quantity > 1
            && let Some(start) = self.best_run(sec, quantity)
        {
            return Ok((start..start + quantity).collect());
        }
        Ok(sec
            .free
            .iter()
            .take(quantity as usize)
            .map(|p| sec.free.seat_at(p))
            .collect())
    }

    /// The first seat of the free run of `q` seats in one row with the lowest rank sum
    /// (ties to the lowest index).
    ///
    /// Walks free seats best first and tries every window through each. A window not yet
    /// tried holds only seats ranked at least as badly as the current one, so once the
    /// best sum found is ≤ q × that rank nothing better remains. In the usual case (good
    /// seats still free) this stops after a few seats; a fragmented section with no run
    /// at all costs one pass over its free seats.
    fn best_run(&self, sec: &Section, q: u32) -> Option<SeatIndex> {
        let mut best: Option<(u64, SeatIndex)> = None;
        for p in sec.free.iter() {
            let seat = sec.free.seat_at(p);
            let floor = u64::from(self.seats[seat as usize].rank) * u64::from(q);
            if best.is_some_and(|(sum, _)| sum <= floor) {
                break;
            }
            for start in seat.saturating_sub(q - 1)..=seat {
                if let Some(sum) = self.run_sum(start, q, seat)
                    && best.is_none_or(|b| (sum, start) < b)
                {
                    best = Some((sum, start));
                }
            }
        }
        best.map(|(_, start)| start)
    }

    /// The rank sum of seats `start..start + q` if all are free and in `anchor`'s row.
    fn run_sum(&self, start: SeatIndex, q: u32, anchor: SeatIndex) -> Option<u64> {
        let end = start.checked_add(q).filter(|&e| e <= self.capacity())?;
        let home = self.seats[anchor as usize];
        let mut sum = 0u64;
        for s in start..end {
            let seat = self.seats[s as usize];
            if seat.section != home.section || seat.row != home.row || !self.is_free(s) {
                return None;
            }
            sum += u64::from(seat.rank);
        }
        Some(sum)
    }
}

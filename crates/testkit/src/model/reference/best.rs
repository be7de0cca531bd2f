//! Best available in the reference model, by brute force: sort the section's free seats,
//! or try every window of every row.

use boxoffice_domain::SeatIndex;
use boxoffice_engine::ports::ArbiterError;

use super::Model;

impl Model {
    /// The `quantity` best free seats of `section`: the free run of that many side by
    /// side in one row with the lowest rank sum (ties to the lowest first seat) when
    /// asked for, the section is seated and such a run exists; else the best-ranked free
    /// seats one by one (ties to the lowest index).
    pub(super) fn best(
        &self,
        section: u16,
        quantity: u32,
        adjacent: bool,
    ) -> Result<Vec<SeatIndex>, ArbiterError> {
        let seated = self
            .layout
            .sections
            .get(section as usize)
            .ok_or(ArbiterError::NoSuchSection)?
            .seated;
        let mut free: Vec<SeatIndex> = (self.free.iter().copied())
            .filter(|&s| self.layout.seats[s as usize].section == section)
            .collect();
        if free.len() < quantity as usize {
            return Err(ArbiterError::SoldOut);
        }
        let run = (adjacent && seated && quantity > 1)
            .then(|| self.best_run(section, quantity))
            .flatten();
        if let Some(start) = run {
            return Ok((start..start + quantity).collect());
        }
        free.sort_by_key(|&s| (self.layout.seats[s as usize].rank, s));
        free.truncate(quantity as usize);
        Ok(free)
    }

    /// Of every window of `q` free seats in one row of `section`, the one with the
    /// lowest (rank sum, first seat).
    fn best_run(&self, section: u16, q: u32) -> Option<SeatIndex> {
        let seats = &self.layout.seats;
        let in_run = |s: SeatIndex, row: u16| {
            seats
                .get(s as usize)
                .is_some_and(|x| x.section == section && x.row == row && self.free.contains(&s))
        };
        let windows = (0..seats.len() as SeatIndex).filter_map(|start| {
            let run = start..start.checked_add(q)?;
            let row = seats[start as usize].row;
            if !run.clone().all(|s| in_run(s, row)) {
                return None;
            }
            let sum: u64 = run.map(|s| u64::from(seats[s as usize].rank)).sum();
            Some((sum, start))
        });
        windows.min().map(|(_, start)| start)
    }
}

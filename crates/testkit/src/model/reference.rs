//! The reference model of the seat arbiter: a few maps and plain loops, written from the
//! port's documented semantics with no regard for speed, so that it is easy to read as
//! correct. Every adapter must give exactly its answers.

mod best;

use std::collections::{BTreeSet, HashMap, VecDeque};

use boxoffice_domain::{BuyerId, HoldId, HoldState, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, Expired, HoldRequest, HoldView, Retake, SeatChoice, SeatCounts,
    SoldSeat,
};

pub struct Model {
    layout: ArbiterLayout,
    free: BTreeSet<SeatIndex>,
    sold: BTreeSet<SeatIndex>,
    holds: HashMap<HoldId, HoldView>,
    /// Seats held or sold per buyer.
    taken: HashMap<BuyerId, u32>,
    /// Who owns each sold seat, so a case gives a seat away as its owner.
    owner: HashMap<SeatIndex, BuyerId>,
    /// Expiries done inside `hold`, `pin` or `retake`, for the next `expire_due`.
    unreported: VecDeque<Expired>,
}

type Answer = Result<HoldView, ArbiterError>;

impl Model {
    pub fn load(layout: &ArbiterLayout, sold: &[SoldSeat]) -> Model {
        let mut m = Model {
            layout: layout.clone(),
            free: (0..layout.seats.len() as SeatIndex).collect(),
            sold: BTreeSet::new(),
            holds: HashMap::new(),
            taken: HashMap::new(),
            owner: HashMap::new(),
            unreported: VecDeque::new(),
        };
        for s in sold {
            if m.sold.insert(s.seat) {
                m.free.remove(&s.seat);
                *m.taken.entry(s.buyer).or_default() += 1;
                m.owner.insert(s.seat, s.buyer);
            }
        }
        m
    }

    pub fn hold(&mut self, req: &HoldRequest, now: Millis) -> Answer {
        self.expire_all_due(now);
        if let Some(h) = self.holds.get(&req.hold) {
            return match h.buyer == req.buyer {
                true => Ok(h.clone()),
                false => Err(ArbiterError::WrongState(h.state)),
            };
        }
        let seats = match &req.choice {
            SeatChoice::Named(seats) => {
                self.check_named(seats)?;
                self.within_limit(req.buyer, seats.len() as u32)?;
                self.all_free(seats)?;
                seats.clone()
            }
            SeatChoice::BestAvailable {
                section,
                quantity,
                adjacent,
            } => {
                if *quantity == 0 || *quantity > self.layout.max_per_buyer {
                    return Err(ArbiterError::BadQuantity);
                }
                self.within_limit(req.buyer, *quantity)?;
                self.best(*section, *quantity, *adjacent)?
            }
        };
        Ok(self.take(
            req.hold,
            req.buyer,
            seats,
            HoldState::Held,
            req.expires_at,
            None,
        ))
    }

    pub fn pin(&mut self, id: HoldId, order: OrderId, until: Millis, now: Millis) -> Answer {
        let h = self.holds.get(&id).ok_or(ArbiterError::UnknownHold)?;
        if h.state.is_live() && h.expires_at <= now {
            let report = self.end(id, HoldState::Expired);
            self.unreported.push_back(report);
            return Err(ArbiterError::Expired);
        }
        match h.state {
            HoldState::Expired => Err(ArbiterError::Expired),
            HoldState::CheckingOut | HoldState::PaymentPending if h.order == Some(order) => {
                Ok(h.clone())
            }
            HoldState::Held => {
                let h = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
                (h.state, h.expires_at, h.order) = (HoldState::CheckingOut, until, Some(order));
                Ok(h.clone())
            }
            other => Err(ArbiterError::WrongState(other)),
        }
    }

    pub fn mark_uncertain(&mut self, id: HoldId) -> Answer {
        let h = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        match h.state {
            HoldState::PaymentPending => {}
            HoldState::Expired => return Err(ArbiterError::Expired),
            HoldState::CheckingOut => h.state = HoldState::PaymentPending,
            other => return Err(ArbiterError::WrongState(other)),
        }
        Ok(h.clone())
    }

    pub fn mark_sold(&mut self, id: HoldId) -> Answer {
        let h = self.holds.get_mut(&id).ok_or(ArbiterError::UnknownHold)?;
        match h.state {
            HoldState::Sold => {}
            HoldState::Expired => return Err(ArbiterError::Expired),
            HoldState::CheckingOut | HoldState::PaymentPending => {
                h.state = HoldState::Sold;
                self.sold.extend(h.seats.iter().copied());
                self.owner
                    .extend(h.seats.iter().map(|&seat| (seat, h.buyer)));
            }
            other => return Err(ArbiterError::WrongState(other)),
        }
        Ok(h.clone())
    }

    pub fn release(&mut self, id: HoldId) -> Answer {
        let h = self.holds.get(&id).ok_or(ArbiterError::UnknownHold)?;
        match h.state {
            HoldState::Released | HoldState::Expired => Ok(h.clone()),
            HoldState::Sold => Err(ArbiterError::WrongState(HoldState::Sold)),
            _ => {
                self.end(id, HoldState::Released);
                Ok(self.holds[&id].clone())
            }
        }
    }

    pub fn retake(&mut self, req: &Retake, now: Millis) -> Answer {
        self.expire_all_due(now);
        if let Some(h) = self.holds.get_mut(&req.hold) {
            let live = matches!(h.state, HoldState::CheckingOut | HoldState::PaymentPending);
            if live && req.replacing.is_some() && h.order == req.replacing {
                if h.order != Some(req.order) {
                    h.state = HoldState::CheckingOut;
                    (h.expires_at, h.order) = (req.pinned_until, Some(req.order));
                }
                return Ok(h.clone());
            }
        }
        if let Some(h) = self.holds.get(&req.hold) {
            match h.state {
                HoldState::Released | HoldState::Expired => {}
                HoldState::CheckingOut | HoldState::PaymentPending | HoldState::Sold
                    if h.order == Some(req.order) =>
                {
                    return Ok(h.clone());
                }
                other => return Err(ArbiterError::WrongState(other)),
            }
        }
        self.check_named(&req.seats)?;
        self.within_limit(req.buyer, req.seats.len() as u32)?;
        self.all_free(&req.seats)?;
        let (state, order) = (HoldState::CheckingOut, Some(req.order));
        let seats = req.seats.clone();
        Ok(self.take(req.hold, req.buyer, seats, state, req.pinned_until, order))
    }

    /// Reports first what was expired on the way, then expires due holds earliest
    /// deadline first (ties by hold id), `limit` reports in all.
    pub fn expire_due(&mut self, now: Millis, limit: usize) -> Vec<Expired> {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.unreported.pop_front() {
                Some(r) => out.push(r),
                None => break,
            }
        }
        while out.len() < limit {
            match self.next_due(now) {
                Some(id) => out.push(self.end(id, HoldState::Expired)),
                None => break,
            }
        }
        out
    }

    /// A sold seat counts against `to` instead of `from`; any other seat moves nothing.
    pub fn give_sold_seat(
        &mut self,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError> {
        if seat as usize >= self.layout.seats.len() {
            return Err(ArbiterError::NoSuchSeat(seat));
        }
        if !self.sold.contains(&seat) {
            return Ok(false);
        }
        let given = self.taken.entry(from).or_default();
        *given = given.saturating_sub(1);
        *self.taken.entry(to).or_default() += 1;
        self.owner.insert(seat, to);
        Ok(true)
    }

    /// The owner of a sold seat.
    pub fn owner(&self, seat: SeatIndex) -> Option<BuyerId> {
        self.owner.get(&seat).copied()
    }

    pub fn get(&self, id: HoldId) -> Option<HoldView> {
        self.holds.get(&id).cloned()
    }

    /// One bit per seat, most significant first, 1 = free.
    pub fn availability(&self) -> Vec<u8> {
        let mut bits = vec![0u8; self.layout.seats.len().div_ceil(8)];
        for &s in &self.free {
            bits[s as usize / 8] |= 0x80 >> (s % 8);
        }
        bits
    }

    pub fn counts(&self) -> SeatCounts {
        let capacity = self.layout.seats.len() as u32;
        let (free, sold) = (self.free.len() as u32, self.sold.len() as u32);
        let live = self.holds.values().filter(|h| h.state.is_live());
        SeatCounts {
            capacity,
            free,
            held: capacity - free - sold,
            sold,
            active_holds: live.count() as u32,
        }
    }

    pub fn sold_seats(&self) -> Vec<SeatIndex> {
        self.sold.iter().copied().collect()
    }

    fn expire_all_due(&mut self, now: Millis) {
        while let Some(id) = self.next_due(now) {
            let report = self.end(id, HoldState::Expired);
            self.unreported.push_back(report);
        }
    }

    fn next_due(&self, now: Millis) -> Option<HoldId> {
        let live = self.holds.values().filter(|h| h.state.is_live());
        let due = live.filter(|h| h.expires_at <= now);
        due.map(|h| (h.expires_at, h.hold)).min().map(|(_, id)| id)
    }

    /// A live hold → `state` (released or expired): its seats free again, the buyer's
    /// count down. Returns the expiry report.
    fn end(&mut self, id: HoldId, state: HoldState) -> Expired {
        let h = self.holds.get_mut(&id).expect("only known holds end");
        h.state = state;
        self.free.extend(h.seats.iter().copied());
        let n = h.seats.len() as u32;
        *self.taken.entry(h.buyer).or_default() -= n;
        Expired {
            hold: id,
            buyer: h.buyer,
            seats: h.seats.clone(),
            order: h.order,
        }
    }

    fn take(
        &mut self,
        id: HoldId,
        buyer: BuyerId,
        seats: Vec<SeatIndex>,
        state: HoldState,
        expires_at: Millis,
        order: Option<OrderId>,
    ) -> HoldView {
        for s in &seats {
            self.free.remove(s);
        }
        *self.taken.entry(buyer).or_default() += seats.len() as u32;
        let prices = seats.iter().map(|&s| self.layout.seats[s as usize].price);
        let view = HoldView {
            hold: id,
            buyer,
            prices: prices.collect(),
            seats,
            state,
            expires_at,
            order,
            // The model's requests bind no key (the arbiter cases pin keys).
            key: None,
        };
        self.holds.insert(id, view.clone());
        view
    }

    /// Named seats: 1..=limit of them, no repeats, all in the event.
    fn check_named(&self, seats: &[SeatIndex]) -> Result<(), ArbiterError> {
        if seats.is_empty() || seats.len() > self.layout.max_per_buyer as usize {
            return Err(ArbiterError::BadQuantity);
        }
        if seats.iter().collect::<BTreeSet<_>>().len() != seats.len() {
            return Err(ArbiterError::BadQuantity);
        }
        match seats
            .iter()
            .find(|&&s| s as usize >= self.layout.seats.len())
        {
            Some(&s) => Err(ArbiterError::NoSuchSeat(s)),
            None => Ok(()),
        }
    }

    fn within_limit(&self, buyer: BuyerId, more: u32) -> Result<(), ArbiterError> {
        let limit = self.layout.max_per_buyer;
        match self.taken.get(&buyer).copied().unwrap_or(0) + more > limit {
            true => Err(ArbiterError::LimitExceeded { limit }),
            false => Ok(()),
        }
    }

    fn all_free(&self, seats: &[SeatIndex]) -> Result<(), ArbiterError> {
        match seats.iter().find(|s| !self.free.contains(s)) {
            Some(&s) => Err(ArbiterError::SeatUnavailable(s)),
            None => Ok(()),
        }
    }
}

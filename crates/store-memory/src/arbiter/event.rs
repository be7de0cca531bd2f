//! One event's hot state and the hold step. Everything here runs under the event's
//! mutex, so each public method is one atomic step; none of it awaits.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};

use boxoffice_domain::possession::Thumbprint;
use boxoffice_domain::{BuyerId, EventId, HoldId, HoldState, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, Expired, HoldRequest, HoldView, SeatChoice, SeatCounts, SoldSeat,
};

use super::inventory::Inventory;
use crate::hash::FxHashMap;

pub(crate) struct HoldRec {
    pub buyer: BuyerId,
    pub seats: Box<[SeatIndex]>,
    pub state: HoldState,
    pub expires_at: Millis,
    pub order: Option<OrderId>,
    /// The proof-of-possession key the hold answers to, for as long as it is kept.
    /// Boxed: most holds have none, and the table's entries stay small.
    pub key: Option<Box<Thumbprint>>,
}

/// The event's holds, found by the hold's nonce: every hold an event's state is asked
/// about is of that event (the arbiter finds the state by the hold's event), so the
/// 16 bytes of the nonce, aligned to 8, name it, where the whole `HoldId` (32 bytes,
/// aligned to 16) made each entry 128 bytes.
///
/// In `HOLD_TABLES` tables by the nonce's top bits (random in every hold id the engine
/// makes): a table doubles under the event's lock, moving its entries and faulting in
/// the new table meanwhile, and every hold of the event waits. One table for a
/// 250,000-seat event doubled from 256 K to 512 K buckets (23 to 46 MB) in one step; a
/// 32nd of it at a time keeps each pause a 32nd as long.
pub(crate) struct Holds([FxHashMap<[u64; 2], HoldRec>; HOLD_TABLES]);

const HOLD_TABLES: usize = 32;

impl Default for Holds {
    fn default() -> Self {
        Holds(std::array::from_fn(|_| FxHashMap::default()))
    }
}

/// A hold's nonce in two words, high word first (so the words order as the nonce
/// does), aligned to 8: how the event's tables and deadlines name a hold of the event.
fn nonce_words(id: &HoldId) -> [u64; 2] {
    [(id.nonce >> 64) as u64, id.nonce as u64]
}

/// The nonce `nonce_words` split.
fn nonce_of(words: &[u64; 2]) -> u128 {
    (u128::from(words[0]) << 64) | u128::from(words[1])
}

impl Holds {
    /// The table of a hold named `key` (`nonce_words`): the nonce's top five bits.
    fn slot(key: &[u64; 2]) -> usize {
        (key[0] >> 59) as usize % HOLD_TABLES
    }

    pub fn get(&self, id: &HoldId) -> Option<&HoldRec> {
        let key = nonce_words(id);
        self.0[Self::slot(&key)].get(&key)
    }

    pub fn get_mut(&mut self, id: &HoldId) -> Option<&mut HoldRec> {
        let key = nonce_words(id);
        self.0[Self::slot(&key)].get_mut(&key)
    }

    pub fn insert(&mut self, id: HoldId, rec: HoldRec) {
        let key = nonce_words(&id);
        self.0[Self::slot(&key)].insert(key, rec);
    }

    pub fn remove(&mut self, id: &HoldId) -> Option<HoldRec> {
        let key = nonce_words(id);
        self.0[Self::slot(&key)].remove(&key)
    }
}

/// The deadlines of an event's live holds, soonest first: by millisecond, each with its
/// holds' nonces (`nonce_words`, high word first) in order, so ties go in the nonce's
/// order, as they did by `HoldId`. A new hold's deadline is nearly always the latest
/// (its time to live from now), and holds made in the same millisecond share its
/// entry: a hold's insert, under the event's lock, is a look at the last entry and a
/// binary search in its few nonces, where a set of every (deadline, nonce) descended
/// the whole tree comparing tuples. A millisecond's list is never empty.
pub(crate) struct Deadlines {
    event: EventId,
    by_ms: BTreeMap<Millis, Vec<[u64; 2]>>,
}

impl Deadlines {
    fn new(event: EventId) -> Self {
        Deadlines {
            event,
            by_ms: BTreeMap::new(),
        }
    }

    fn id(&self, nonce: &[u64; 2]) -> HoldId {
        HoldId {
            event: self.event,
            nonce: nonce_of(nonce),
        }
    }

    pub fn insert(&mut self, at: Millis, id: HoldId) {
        let nonce = nonce_words(&id);
        let holds = match self.by_ms.last_entry() {
            Some(last) if *last.key() == at => last.into_mut(),
            _ => self.by_ms.entry(at).or_default(),
        };
        if let Err(i) = holds.binary_search(&nonce) {
            holds.insert(i, nonce);
        }
    }

    pub fn remove(&mut self, at: Millis, id: HoldId) {
        let nonce = nonce_words(&id);
        if let Entry::Occupied(mut holds) = self.by_ms.entry(at) {
            if let Ok(i) = holds.get().binary_search(&nonce) {
                holds.get_mut().remove(i);
            }
            if holds.get().is_empty() {
                holds.remove();
            }
        }
    }

    /// The soonest deadline and its hold.
    pub fn first(&self) -> Option<(Millis, HoldId)> {
        let (at, holds) = self.by_ms.first_key_value()?;
        holds.first().map(|nonce| (*at, self.id(nonce)))
    }

    /// The live holds, soonest deadline first.
    pub fn holds(&self) -> impl Iterator<Item = HoldId> + '_ {
        (self.by_ms.values().flatten()).map(|nonce| self.id(nonce))
    }
}

pub(crate) struct EventState {
    pub max_per_buyer: u32,
    pub inv: Inventory,
    /// Live holds and the most recent finished ones (see `finished`).
    pub holds: Holds,
    /// (deadline, hold) of every live hold and only those.
    pub deadlines: Deadlines,
    /// Seats held plus seats sold per buyer; absent means zero.
    pub taken: FxHashMap<BuyerId, u32>,
    /// Finished holds oldest first, so `get` can still answer "what happened" for a
    /// while without the table growing for ever.
    pub finished: VecDeque<HoldId>,
    /// Holds that `hold` (or `pin`) expired on the way and the worker has not heard of.
    pub unreported: VecDeque<Expired>,
    pub keep_finished: usize,
    pub active_holds: u32,
}

impl EventState {
    /// Sold seats sold, every other seat free, no holds.
    pub fn load(
        layout: &ArbiterLayout,
        sold: &[SoldSeat],
        keep_finished: usize,
    ) -> Result<Self, String> {
        let mut state = EventState {
            max_per_buyer: layout.max_per_buyer,
            inv: Inventory::new(layout)?,
            holds: Holds::default(),
            deadlines: Deadlines::new(layout.event),
            taken: FxHashMap::default(),
            finished: VecDeque::new(),
            unreported: VecDeque::new(),
            keep_finished,
            active_holds: 0,
        };
        for s in sold {
            if !state.inv.exists(s.seat) {
                return Err(format!(
                    "sold seat {} is not in event {}",
                    s.seat, layout.event
                ));
            }
            // A seat listed twice is still one ticket for its buyer.
            if state.inv.load_sold(s.seat) {
                *state.taken.entry(s.buyer).or_default() += 1;
            }
        }
        Ok(state)
    }

    pub fn hold(&mut self, req: &HoldRequest, now: Millis) -> Result<HoldView, ArbiterError> {
        self.expire_due_unreported(now);
        if let Some(rec) = self.holds.get(&req.hold) {
            // The same hold id again is a retried request: answer as the first time.
            return if rec.buyer == req.buyer {
                Ok(self.view(req.hold, rec))
            } else {
                Err(ArbiterError::WrongState(rec.state))
            };
        }
        let quantity = match &req.choice {
            SeatChoice::Named(seats) => self.check_named(seats)?,
            SeatChoice::BestAvailable { quantity, .. } => *quantity,
        };
        if quantity == 0 || quantity > self.max_per_buyer {
            return Err(ArbiterError::BadQuantity);
        }
        self.within_limit(req.buyer, quantity)?;
        let seats: Box<[SeatIndex]> = match &req.choice {
            SeatChoice::Named(seats) => {
                self.all_free(seats)?;
                seats.as_slice().into()
            }
            SeatChoice::BestAvailable {
                section,
                quantity,
                adjacent,
            } => self.inv.pick_best(*section, *quantity, *adjacent)?.into(),
        };
        let rec = HoldRec {
            buyer: req.buyer,
            seats,
            state: HoldState::Held,
            expires_at: req.expires_at,
            order: None,
            key: req.key.clone().map(Box::new),
        };
        Ok(self.take(req.hold, rec))
    }

    /// P6, the hot store's half, for hold and retake alike: a buyer's held plus sold
    /// seats never pass the limit (the ledger's `buyer_within_limit` CHECK is the other
    /// half). The arbiter cases `a_buyer_cannot_hold_more_than_the_limit_across_holds`
    /// and `a_retake_keeps_the_buyer_limit` pin this and the Redis scripts together.
    pub(super) fn within_limit(&self, buyer: BuyerId, quantity: u32) -> Result<(), ArbiterError> {
        let owned = self.taken.get(&buyer).copied().unwrap_or(0);
        if owned + quantity > self.max_per_buyer {
            return Err(ArbiterError::LimitExceeded {
                limit: self.max_per_buyer,
            });
        }
        Ok(())
    }

    pub(super) fn all_free(&self, seats: &[SeatIndex]) -> Result<(), ArbiterError> {
        match seats.iter().find(|&&s| !self.inv.is_free(s)) {
            Some(&s) => Err(ArbiterError::SeatUnavailable(s)),
            None => Ok(()),
        }
    }

    /// A new live hold on free seats: stock, the buyer's count and the deadlines follow.
    pub(super) fn take(&mut self, id: HoldId, rec: HoldRec) -> HoldView {
        rec.seats.iter().for_each(|&s| self.inv.take(s));
        *self.taken.entry(rec.buyer).or_default() += rec.seats.len() as u32;
        self.active_holds += 1;
        self.deadlines.insert(rec.expires_at, id);
        let view = self.view(id, &rec);
        self.holds.insert(id, rec);
        view
    }

    /// Named seats: at most the buyer limit, no repeats, all existing. Returns how many.
    pub(super) fn check_named(&self, seats: &[SeatIndex]) -> Result<u32, ArbiterError> {
        if seats.is_empty() || seats.len() > self.max_per_buyer as usize {
            return Err(ArbiterError::BadQuantity);
        }
        // At most `max_per_buyer` (≤ 50) seats: the quadratic check beats sorting a copy.
        if seats
            .iter()
            .enumerate()
            .any(|(i, s)| seats[..i].contains(s))
        {
            return Err(ArbiterError::BadQuantity);
        }
        if let Some(&s) = seats.iter().find(|&&s| !self.inv.exists(s)) {
            return Err(ArbiterError::NoSuchSeat(s));
        }
        Ok(seats.len() as u32)
    }

    pub fn view(&self, id: HoldId, rec: &HoldRec) -> HoldView {
        HoldView {
            hold: id,
            buyer: rec.buyer,
            seats: rec.seats.to_vec(),
            // Prices cannot change under a hold: only `load` changes the layout, and it
            // drops every hold. So the quote is the layout's price.
            prices: rec
                .seats
                .iter()
                .map(|&s| self.inv.seats[s as usize].price)
                .collect(),
            state: rec.state,
            expires_at: rec.expires_at,
            order: rec.order,
            key: rec.key.as_deref().cloned(),
        }
    }

    pub fn get(&self, id: HoldId) -> Option<HoldView> {
        self.holds.get(&id).map(|rec| self.view(id, rec))
    }

    pub fn counts(&self) -> SeatCounts {
        let capacity = self.inv.capacity();
        let (held, sold) = (self.inv.held, self.inv.sold);
        SeatCounts {
            capacity,
            free: capacity - held - sold,
            held,
            sold,
            active_holds: self.active_holds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The holds map's entry stays small: it doubles under the event's lock.
    #[test]
    fn a_holds_map_entry_takes_88_bytes() {
        assert_eq!(std::mem::size_of::<([u64; 2], HoldRec)>(), 88);
    }

    #[test]
    fn holds_spread_over_the_tables_and_each_is_found_in_its_own() {
        let mut holds = Holds::default();
        let event = EventId(9);
        let ids: Vec<HoldId> = (0..2_000).map(|_| HoldId::random(event)).collect();
        for (i, id) in ids.iter().enumerate() {
            let rec = HoldRec {
                buyer: BuyerId::random(),
                seats: vec![i as SeatIndex].into_boxed_slice(),
                state: HoldState::Held,
                expires_at: Millis(i as i64),
                order: None,
                key: None,
            };
            holds.insert(*id, rec);
        }
        let used = holds.0.iter().filter(|t| !t.is_empty()).count();
        assert_eq!(used, HOLD_TABLES, "2,000 random ids leave no table empty");
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(holds.get(id).map(|r| r.expires_at), Some(Millis(i as i64)));
        }
        let gone = holds.remove(&ids[7]).expect("held");
        assert_eq!(&*gone.seats, &[7]);
        assert!(holds.get(&ids[7]).is_none() && holds.get_mut(&ids[8]).is_some());
        let stranger = HoldId {
            event,
            nonce: u128::MAX,
        };
        assert!(holds.get(&stranger).is_none() && holds.remove(&stranger).is_none());
    }

    /// Every live hold has one: 24 bytes, not the 48 of (deadline, `HoldId`).
    #[test]
    fn a_deadline_takes_24_bytes_and_names_its_hold_in_the_order_of_hold_ids() {
        assert_eq!(std::mem::size_of::<(Millis, [u64; 2])>(), 24);
        let event = EventId(42);
        let ids = [
            HoldId {
                event,
                nonce: u128::MAX,
            },
            HoldId {
                event,
                nonce: 1 << 64,
            },
            HoldId {
                event,
                nonce: (1 << 64) - 1,
            },
            HoldId { event, nonce: 0 },
        ];
        let mut deadlines = Deadlines::new(event);
        for id in ids {
            deadlines.insert(Millis(7), id);
        }
        deadlines.insert(Millis(3), ids[0]);
        let mut by_id: Vec<(Millis, HoldId)> = ids.iter().map(|&id| (Millis(7), id)).collect();
        by_id.push((Millis(3), ids[0]));
        by_id.sort();
        assert_eq!(deadlines.first(), Some(by_id[0]));
        let order: Vec<HoldId> = deadlines.holds().collect();
        assert_eq!(order, by_id.iter().map(|&(_, id)| id).collect::<Vec<_>>());
        deadlines.remove(Millis(3), ids[0]);
        deadlines.remove(Millis(7), ids[2]);
        let left: Vec<HoldId> = deadlines.holds().collect();
        assert_eq!(left, vec![ids[3], ids[1], ids[0]]);
    }

    /// Against a set of every (deadline, nonce): deadlines in order and out of it (a pin
    /// moves a hold's later or earlier), ties, a hold given twice, removals of holds
    /// never given, and a millisecond emptied and filled again.
    #[test]
    fn deadlines_answer_as_an_ordered_set_of_deadline_and_nonce() {
        let event = EventId(4);
        let mut deadlines = Deadlines::new(event);
        let mut set = std::collections::BTreeSet::new();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let ids: Vec<HoldId> = (0..64).map(|_| HoldId::random(event)).collect();
        let mut clock = 0i64;
        for _ in 0..5_000 {
            let id = ids[(next() % 64) as usize];
            // Mostly the latest deadline, sometimes an earlier or a later one.
            clock += i64::from(next() % 3 == 0);
            let at = Millis(match next() % 10 {
                0 => clock - (next() % 20) as i64,
                1 => clock + (next() % 20) as i64,
                _ => clock,
            });
            if next() % 3 == 0 {
                deadlines.remove(at, id);
                set.remove(&(at, id.nonce));
            } else {
                deadlines.insert(at, id);
                set.insert((at, id.nonce));
            }
            let first = set
                .first()
                .map(|&(at, nonce)| (at, HoldId { event, nonce }));
            assert_eq!(deadlines.first(), first);
        }
        let all: Vec<HoldId> = (set.iter())
            .map(|&(_, nonce)| HoldId { event, nonce })
            .collect();
        assert_eq!(deadlines.holds().collect::<Vec<_>>(), all);
        for &(at, nonce) in &set {
            deadlines.remove(at, HoldId { event, nonce });
        }
        assert_eq!(deadlines.first(), None);
        assert!(deadlines.by_ms.is_empty(), "no millisecond is left empty");
    }
}

//! The seats of one event and which are free, held or sold, with no notion of holds or
//! buyers: `EventState` decides who may take what, this keeps the books consistent.
//!
//! A seat is free when its availability bit is set, sold when its sold bit is set, and
//! held otherwise. The availability bitmap is kept up to date on every change so that
//! `availability()` is a copy, not a scan.

use boxoffice_domain::SeatIndex;
use boxoffice_engine::ports::{ArbiterLayout, LayoutSeat};

use super::freeset::FreeSet;

pub(crate) struct Section {
    pub seated: bool,
    pub free: FreeSet,
}

pub(crate) struct Inventory {
    pub seats: Box<[LayoutSeat]>,
    pub sections: Box<[Section]>,
    /// Seat → its position in its section's `FreeSet`.
    pos: Box<[u32]>,
    /// One bit per seat, most significant bit first: 1 = free (the public bitmap).
    free_bits: Vec<u8>,
    sold_bits: Vec<u8>,
    pub held: u32,
    pub sold: u32,
}

fn bit(seat: SeatIndex) -> (usize, u8) {
    ((seat / 8) as usize, 0x80 >> (seat % 8))
}

impl Inventory {
    /// Every seat free. Fails when a seat names a section the layout does not have.
    pub fn new(layout: &ArbiterLayout) -> Result<Self, String> {
        let n = layout.seats.len();
        if n > u32::MAX as usize / 2 {
            return Err(format!("event {} has too many seats", layout.event));
        }
        let mut by_section: Vec<Vec<SeatIndex>> = vec![Vec::new(); layout.sections.len()];
        for (i, s) in layout.seats.iter().enumerate() {
            let list = by_section
                .get_mut(s.section as usize)
                .ok_or_else(|| format!("seat {i} names missing section {}", s.section))?;
            list.push(i as SeatIndex);
        }
        let mut pos = vec![0u32; n].into_boxed_slice();
        let mut sections = Vec::with_capacity(by_section.len());
        for (mut order, spec) in by_section.into_iter().zip(&layout.sections) {
            order.sort_unstable_by_key(|&s| (layout.seats[s as usize].rank, s));
            for (p, &s) in order.iter().enumerate() {
                pos[s as usize] = p as u32;
            }
            let mut free = FreeSet::new(order);
            (0..free.order().len() as u32).for_each(|p| free.insert(p));
            sections.push(Section {
                seated: spec.seated,
                free,
            });
        }
        let mut free_bits = vec![0xffu8; n.div_ceil(8)];
        if !n.is_multiple_of(8) {
            // Bits past the last seat are not seats: never report them free.
            *free_bits.last_mut().expect("n > 0 when n % 8 != 0") = !(0xffu8 >> (n % 8));
        }
        let seats = layout.seats.clone().into_boxed_slice();
        let sections = sections.into_boxed_slice();
        Ok(Inventory {
            seats,
            sections,
            pos,
            free_bits,
            sold_bits: vec![0; n.div_ceil(8)],
            held: 0,
            sold: 0,
        })
    }

    pub fn capacity(&self) -> u32 {
        self.seats.len() as u32
    }

    pub fn exists(&self, seat: SeatIndex) -> bool {
        (seat as usize) < self.seats.len()
    }

    pub fn is_free(&self, seat: SeatIndex) -> bool {
        let (i, m) = bit(seat);
        self.free_bits[i] & m != 0
    }

    pub fn is_sold(&self, seat: SeatIndex) -> bool {
        let (i, m) = bit(seat);
        self.sold_bits[i] & m != 0
    }

    pub fn bitmap(&self) -> Vec<u8> {
        self.free_bits.clone()
    }

    fn set_free(&mut self, seat: SeatIndex, free: bool) {
        let (i, m) = bit(seat);
        let s = self.seats[seat as usize].section as usize;
        let p = self.pos[seat as usize];
        if free {
            self.free_bits[i] |= m;
            self.sections[s].free.insert(p);
        } else {
            self.free_bits[i] &= !m;
            self.sections[s].free.remove(p);
        }
    }

    /// Free → held. The caller has checked the seat is free.
    pub fn take(&mut self, seat: SeatIndex) {
        self.set_free(seat, false);
        self.held += 1;
    }

    /// Held → free.
    pub fn put_back(&mut self, seat: SeatIndex) {
        self.set_free(seat, true);
        self.held -= 1;
    }

    /// Held → sold, for good.
    pub fn sell(&mut self, seat: SeatIndex) {
        let (i, m) = bit(seat);
        self.sold_bits[i] |= m;
        self.held -= 1;
        self.sold += 1;
    }

    /// Free → sold, when rebuilding from the ledger. Returns false if already sold.
    pub fn load_sold(&mut self, seat: SeatIndex) -> bool {
        if self.is_sold(seat) {
            return false;
        }
        self.take(seat);
        self.sell(seat);
        true
    }

    /// Sold → free, when the ledger cancelled the sale. The caller checked it is sold.
    pub fn unsell(&mut self, seat: SeatIndex) {
        let (i, m) = bit(seat);
        self.sold_bits[i] &= !m;
        self.sold -= 1;
        self.set_free(seat, true);
    }

    pub fn sold_seats(&self) -> Vec<SeatIndex> {
        (0..self.capacity()).filter(|&s| self.is_sold(s)).collect()
    }
}

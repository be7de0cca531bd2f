//! One section's free seats, best first.
//!
//! Ranks never change after `load`, so each section's seats are sorted once by
//! (rank, seat index) and a free seat is one bit at its position in that order. Best
//! available is then "first set bit", found through a one-bit-per-word summary, with no
//! allocation and no tree rebalancing on the hot path. 50,000 seats cost ~6 KiB of bits
//! plus the order table.

use boxoffice_domain::SeatIndex;

pub(crate) struct FreeSet {
    /// Position → seat, sorted by (rank, seat index).
    order: Box<[SeatIndex]>,
    words: Vec<u64>,
    /// Bit `w` is set when `words[w]` has any bit set.
    summary: Vec<u64>,
    len: u32,
}

impl FreeSet {
    /// An empty set over `order` (already sorted best first).
    pub fn new(order: Vec<SeatIndex>) -> Self {
        let words = order.len().div_ceil(64);
        FreeSet {
            order: order.into_boxed_slice(),
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
            len: 0,
        }
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn seat_at(&self, pos: u32) -> SeatIndex {
        self.order[pos as usize]
    }

    pub fn order(&self) -> &[SeatIndex] {
        &self.order
    }

    pub fn insert(&mut self, pos: u32) {
        let (w, bit) = ((pos / 64) as usize, 1u64 << (pos % 64));
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.summary[w / 64] |= 1 << (w % 64);
            self.len += 1;
        }
    }

    pub fn remove(&mut self, pos: u32) {
        let (w, bit) = ((pos / 64) as usize, 1u64 << (pos % 64));
        if self.words[w] & bit != 0 {
            self.words[w] &= !bit;
            if self.words[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
            self.len -= 1;
        }
    }

    /// The first free position at or after `from`.
    pub fn next(&self, from: u32) -> Option<u32> {
        let w = (from / 64) as usize;
        let here = self.words.get(w)? & (!0u64 << (from % 64));
        if here != 0 {
            return Some(w as u32 * 64 + here.trailing_zeros());
        }
        let next = w + 1;
        let mut s = next / 64;
        let mut mask = self.summary.get(s)? & (!0u64 << (next % 64));
        loop {
            if mask != 0 {
                let word = s * 64 + mask.trailing_zeros() as usize;
                return Some(word as u32 * 64 + self.words[word].trailing_zeros());
            }
            s += 1;
            mask = *self.summary.get(s)?;
        }
    }

    /// Free positions in order, best first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.next(0), move |&p| self.next(p + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_finds_set_bits_across_words_and_summary_blocks() {
        let mut set = FreeSet::new((0..10_000).collect());
        for p in [3, 64, 4095, 4096, 9_999] {
            set.insert(p);
        }
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![3, 64, 4095, 4096, 9_999]
        );
        set.remove(64);
        set.remove(64);
        assert_eq!(set.next(4), Some(4095));
        assert_eq!(set.len(), 4);
        assert_eq!(set.next(10_000), None);
    }
}

//! Tallies that every request adds to, kept in shards that each thread takes for its
//! own: a runtime's workers (no more of them than shards) then never write the same
//! lock or the same samples, and a request's tally costs no cache line the other cores
//! last wrote. A reader takes every shard in turn and merges them.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};

/// Shards: more than the cores a node is expected to run on.
const SHARDS: usize = 16;

/// `T` once for each shard, each shard on cache lines of its own.
pub(crate) struct PerThread<T>([Padded<T>; SHARDS]);

/// A shard alone on its cache lines (128 bytes: two lines, which some CPUs fetch in
/// pairs).
#[repr(align(128))]
struct Padded<T>(Mutex<T>);

impl<T: Default> Default for PerThread<T> {
    fn default() -> Self {
        PerThread(std::array::from_fn(|_| Padded(Mutex::default())))
    }
}

impl<T> PerThread<T> {
    /// The calling thread's shard.
    pub(crate) fn mine(&self) -> MutexGuard<'_, T> {
        self.0[shard()].0.lock()
    }

    /// Every shard, one at a time.
    pub(crate) fn each(&self) -> impl Iterator<Item = MutexGuard<'_, T>> {
        self.0.iter().map(|s| s.0.lock())
    }
}

/// The calling thread's shard: threads take them in turn as they first ask.
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    MINE.with(|mine| *mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_shards_of_their_own_and_a_reader_sees_every_shard() {
        let tallies = std::sync::Arc::new(PerThread::<Vec<u32>>::default());
        let threads: Vec<_> = (0..4u32)
            .map(|n| {
                let tallies = tallies.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        tallies.mine().push(n);
                    }
                    shard()
                })
            })
            .collect();
        let shards: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let mut distinct = shards.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "four threads, four shards: {shards:?}");
        for (n, shard) in shards.iter().enumerate() {
            let kept = tallies.0[*shard].0.lock();
            assert_eq!(kept.len(), 100);
            assert!(kept.iter().all(|k| *k == n as u32));
        }
        let seen: usize = tallies.each().map(|s| s.len()).sum();
        assert_eq!(seen, 400);
    }
}

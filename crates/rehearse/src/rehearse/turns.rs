//! "Serving up to" as the observer last read it, and the buyers waiting for the line
//! to reach their place. A waiting buyer sleeps until its next poll or until its turn,
//! whichever comes first (the public stream tells the buyer app the same way). Waiters
//! are kept by band of places, so that the line moving on wakes only the buyers it
//! reached and those of the band it stands in, not the whole crowd in line: a stadium's
//! line holds a hundred thousand buyers, and the observer reads the line twice a second.

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Places per band: the most buyers a move of the line wakes without reaching them.
const BAND: u64 = 256;

#[derive(Default)]
pub struct Turns {
    serving: AtomicU64,
    /// The bands that have someone waiting, by band number (place / BAND).
    bands: Mutex<BTreeMap<u64, Arc<Notify>>>,
}

impl Turns {
    fn serving(&self) -> u64 {
        self.serving.load(Ordering::SeqCst)
    }

    /// The line serves up to `to`: wakes the buyers it reached. A reading that is not
    /// ahead of the last one wakes nobody.
    pub fn advance(&self, to: u64) {
        if self.serving.fetch_max(to, Ordering::SeqCst) >= to {
            return;
        }
        let band = to / BAND;
        let (passed, current) = {
            let mut bands = self.bands.lock();
            // Bands wholly served are done with; the one the line stands in stays, as
            // some of its buyers are still behind.
            let rest = bands.split_off(&band);
            let passed = std::mem::replace(&mut *bands, rest);
            (passed, bands.get(&band).cloned())
        };
        for n in passed.values().chain(current.iter()) {
            n.notify_waiters();
        }
    }

    /// Returns once the line serves up to `place`.
    pub async fn reached(&self, place: u64) {
        while self.serving() < place {
            let band = self.bands.lock().entry(place / BAND).or_default().clone();
            let mut woken = pin!(band.notified());
            // Listening before looking: a move between the two still wakes us.
            woken.as_mut().enable();
            if self.serving() >= place {
                return;
            }
            woken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn wakes_within(turns: &Arc<Turns>, place: u64, ms: u64) -> bool {
        let t = turns.clone();
        let waiting = tokio::spawn(async move { t.reached(place).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tokio::time::timeout(Duration::from_millis(ms), waiting)
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_buyer_is_woken_when_the_line_reaches_their_place_and_not_before() {
        let turns = Arc::new(Turns::default());
        let t = turns.clone();
        let waiting = tokio::spawn(async move { t.reached(1_000).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // In the same band and in an earlier one: not yet.
        turns.advance(999);
        turns.advance(500);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !waiting.is_finished(),
            "woken before the line reached 1,000"
        );
        turns.advance(1_000);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken once the line reached 1,000")
            .unwrap();
    }

    #[tokio::test]
    async fn a_move_past_many_bands_wakes_every_buyer_it_passed() {
        let turns = Arc::new(Turns::default());
        let places = [1, 255, 256, 5_000, 70_000];
        let waiting: Vec<_> = (places.iter())
            .map(|&p| {
                let t = turns.clone();
                tokio::spawn(async move { t.reached(p).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        turns.advance(100_000);
        for w in waiting {
            tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("every buyer passed is woken")
                .unwrap();
        }
        assert!(turns.bands.lock().is_empty(), "bands passed are let go");
    }

    #[tokio::test]
    async fn a_place_already_served_returns_at_once() {
        let turns = Arc::new(Turns::default());
        turns.advance(10);
        assert!(wakes_within(&turns, 10, 1_000).await);
        assert!(!wakes_within(&turns, 11, 100).await);
    }
}

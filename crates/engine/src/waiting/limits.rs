//! Per-key rate limits (GCRA) on the engine's clock, so tests control time. One cell
//! (a theoretical arrival time) per key in 16 shards; idle cells are swept each tick.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;

use boxoffice_domain::admission::{Limit, gcra};
use boxoffice_domain::{BuyerId, Millis};
use parking_lot::Mutex;

use super::Refusal;

const SHARDS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    JoinIp(IpAddr),
    JoinBuyer(BuyerId),
    StatusBuyer(BuyerId),
    /// Anonymous sign-ups from one client address (unknown addresses share a cell).
    SignupIp(Option<IpAddr>),
    HoldBuyer(BuyerId),
    /// Renewals of a buyer's session token.
    RenewBuyer(BuyerId),
    /// Transfer offers, accepts and withdrawals per buyer.
    TransferBuyer(BuyerId),
}

pub(crate) struct Limiter {
    shards: Vec<Mutex<HashMap<Key, Millis>>>,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl Limiter {
    /// Takes one request of `key` at `now`, or refuses with how long to wait.
    pub(crate) fn check(&self, key: Key, limit: Limit, now: Millis) -> Result<(), Refusal> {
        if limit.per_s == 0 {
            return Ok(());
        }
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let mut shard = self.shards[h.finish() as usize % SHARDS].lock();
        let tat = shard.get(&key).copied().unwrap_or(now);
        match gcra(tat, now, limit) {
            Ok(next) => {
                shard.insert(key, next);
                Ok(())
            }
            Err(retry_after_ms) => Err(Refusal::RateLimited { retry_after_ms }),
        }
    }

    /// Forgets cells whose allowance has fully refilled: they behave as absent ones.
    pub(crate) fn sweep(&self, now: Millis) {
        for shard in &self.shards {
            shard.lock().retain(|_, tat| *tat > now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_has_its_own_allowance_and_a_sweep_forgets_refilled_ones() {
        let l = Limiter::default();
        let limit = Limit { per_s: 1, burst: 2 };
        let (a, b) = (
            Key::JoinBuyer(BuyerId::random()),
            Key::JoinBuyer(BuyerId::random()),
        );
        assert!(l.check(a, limit, Millis(0)).is_ok());
        assert!(l.check(a, limit, Millis(0)).is_ok());
        assert_eq!(
            l.check(a, limit, Millis(0)),
            Err(Refusal::RateLimited {
                retry_after_ms: 1000
            })
        );
        assert!(
            l.check(b, limit, Millis(0)).is_ok(),
            "another key is untouched"
        );
        l.sweep(Millis(5_000));
        assert!(l.shards.iter().all(|s| s.lock().is_empty()));
        let off = Limit { per_s: 0, burst: 0 };
        assert!((0..100).all(|_| l.check(a, off, Millis(0)).is_ok()));
    }
}

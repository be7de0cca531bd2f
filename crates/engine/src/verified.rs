//! A cache of admission tokens already verified. Every hold presents one, and checking
//! it (base64, JSON, HMAC) is the largest piece of engine work on the hold path; a
//! token seen before is recognised by its exact text and re-checked only for expiry.
//! Bounded: when full the cache is emptied, so a flood of distinct tokens costs memory
//! for at most `CAPACITY` of them.

use std::collections::HashMap;

use boxoffice_domain::{BuyerId, EventId, Millis};
use parking_lot::Mutex;

const CAPACITY: usize = 200_000;

#[derive(Clone)]
pub(crate) struct Verified {
    pub event: EventId,
    pub buyer: BuyerId,
    pub session: String,
    pub exp: Millis,
}

#[derive(Default)]
pub(crate) struct VerifiedTokens {
    map: Mutex<HashMap<Box<str>, Verified>>,
}

impl VerifiedTokens {
    /// The verified claims of `token`, if it was verified before and is still valid.
    pub fn get(&self, token: &str, now: Millis) -> Option<Verified> {
        self.map.lock().get(token).filter(|v| v.exp > now).cloned()
    }

    pub fn insert(&self, token: &str, verified: Verified) {
        let mut map = self.map.lock();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(token.into(), verified);
    }
}

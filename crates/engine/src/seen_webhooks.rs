//! Webhook event ids this node has already handled, so a provider delivering the same
//! event again (a retry, a duplicate) is answered from the ledger without asking the
//! provider. Only an optimisation: webhooks are hints (see `webhooks`), so a duplicate
//! that is not recognised (after a restart, on another node, or forgotten) is simply
//! handled again, harmlessly. In memory and bounded: beyond the capacity the oldest id
//! is forgotten.

use std::collections::{HashSet, VecDeque};

use parking_lot::Mutex;

/// Ids remembered: about a day of webhooks at one a second, a few megabytes.
const CAPACITY: usize = 100_000;

pub(crate) struct SeenWebhooks {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    ids: HashSet<Box<str>>,
    oldest_first: VecDeque<Box<str>>,
}

impl Default for SeenWebhooks {
    fn default() -> Self {
        SeenWebhooks::with_capacity(CAPACITY)
    }
}

impl SeenWebhooks {
    pub fn with_capacity(capacity: usize) -> Self {
        SeenWebhooks {
            capacity: capacity.max(1),
            inner: Mutex::default(),
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        self.inner.lock().ids.contains(id)
    }

    pub fn insert(&self, id: &str) {
        let mut inner = self.inner.lock();
        if !inner.ids.insert(id.into()) {
            return;
        }
        inner.oldest_first.push_back(id.into());
        while inner.oldest_first.len() > self.capacity {
            if let Some(old) = inner.oldest_first.pop_front() {
                inner.ids.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_remembered_once_and_the_oldest_is_forgotten_beyond_the_capacity() {
        let seen = SeenWebhooks::with_capacity(2);
        seen.insert("evt_1");
        seen.insert("evt_1");
        seen.insert("evt_2");
        assert!(seen.contains("evt_1") && seen.contains("evt_2"));
        seen.insert("evt_3");
        assert!(!seen.contains("evt_1"), "the oldest goes first");
        assert!(seen.contains("evt_2") && seen.contains("evt_3"));
    }
}

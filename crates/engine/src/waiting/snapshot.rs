//! Each node's copy of the events' waiting-room settings, so the herd's joins are
//! checked without a queue-store read each (in cluster mode, one Redis round trip
//! fewer per join). A copy serves for at most `public_doc_ttl_ms` after it was read,
//! the same bound as the public document that tells buyers which check to pass: a
//! change made on another node reaches this one's checks within that time. A change
//! made through this node, and an opening or closing, forgets the copy at once; a
//! read that started before such a forgetting is not kept (`Generation`), so it cannot
//! put the old settings back. Settings are few and small (one entry per event), and
//! bounded anyway (`MAX_EVENTS`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use boxoffice_domain::{EventId, Millis};
use parking_lot::RwLock;

use super::settings::EventSettings;

/// Events whose settings a node keeps at once; beyond it, expired copies go first, and
/// if none has expired every copy goes (each event then costs one read again).
const MAX_EVENTS: usize = 1_024;

/// The copies, and how many times a copy was forgotten (by any event's change).
#[derive(Default)]
pub(crate) struct SettingsCache {
    copies: RwLock<HashMap<EventId, Copy>>,
    forgotten: AtomicU64,
}

struct Copy {
    read_at: Millis,
    settings: Arc<EventSettings>,
}

/// The cache's count of forgettings when a read began: a copy read before a later
/// forgetting is not kept.
#[derive(Clone, Copy)]
pub(crate) struct Generation(u64);

impl SettingsCache {
    /// The copy of `event`'s settings read less than `ttl_ms` before `now`.
    pub(crate) fn fresh(
        &self,
        event: EventId,
        now: Millis,
        ttl_ms: i64,
    ) -> Option<Arc<EventSettings>> {
        let copies = self.copies.read();
        let copy = copies.get(&event)?;
        let age = now.0 - copy.read_at.0;
        (0..ttl_ms).contains(&age).then(|| copy.settings.clone())
    }

    /// Taken before reading the settings from the store, and handed to `keep` after.
    pub(crate) fn generation(&self) -> Generation {
        Generation(self.forgotten.load(Ordering::SeqCst))
    }

    /// Keeps `settings`, read at `read_at`, unless a copy was forgotten since `read`
    /// began (the settings read may be older than the change that forgot it).
    pub(crate) fn keep(
        &self,
        event: EventId,
        read: Generation,
        read_at: Millis,
        settings: Arc<EventSettings>,
        ttl_ms: i64,
    ) {
        let mut copies = self.copies.write();
        // Under the write lock, so a forgetting either came before this check or waits
        // for the copy to be in, and then removes it.
        if self.forgotten.load(Ordering::SeqCst) != read.0 {
            return;
        }
        if copies.len() >= MAX_EVENTS && !copies.contains_key(&event) {
            copies.retain(|_, c| (0..ttl_ms).contains(&(read_at.0 - c.read_at.0)));
            if copies.len() >= MAX_EVENTS {
                copies.clear();
            }
        }
        copies.insert(event, Copy { read_at, settings });
    }

    /// Drops `event`'s copy: its settings or its sale status changed through this node.
    pub(crate) fn forget(&self, event: EventId) {
        let mut copies = self.copies.write();
        self.forgotten.fetch_add(1, Ordering::SeqCst);
        copies.remove(&event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waiting::WaitingRules;

    fn settings(difficulty: u8) -> Arc<EventSettings> {
        let rules = WaitingRules {
            pow_difficulty: difficulty,
            ..WaitingRules::default()
        };
        Arc::new(EventSettings::parse(&HashMap::new(), rules))
    }

    const TTL: i64 = 500;

    #[test]
    fn a_copy_serves_until_its_ttl_and_not_after() {
        let cache = SettingsCache::default();
        let event = EventId(1);
        cache.keep(event, cache.generation(), Millis(1_000), settings(3), TTL);
        let at = |ms| {
            cache
                .fresh(event, Millis(ms), TTL)
                .map(|s| s.rules.pow_difficulty)
        };
        assert_eq!(at(1_000), Some(3));
        assert_eq!(at(1_499), Some(3));
        assert_eq!(at(1_500), None, "expired");
        assert_eq!(at(999), None, "a clock gone back serves nothing");
        assert_eq!(
            cache.fresh(EventId(2), Millis(1_000), TTL).map(|_| ()),
            None
        );
    }

    #[test]
    fn a_read_that_began_before_a_forgetting_is_not_kept() {
        let cache = SettingsCache::default();
        let event = EventId(1);
        let before = cache.generation();
        cache.forget(event);
        cache.keep(event, before, Millis(1_000), settings(3), TTL);
        assert!(cache.fresh(event, Millis(1_000), TTL).is_none());
        cache.keep(event, cache.generation(), Millis(1_000), settings(4), TTL);
        let kept = cache
            .fresh(event, Millis(1_000), TTL)
            .map(|s| s.rules.pow_difficulty);
        assert_eq!(kept, Some(4));
        cache.forget(event);
        assert!(cache.fresh(event, Millis(1_000), TTL).is_none());
    }

    #[test]
    fn the_copies_are_bounded() {
        let cache = SettingsCache::default();
        for id in 0..(MAX_EVENTS as i64 * 3) {
            cache.keep(
                EventId(id),
                cache.generation(),
                Millis(1_000),
                settings(0),
                TTL,
            );
        }
        assert!(cache.copies.read().len() <= MAX_EVENTS);
        let last = EventId(MAX_EVENTS as i64 * 3 - 1);
        assert!(
            cache.fresh(last, Millis(1_000), TTL).is_some(),
            "the newest stays"
        );
    }
}

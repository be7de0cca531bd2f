//! `VelocityStore` in process: sliding windows as sorted timestamps, clusters as sets,
//! all behind one lock (every operation is a few map lookups). Bounded: a window keeps
//! at most its limit of entries, a cluster at most its cap of members, and past
//! `max_keys` counters or clusters the stale ones are swept; if none is stale the
//! operation fails rather than grow.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use async_trait::async_trait;
use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::{
    Admission, Cluster, Counter, Dimension, Join, Link, Links, MAX_RANKED_CLUSTERS, MAX_STASH_LEN,
    StoreError, VelocityStore,
};
use parking_lot::Mutex;

/// Counters plus clusters kept unless the caller says otherwise.
pub const MAX_KEYS: usize = 1_000_000;

pub struct MemoryVelocity {
    state: Mutex<State>,
    max_keys: usize,
}

#[derive(Default)]
struct State {
    windows: HashMap<(EventId, String), Window>,
    clusters: HashMap<(EventId, Dimension), BTreeMap<String, Members>>,
    cluster_count: usize,
    /// What `stash` keeps: the value and when it lapses.
    stashes: HashMap<(EventId, String), (String, i64)>,
}

struct Window {
    /// Entry times, oldest first.
    times: VecDeque<i64>,
    window_ms: i64,
}

struct Members {
    buyers: HashSet<String>,
    expires_at: i64,
}

impl Window {
    fn prune(&mut self, now: i64) {
        while self
            .times
            .front()
            .is_some_and(|&t| t <= now - self.window_ms)
        {
            self.times.pop_front();
        }
    }

    fn add(&mut self, now: i64, limit: u32) {
        let at = self.times.partition_point(|&t| t <= now);
        self.times.insert(at, now);
        while self.times.len() > limit as usize {
            self.times.pop_front();
        }
    }

    /// When the window frees a place, if it is full.
    fn full_until(&self, limit: u32) -> Option<i64> {
        let (n, limit) = (self.times.len(), (limit as usize).max(1));
        (n >= limit).then(|| self.times[n - limit] + self.window_ms)
    }
}

impl Default for MemoryVelocity {
    fn default() -> Self {
        MemoryVelocity::with_max_keys(MAX_KEYS)
    }
}

impl MemoryVelocity {
    pub fn new() -> Self {
        MemoryVelocity::default()
    }

    pub fn with_max_keys(max_keys: usize) -> Self {
        MemoryVelocity {
            state: Mutex::new(State::default()),
            max_keys,
        }
    }
}

impl State {
    fn keys(&self) -> usize {
        self.windows.len() + self.cluster_count + self.stashes.len()
    }

    /// Makes room for `more` new keys by dropping what has aged out.
    fn room(&mut self, more: usize, max: usize, now: i64) -> Result<(), StoreError> {
        if self.keys() + more <= max {
            return Ok(());
        }
        self.windows.retain(|_, w| {
            w.prune(now);
            !w.times.is_empty()
        });
        for clusters in self.clusters.values_mut() {
            clusters.retain(|_, m| m.expires_at > now);
        }
        self.clusters.retain(|_, c| !c.is_empty());
        self.stashes.retain(|_, (_, until)| *until > now);
        self.cluster_count = self.clusters.values().map(BTreeMap::len).sum();
        if self.keys() + more <= max {
            Ok(())
        } else {
            Err(StoreError::new("the velocity store is full"))
        }
    }

    fn window(&mut self, event: EventId, c: &Counter) -> &mut Window {
        let window_ms = i64::try_from(c.window_ms).unwrap_or(i64::MAX);
        let w = self
            .windows
            .entry((event, c.key.clone()))
            .or_insert_with(|| Window {
                times: VecDeque::new(),
                window_ms,
            });
        w.window_ms = window_ms;
        w
    }

    /// Whether `join.member` is in its cluster, and how many members the cluster has
    /// (a lapsed cluster has none).
    fn standing(&self, event: EventId, join: &Join<'_>, now: i64) -> (bool, u32) {
        let m = self
            .clusters
            .get(&(event, join.dimension))
            .and_then(|c| c.get(join.key))
            .filter(|m| m.expires_at > now);
        m.map_or((false, 0), |m| {
            (m.buyers.contains(join.member), m.buyers.len() as u32)
        })
    }

    fn known(&self, event: EventId, join: &Join<'_>) -> bool {
        self.clusters
            .get(&(event, join.dimension))
            .is_some_and(|c| c.contains_key(join.key))
    }

    /// Adds the member unless the cluster is at its most; room for a new cluster was
    /// made by the caller.
    fn enter(&mut self, event: EventId, join: &Join<'_>, now: i64) -> Link {
        let ttl = i64::try_from(join.ttl_ms).unwrap_or(i64::MAX);
        if !self.known(event, join) {
            self.cluster_count += 1;
        }
        let clusters = self.clusters.entry((event, join.dimension)).or_default();
        let m = clusters
            .entry(join.key.to_owned())
            .or_insert_with(|| Members {
                buyers: HashSet::new(),
                expires_at: now,
            });
        if m.expires_at <= now {
            m.buyers.clear();
        }
        m.expires_at = now.saturating_add(ttl);
        let n = m.buyers.len() as u32;
        if m.buyers.contains(join.member) {
            return Link::Joined(n);
        }
        if join.most.is_some_and(|most| n >= most) {
            return Link::Refused(n);
        }
        if n < join.cap {
            m.buyers.insert(join.member.to_owned());
        }
        Link::Joined(m.buyers.len() as u32)
    }

    fn new_windows(&self, event: EventId, counters: &[Counter]) -> usize {
        let new = |c: &&Counter| !self.windows.contains_key(&(event, c.key.clone()));
        counters.iter().filter(new).count()
    }
}

#[async_trait]
impl VelocityStore for MemoryVelocity {
    async fn check(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Admission, StoreError> {
        let mut st = self.state.lock();
        for (index, c) in counters.iter().enumerate() {
            let Some(w) = st.windows.get_mut(&(event, c.key.clone())) else {
                continue;
            };
            w.prune(now.0);
            if let Some(until) = w.full_until(c.limit) {
                let until = Millis(until);
                return Ok(Admission::Refused { index, until });
            }
        }
        let adding: Vec<&Counter> = counters.iter().filter(|c| c.add).collect();
        let new = adding
            .iter()
            .filter(|c| !st.windows.contains_key(&(event, c.key.clone())))
            .count();
        st.room(new, self.max_keys, now.0)?;
        for c in adding {
            st.window(event, c).add(now.0, c.limit);
        }
        Ok(Admission::Admitted)
    }

    async fn record(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Vec<u32>, StoreError> {
        let mut st = self.state.lock();
        let new = st.new_windows(event, counters);
        st.room(new, self.max_keys, now.0)?;
        let mut counts = Vec::with_capacity(counters.len());
        for c in counters {
            let w = st.window(event, c);
            w.prune(now.0);
            w.add(now.0, c.limit);
            counts.push(u32::try_from(w.times.len()).unwrap_or(u32::MAX));
        }
        Ok(counts)
    }

    async fn link(&self, event: EventId, join: &Join<'_>, now: Millis) -> Result<Link, StoreError> {
        let mut st = self.state.lock();
        if !st.known(event, join) {
            st.room(1, self.max_keys, now.0)?;
        }
        Ok(st.enter(event, join, now.0))
    }

    async fn link_all(
        &self,
        event: EventId,
        joins: &[Join<'_>],
        now: Millis,
    ) -> Result<Links, StoreError> {
        let mut st = self.state.lock();
        for (index, join) in joins.iter().enumerate() {
            let (member, buyers) = st.standing(event, join, now.0);
            if !member && join.most.is_some_and(|most| buyers >= most) {
                return Ok(Links::Refused { index, buyers });
            }
        }
        let new = joins.iter().filter(|j| !st.known(event, j)).count();
        st.room(new, self.max_keys, now.0)?;
        let counts = joins
            .iter()
            .map(|join| match st.enter(event, join, now.0) {
                Link::Joined(n) | Link::Refused(n) => n,
            })
            .collect();
        Ok(Links::Joined(counts))
    }

    async fn stash(
        &self,
        event: EventId,
        key: &str,
        value: &str,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<(), StoreError> {
        if value.len() > MAX_STASH_LEN {
            return Err(StoreError::new("a stashed value is too long"));
        }
        let until = now
            .0
            .saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX));
        let mut st = self.state.lock();
        let slot = (event, key.to_owned());
        if !st.stashes.contains_key(&slot) {
            st.room(1, self.max_keys, now.0)?;
        }
        st.stashes.insert(slot, (value.to_owned(), until));
        Ok(())
    }

    async fn take(
        &self,
        event: EventId,
        key: &str,
        now: Millis,
    ) -> Result<Option<String>, StoreError> {
        let mut st = self.state.lock();
        let taken = st.stashes.remove(&(event, key.to_owned()));
        Ok(taken.and_then(|(value, until)| (until > now.0).then_some(value)))
    }

    async fn clusters(
        &self,
        event: EventId,
        dimension: Dimension,
        limit: usize,
    ) -> Result<Vec<Cluster>, StoreError> {
        let st = self.state.lock();
        let Some(clusters) = st.clusters.get(&(event, dimension)) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<Cluster> = clusters
            .iter()
            .filter(|(_, m)| !m.buyers.is_empty())
            .map(|(key, m)| Cluster {
                key: key.clone(),
                buyers: m.buyers.len() as u32,
            })
            .collect();
        out.sort_by(|a, b| b.buyers.cmp(&a.buyers).then_with(|| a.key.cmp(&b.key)));
        out.truncate(limit.min(MAX_RANKED_CLUSTERS));
        Ok(out)
    }
}

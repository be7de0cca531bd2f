//! Operator settings that outlive the process when the queue store does not. In
//! embedded mode the queue lives in memory, so the per-event waiting-room rules and the
//! admission override would vanish at a restart; this wrapper writes them to a small
//! file in the data directory on every change and replays them into the store at start.
//! Everything else passes straight through to the wrapped store.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, RestoredLine, StoreError};
use boxoffice_engine::waiting::OPERATOR_SETTINGS;

/// event → setting name → value, as kept on disk.
type Kept = BTreeMap<i64, BTreeMap<String, String>>;

pub struct KeptSettings<Q> {
    inner: Q,
    path: PathBuf,
    kept: Mutex<Kept>,
}

impl<Q: QueueStore> KeptSettings<Q> {
    /// Wraps `inner`, first replaying every setting kept in `path` into it.
    pub async fn open(inner: Q, path: PathBuf) -> anyhow::Result<Self> {
        let kept: Kept = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Kept::new(),
            Err(e) => return Err(e.into()),
        };
        for (event, settings) in &kept {
            for (name, value) in settings {
                inner
                    .set_setting(EventId(*event), name, value, false)
                    .await
                    .map_err(|e| anyhow::anyhow!("replaying kept settings: {}", e.0))?;
            }
        }
        Ok(KeptSettings {
            inner,
            path,
            kept: Mutex::new(kept),
        })
    }

    /// Applies `change` and writes the whole file before answering. Operator changes
    /// are rare and the file small, so the write is done in place, under the lock,
    /// which keeps the file's order of changes the same as the store's.
    fn keep(&self, change: impl FnOnce(&mut Kept)) -> Result<(), StoreError> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut kept);
        write_whole(
            &self.path,
            &serde_json::to_vec(&*kept).map_err(StoreError::new)?,
        )
        .map_err(StoreError::new)
    }
}

/// Writes under a private name, syncs, then renames into place: a crash leaves either
/// the old file or the new one, never half of one.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[async_trait]
impl<Q: QueueStore> QueueStore for KeptSettings<Q> {
    async fn join(&self, event: EventId, buyer: BuyerId, open: bool) -> Result<Place, StoreError> {
        self.inner.join(event, buyer, open).await
    }
    async fn join_line(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        self.inner.join_line(event, buyer).await
    }
    async fn claim_line(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        self.inner.claim_line(event, holder, ttl_ms).await
    }
    async fn renew_line_claim(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        self.inner.renew_line_claim(event, holder, ttl_ms).await
    }
    async fn release_line_claim(&self, event: EventId, holder: &str) -> Result<(), StoreError> {
        self.inner.release_line_claim(event, holder).await
    }
    async fn restore_line(&self, event: EventId, line: &RestoredLine) -> Result<(), StoreError> {
        self.inner.restore_line(event, line).await
    }
    async fn place(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        self.inner.place(event, buyer).await
    }
    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        self.inner.state(event).await
    }
    async fn advance(
        &self,
        event: EventId,
        to: u64,
        now: Millis,
    ) -> Result<QueueState, StoreError> {
        self.inner.advance(event, to, now).await
    }
    async fn admitted_at(
        &self,
        event: EventId,
        position: u64,
    ) -> Result<Option<Millis>, StoreError> {
        self.inner.admitted_at(event, position).await
    }
    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        self.inner.set_sold_out(event, sold_out).await
    }
    async fn seal_pool(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        self.inner.seal_pool(event).await
    }
    async fn place_pool(&self, event: EventId, ordered: &[BuyerId]) -> Result<(), StoreError> {
        self.inner.place_pool(event, ordered).await
    }
    async fn pool_members(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<BuyerId>, StoreError> {
        self.inner.pool_members(event, offset, limit).await
    }
    async fn finish(&self, event: EventId, buyer: BuyerId) -> Result<bool, StoreError> {
        self.inner.finish(event, buyer).await
    }
    async fn set_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, StoreError> {
        let stored = self
            .inner
            .set_setting(event, name, value, only_if_absent)
            .await?;
        if OPERATOR_SETTINGS.contains(&name) {
            self.keep(|k| {
                k.entry(event.0)
                    .or_default()
                    .insert(name.into(), stored.clone());
            })?;
        }
        Ok(stored)
    }
    async fn settings(&self, event: EventId) -> Result<HashMap<String, String>, StoreError> {
        self.inner.settings(event).await
    }
    async fn remember_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        owner: BuyerId,
        until: Millis,
        now: Millis,
    ) -> Result<BuyerId, StoreError> {
        self.inner
            .remember_check(event, digest, owner, until, now)
            .await
    }
    async fn remembered_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        now: Millis,
    ) -> Result<Option<BuyerId>, StoreError> {
        self.inner.remembered_check(event, digest, now).await
    }
    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        self.keep(|k| {
            k.remove(&event.0);
        })?;
        self.inner.drop_event(event).await
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_store_memory::InMemoryQueue;

    use super::*;

    async fn reopen(path: &Path) -> KeptSettings<InMemoryQueue> {
        KeptSettings::open(InMemoryQueue::new(), path.to_path_buf())
            .await
            .expect("the kept file reads back")
    }

    #[tokio::test]
    async fn operator_settings_come_back_and_the_rest_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.json");
        let q = reopen(&path).await;
        let e = EventId(7);
        q.set_setting(e, "rules", "{\"pow_difficulty\":3}", false)
            .await
            .unwrap();
        q.set_setting(e, "admission", "{\"rate_per_s\":40}", false)
            .await
            .unwrap();
        q.set_setting(e, "rate", "{\"rate_per_s\":12}", false)
            .await
            .unwrap();
        let back = reopen(&path).await.settings(e).await.unwrap();
        assert_eq!(
            back.get("rules").map(String::as_str),
            Some("{\"pow_difficulty\":3}")
        );
        assert_eq!(
            back.get("admission").map(String::as_str),
            Some("{\"rate_per_s\":40}")
        );
        assert_eq!(
            back.get("rate"),
            None,
            "the tick's rate is recomputed, not kept"
        );
    }

    #[tokio::test]
    async fn a_dropped_event_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.json");
        let q = reopen(&path).await;
        q.set_setting(EventId(1), "rules", "{}", false)
            .await
            .unwrap();
        q.set_setting(EventId(2), "rules", "{}", false)
            .await
            .unwrap();
        q.drop_event(EventId(1)).await.unwrap();
        let q = reopen(&path).await;
        assert!(q.settings(EventId(1)).await.unwrap().is_empty());
        assert_eq!(q.settings(EventId(2)).await.unwrap().len(), 1);
    }
}

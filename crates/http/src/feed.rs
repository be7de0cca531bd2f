//! The availability stream's fan-out: one task per watched event and node reads the
//! one-second snapshot, computes the delta from the previous one once, serializes it
//! once and broadcasts the frame to every viewer, whatever their number. A viewer too
//! slow to keep up is sent a fresh full snapshot instead of the deltas it missed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use boxoffice_domain::{EventId, SeatIndex};
use boxoffice_engine::{AvailabilitySnapshot, availability_delta};
use futures::Stream;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::AppState;
use crate::error::ApiError;
use crate::sse::frame;

/// How often a feed looks at the snapshot (which is itself at most a second old).
const TICK: Duration = Duration::from_secs(1);
/// Frames a viewer may fall behind before it is sent a full snapshot instead.
const BACKLOG: usize = 16;

/// The watched events of this node.
#[derive(Default)]
pub(crate) struct Feeds {
    by_event: Mutex<HashMap<EventId, Arc<Feed>>>,
}

pub(crate) struct Feed {
    event: EventId,
    seats: u32,
    tx: broadcast::Sender<Bytes>,
    /// The last snapshot and its serialized `snapshot` frame. Replaced and broadcast
    /// under this lock, so a viewer joining sees each later delta exactly once.
    latest: Mutex<(Arc<AvailabilitySnapshot>, Bytes)>,
}

/// Which seats are free, as a bitmap: the GET /availability document.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Availability)]
pub struct AvailabilityOut<'a> {
    event_id: EventId,
    /// Number of seats, i.e. meaningful bits in the bitmap.
    seats: u32,
    /// Number of 1 bits.
    free: u32,
    #[schema(schema_with = bitmap_encoding)]
    encoding: &'static str,
    /// Standard base64 (with padding) of ceil(seats/8) bytes. Seat with seat-map
    /// `index` i is free when `(bytes[i >> 3] >> (7 - (i & 7))) & 1 == 1`. Bits past
    /// `seats` are padding. Advisory only: a hold is the only check that counts.
    #[schema(content_encoding = "base64")]
    bitmap: String,
    /// Changes whenever the bitmap does; the ETag without quotes and the SSE event id.
    version: &'a str,
}

/// How the bitmap is encoded: always this one.
const ENCODING: &str = "bitmap-msb-first-base64";

fn bitmap_encoding() -> utoipa::openapi::schema::ObjectBuilder {
    (utoipa::openapi::schema::ObjectBuilder::new())
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some([ENCODING]))
}

/// A change of the availability stream.
#[derive(Serialize)]
pub struct AvailabilityDelta {
    free: Vec<SeatIndex>,
    taken: Vec<SeatIndex>,
    free_count: u32,
}

/// Events whose availability document is kept; beyond it, one is dropped to make room.
const MAX_BODIES: usize = 64;

/// Each event's availability document as last written, with the snapshot it was
/// written from: a stadium's is kilobytes of base64, read by every buyer refused a
/// seat, so it is written once per snapshot and node, not once per request.
#[derive(Default)]
pub(crate) struct Bodies {
    by_event: Mutex<HashMap<EventId, (Arc<AvailabilitySnapshot>, Bytes)>>,
}

impl Bodies {
    /// The document of `snapshot`, written now if the kept one is of another.
    pub(crate) fn get(
        &self,
        id: EventId,
        seats: u32,
        snapshot: &Arc<AvailabilitySnapshot>,
    ) -> Bytes {
        if let Some((of, body)) = self.by_event.lock().get(&id)
            && Arc::ptr_eq(of, snapshot)
        {
            return body.clone();
        }
        let body = Bytes::from(snapshot_body(id, seats, snapshot));
        let mut kept = self.by_event.lock();
        if kept.len() >= MAX_BODIES && !kept.contains_key(&id) {
            let evict = kept.keys().next().copied();
            evict.map(|k| kept.remove(&k));
        }
        kept.insert(id, (snapshot.clone(), body.clone()));
        body
    }
}

pub(crate) fn snapshot_body(id: EventId, seats: u32, s: &AvailabilitySnapshot) -> String {
    let doc = AvailabilityOut {
        event_id: id,
        seats,
        free: s.free,
        encoding: ENCODING,
        bitmap: B64.encode(&s.bits),
        version: &s.version,
    };
    serde_json::to_string(&doc).unwrap_or_default()
}

impl Feed {
    fn new(event: EventId, seats: u32, first: Arc<AvailabilitySnapshot>) -> Feed {
        let frame = frame(
            "snapshot",
            &first.version,
            &snapshot_body(event, seats, &first),
        );
        Feed {
            event,
            seats,
            tx: broadcast::channel(BACKLOG).0,
            latest: Mutex::new((first, frame)),
        }
    }

    /// The current snapshot frame and a receiver of every delta after it.
    fn join(&self) -> (Bytes, broadcast::Receiver<Bytes>) {
        let latest = self.latest.lock();
        (latest.1.clone(), self.tx.subscribe())
    }

    /// Publishes the change from the last snapshot to `next`, if there is one.
    fn advance(&self, next: Arc<AvailabilitySnapshot>) {
        let last = self.latest.lock().0.clone();
        if last.version == next.version {
            return;
        }
        let (free, taken) = availability_delta(&last.bits, &next.bits);
        metrics::counter!("boxoffice_availability_deltas_total").increment(1);
        let delta = AvailabilityDelta {
            free,
            taken,
            free_count: next.free,
        };
        let data = serde_json::to_string(&delta).unwrap_or_default();
        let delta = frame("delta", &next.version, &data);
        let body = snapshot_body(self.event, self.seats, &next);
        let snapshot = frame("snapshot", &next.version, &body);
        let mut latest = self.latest.lock();
        *latest = (next, snapshot);
        // No receivers is not an error: the feed retires at its next tick.
        let _ = self.tx.send(delta);
    }
}

/// One viewer's frames: `first`, then each delta; after falling more than `BACKLOG`
/// frames behind, a fresh snapshot and the deltas after it.
fn viewer(
    first: Bytes,
    rx: broadcast::Receiver<Bytes>,
    feed: Arc<Feed>,
) -> impl Stream<Item = Bytes> + Send + Unpin + 'static {
    let state = (Some(first), rx, feed);
    Box::pin(futures::stream::unfold(
        state,
        |(first, mut rx, feed)| async move {
            if let Some(f) = first {
                return Some((f, (None, rx, feed)));
            }
            match rx.recv().await {
                Ok(f) => Some((f, (None, rx, feed))),
                Err(RecvError::Lagged(_)) => {
                    let (f, rx) = feed.join();
                    Some((f, (None, rx, feed)))
                }
                Err(RecvError::Closed) => None,
            }
        },
    ))
}

/// A viewer's start: the snapshot frame, the deltas after it, and their feed.
type Joined = (Bytes, broadcast::Receiver<Bytes>, Arc<Feed>);

impl AppState {
    /// Frames for one viewer of `event`: the current snapshot, then every delta.
    pub(crate) async fn watch(
        &self,
        event: EventId,
    ) -> Result<impl Stream<Item = Bytes> + Send + Unpin + 'static, ApiError> {
        let (first, rx, feed) = self.join_feed(event).await?;
        Ok(viewer(first, rx, feed))
    }

    /// Joins the event's feed, starting it on first use. Viewers join under the map's
    /// lock, so none can join a feed that its task is retiring.
    async fn join_feed(&self, event: EventId) -> Result<Joined, ApiError> {
        if let Some(f) = self.edge.feeds.by_event.lock().get(&event) {
            let (first, rx) = f.join();
            return Ok((first, rx, f.clone()));
        }
        let seats = self.engine.event(event).await?.event.capacity();
        let first = self.engine.availability(event).await?;
        let mut feeds = self.edge.feeds.by_event.lock();
        let feed = match feeds.get(&event) {
            Some(f) => f.clone(),
            None => {
                let feed = Arc::new(Feed::new(event, seats, first));
                feeds.insert(event, feed.clone());
                tokio::spawn(self.clone().produce(feed.clone()));
                feed
            }
        };
        let (first, rx) = feed.join();
        Ok((first, rx, feed))
    }

    /// The feed's task: a snapshot each tick, until nobody watches or the node stops.
    async fn produce(self, feed: Arc<Feed>) {
        let stop = self.edge.stopping();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            if self.retire_if_unwatched(&feed) {
                return;
            }
            match self.engine.availability(feed.event).await {
                Ok(next) => feed.advance(next),
                Err(e) => {
                    tracing::debug!(event = %feed.event, error = %e, "no availability snapshot")
                }
            }
        }
        self.edge.feeds.by_event.lock().remove(&feed.event);
    }

    /// True (and the feed is gone) when nobody watches any more.
    fn retire_if_unwatched(&self, feed: &Arc<Feed>) -> bool {
        let mut feeds = self.edge.feeds.by_event.lock();
        if feed.tx.receiver_count() > 0 {
            return false;
        }
        if feeds.get(&feed.event).is_some_and(|f| Arc::ptr_eq(f, feed)) {
            feeds.remove(&feed.event);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::Millis;
    use futures::StreamExt;

    use super::*;

    fn snapshot(version: &str, bits: u8) -> Arc<AvailabilitySnapshot> {
        Arc::new(AvailabilitySnapshot {
            bits: vec![bits],
            free: bits.count_ones(),
            version: version.into(),
            taken_at: Millis(0),
        })
    }

    fn head(frame: &Bytes) -> String {
        String::from_utf8_lossy(frame)
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_availability_document_is_written_once_per_snapshot() {
        let bodies = Bodies::default();
        let (v0, v1) = (snapshot("v0", 0xff), snapshot("v1", 0x0f));
        let first = bodies.get(EventId(1), 8, &v0);
        let again = bodies.get(EventId(1), 8, &v0);
        assert_eq!(
            first.as_ptr(),
            again.as_ptr(),
            "the kept document, not a new one"
        );
        assert_eq!(first, Bytes::from(snapshot_body(EventId(1), 8, &v0)));
        let next = bodies.get(EventId(1), 8, &v1);
        assert_eq!(next, Bytes::from(snapshot_body(EventId(1), 8, &v1)));
        for id in 2..=100 {
            bodies.get(EventId(id), 8, &v0);
        }
        assert!(bodies.by_event.lock().len() <= MAX_BODIES, "bounded");
    }

    #[tokio::test]
    async fn a_viewer_that_falls_behind_gets_a_fresh_snapshot_instead_of_the_deltas_it_missed() {
        let feed = Arc::new(Feed::new(EventId(1), 8, snapshot("v0", 0xff)));
        let (first, rx) = feed.join();
        let mut frames = viewer(first, rx, feed.clone());
        assert_eq!(
            head(&frames.next().await.unwrap()),
            "event: snapshot id: v0"
        );
        feed.advance(snapshot("v1", 0x7f));
        assert_eq!(head(&frames.next().await.unwrap()), "event: delta id: v1");
        for i in 0..BACKLOG + 3 {
            feed.advance(snapshot(&format!("w{i}"), i as u8));
        }
        let last = format!("w{}", BACKLOG + 2);
        let frame = frames.next().await.unwrap();
        assert_eq!(head(&frame), format!("event: snapshot id: {last}"));
        let version = format!("\"version\":\"{last}\"");
        assert!(String::from_utf8_lossy(&frame).contains(&version));
        feed.advance(snapshot("x", 0));
        assert_eq!(head(&frames.next().await.unwrap()), "event: delta id: x");
    }
}

//! Server-sent event streams: a cap on how many are open per node and per client
//! address (each open stream holds a connection and a task for as long as the client
//! likes), frames serialized once and shared by every viewer, keep-alive comments, and
//! an end when the server stops, so a stop is not held up by viewers that never leave.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use parking_lot::Mutex;

use crate::code::ErrorCode;
use crate::edge::Edge;
use crate::error::ApiError;

/// Open streams: in all, and per client address (entries leave at zero, so the map is
/// never larger than the node's cap).
pub(crate) struct StreamSlots {
    max: usize,
    max_per_address: usize,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One open stream; its place is given back when the response body is dropped.
pub(crate) struct StreamSlot {
    edge: Arc<Edge>,
    addr: IpAddr,
}

impl StreamSlots {
    pub(crate) fn new(max: usize, max_per_address: usize) -> StreamSlots {
        StreamSlots {
            max,
            max_per_address,
            open: Mutex::new((0, HashMap::new())),
        }
    }
}

fn refuse(reason: &'static str, status: StatusCode, message: &str) -> ApiError {
    metrics::counter!("boxoffice_sse_refused_total", "reason" => reason).increment(1);
    ApiError::with_status(status, ErrorCode::TooManyStreams, message)
}

impl Edge {
    /// A place for one more stream from `addr`: 429 when that address has its share
    /// open, 503 when the node is full or stopping.
    pub(crate) fn open_stream(self: &Arc<Self>, addr: IpAddr) -> Result<StreamSlot, ApiError> {
        if self.stopping().is_cancelled() {
            return Err(ApiError::new(
                ErrorCode::ShuttingDown,
                "this node is stopping; reconnect to another",
            ));
        }
        let slots = &self.streams;
        let mut open = slots.open.lock();
        let mine = open.1.get(&addr).copied().unwrap_or(0);
        if mine >= slots.max_per_address {
            let msg = format!("at most {} open streams per address", slots.max_per_address);
            return Err(refuse("address", StatusCode::TOO_MANY_REQUESTS, &msg));
        }
        if open.0 >= slots.max {
            let msg = "this node has as many open streams as it serves; retry shortly";
            return Err(refuse("node", StatusCode::SERVICE_UNAVAILABLE, msg));
        }
        open.0 += 1;
        open.1.insert(addr, mine + 1);
        metrics::gauge!("boxoffice_sse_streams_open").set(open.0 as f64);
        Ok(StreamSlot {
            edge: self.clone(),
            addr,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.edge.streams.open.lock();
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.addr);
            }
        }
        metrics::gauge!("boxoffice_sse_streams_open").set(open.0 as f64);
    }
}

/// One event, serialized: `event:`, `id:` and a single-line `data:`.
pub(crate) fn frame(event: &str, id: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\nid: {id}\ndata: {data}\n\n"))
}

/// The response for a stream of frames: keep-alive comments while idle, and an end
/// when the server stops; `slot` is held until the client leaves.
pub(crate) fn respond<S>(slot: StreamSlot, frames: S) -> Response
where
    S: Stream<Item = Bytes> + Send + Unpin + 'static,
{
    let stop = slot.edge.stopping();
    let period = slot.edge.keep_alive;
    let keep_alive = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let state = (frames, keep_alive, stop, slot);
    let body = futures::stream::unfold(state, |mut s| async move {
        let frame = tokio::select! {
            biased;
            _ = s.2.cancelled() => return None,
            f = s.0.next() => f?,
            _ = s.1.tick() => Bytes::from_static(b":\n\n"),
        };
        Some((Ok::<_, Infallible>(frame), s))
    });
    let mut res = Response::new(Body::from_stream(body));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

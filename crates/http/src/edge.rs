//! The node's defences at the HTTP edge, shared by every request: the trusted proxies,
//! a cap on requests in flight (load shedding), the request deadline, the cap on open
//! event streams, the per-node caches of expensive public reads, and the stop signal
//! that ends event streams when the server shuts down.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use crate::client_addr::Proxies;
use crate::code::ErrorCode;
use crate::config::HttpConfig;
use crate::error::ApiError;
use crate::feed::Feeds;
use crate::seatmap::SeatMaps;
use crate::sse::StreamSlots;

/// What every route but a probe may answer when the node is full or slow.
pub(crate) const REFUSES: &[ErrorCode] = &[ErrorCode::Overloaded, ErrorCode::RequestTimeout];

pub struct Edge {
    pub(crate) proxies: Proxies,
    in_flight: AtomicUsize,
    max_in_flight: usize,
    request_timeout: Duration,
    pub(crate) keep_alive: Duration,
    pub(crate) streams: StreamSlots,
    pub(crate) feeds: Feeds,
    pub(crate) seat_maps: SeatMaps,
    pub(crate) availability: crate::feed::Bodies,
    /// Paces the operator's audit runs.
    pub(crate) audits: crate::routes::console::AuditGate,
    /// Paces the operator's reads of buyer clusters.
    pub(crate) signal_reads: crate::routes::signals::SignalsGate,
    stop: CancellationToken,
}

/// A request's place among those in flight; given back when dropped. It owns its
/// reference to the edge, so the request's future carries it without a borrow.
pub(crate) struct InFlight(Arc<Edge>);

impl InFlight {
    /// The answer to a request that did not finish within the deadline.
    pub(crate) fn timed_out(&self) -> Response {
        metrics::counter!("boxoffice_http_timeouts_total").increment(1);
        ApiError::new(
            ErrorCode::RequestTimeout,
            format!(
                "the request did not finish within {} ms; retry (a write with \
                 the same Idempotency-Key)",
                self.0.request_timeout.as_millis()
            ),
        )
        .into_response()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Edge {
    pub fn new(config: &HttpConfig) -> Edge {
        // Registered at zero, so a dashboard sees the series before the first refusal.
        metrics::counter!("boxoffice_http_shed_total").increment(0);
        metrics::counter!("boxoffice_http_timeouts_total").increment(0);
        for reason in ["node", "address"] {
            metrics::counter!("boxoffice_sse_refused_total", "reason" => reason).increment(0);
        }
        Edge {
            proxies: Proxies::new(
                config.trusted_proxies.clone(),
                config.forwarded_header,
                config.ipv6_client_prefix,
            ),
            in_flight: AtomicUsize::new(0),
            max_in_flight: config.max_in_flight,
            request_timeout: Duration::from_millis(config.request_timeout_ms),
            keep_alive: Duration::from_millis(config.stream_keep_alive_ms),
            streams: StreamSlots::new(config.max_streams, config.max_streams_per_address),
            feeds: Feeds::default(),
            seat_maps: SeatMaps::default(),
            availability: Default::default(),
            audits: Default::default(),
            signal_reads: Default::default(),
            stop: CancellationToken::new(),
        }
    }

    /// Cancelled when the server begins to stop: event streams end, feeds stop.
    pub fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Requests holding a place now (`boxoffice_http_in_flight` at each scrape).
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
            .load(Ordering::Relaxed)
            .min(self.max_in_flight)
    }

    /// A place among the requests in flight, or none when the node is full.
    pub(crate) fn enter(self: &Arc<Edge>) -> Option<InFlight> {
        let before = self.in_flight.fetch_add(1, Ordering::Relaxed);
        let place = InFlight(self.clone());
        (before < self.max_in_flight).then_some(place)
    }

    /// The deadline of a request that holds a place.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The answer to a request shed because the node is full.
    pub(crate) fn shed(&self) -> Response {
        metrics::counter!("boxoffice_http_shed_total").increment(1);
        ApiError::new(
            ErrorCode::Overloaded,
            "this node is handling as many requests as it can; retry shortly",
        )
        .into_response()
    }
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("in_flight", &self.in_flight.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

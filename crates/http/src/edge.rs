//! The node's defences at the HTTP edge, shared by every request: the trusted proxies,
//! a cap on requests in flight in all and per client address (load shedding), the
//! request deadline, the cap on open event streams, the per-node caches of expensive
//! public reads, and the stop signal that ends event streams when the server shuts
//! down.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::client_addr::Proxies;
use crate::code::ErrorCode;
use crate::config::HttpConfig;
use crate::error::{ApiError, Failure};
use crate::feed::Feeds;
use crate::routes::RouteClass;
use crate::seatmap::SeatMaps;
use crate::sse::StreamSlots;

/// What every route but a probe may answer when the node is full or slow.
pub(crate) const REFUSES: &[ErrorCode] = &[ErrorCode::Overloaded, ErrorCode::RequestTimeout];

pub struct Edge {
    pub(crate) proxies: Proxies,
    in_flight: AtomicUsize,
    max_in_flight: usize,
    /// Requests in flight per client address.
    shares: Shares,
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
    /// One rendering of /metrics at a time, shared by the scrapes waiting for it.
    pub(crate) scrapes: crate::routes::ops::Scrapes,
    stop: CancellationToken,
}

/// A request's place among those in flight (and among its address's, when it took
/// one); given back when dropped. It owns its reference to the edge, so the request's
/// future carries it without a borrow.
pub(crate) struct InFlight {
    edge: Arc<Edge>,
    addr: Option<IpAddr>,
}

/// Why a request found no place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// The node has `max_in_flight` requests in flight.
    Node,
    /// The client's address has `max_in_flight_per_address`.
    Address,
}

/// Requests in flight per client address, exact (an address never pays for another's
/// requests), in shards so that requests of different addresses seldom meet on a lock.
/// An address leaves its shard when its last request ends, so the shards together
/// hold at most the node's requests in flight.
///
/// Only requests that find the node with `max` or more in flight are counted: below
/// that no address can have more than its share, and nearly every request of a node
/// that answers promptly passes without touching the shards. Requests that entered
/// uncounted are at most `max` at any time (the last of them to enter found fewer than
/// `max` in flight, the others among them), so one address holds at most twice its
/// share.
struct Shares {
    max: usize,
    shards: [Mutex<HashMap<IpAddr, u32>>; SHARDS],
}

const SHARDS: usize = 16;

impl Shares {
    fn new(max: usize) -> Shares {
        Shares {
            max,
            shards: std::array::from_fn(|_| Mutex::default()),
        }
    }

    /// The shard of `addr`: by its last bytes, which differ between clients. A client
    /// may choose its shard; that costs it nothing and gains it nothing, as every
    /// address is counted apart.
    fn shard(&self, addr: &IpAddr) -> &Mutex<HashMap<IpAddr, u32>> {
        let low = match addr {
            IpAddr::V4(v4) => u32::from(*v4) as usize,
            // The last 64 bits are cut off by `ipv6_client_prefix` unless it is longer.
            IpAddr::V6(v6) => (v6.to_bits() >> 64) as usize ^ v6.to_bits() as usize,
        };
        &self.shards[low % SHARDS]
    }

    /// One more request of `addr`, unless it has its share in flight.
    fn take(&self, addr: IpAddr) -> bool {
        let mut shard = self.shard(&addr).lock();
        let n = shard.entry(addr).or_insert(0);
        if *n as usize >= self.max {
            return false;
        }
        *n += 1;
        true
    }

    fn give_back(&self, addr: IpAddr) {
        let mut shard = self.shard(&addr).lock();
        if let Entry::Occupied(mut n) = shard.entry(addr) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove();
            }
        }
    }
}

impl InFlight {
    /// The answer to a request that did not finish within the deadline.
    pub(crate) fn timed_out(&self) -> Response {
        metrics::counter!("boxoffice_http_timeouts_total").increment(1);
        ApiError::new(
            ErrorCode::RequestTimeout,
            format!(
                "the request did not finish within {} ms; retry (a write with \
                 the same Idempotency-Key)",
                self.edge.request_timeout.as_millis()
            ),
        )
        .into_response()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.edge.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(addr) = self.addr {
            self.edge.shares.give_back(addr);
        }
    }
}

impl Edge {
    pub fn new(config: &HttpConfig) -> Edge {
        // Registered at zero, so a dashboard sees the series before the first refusal.
        metrics::counter!("boxoffice_http_shed_total").increment(0);
        metrics::counter!("boxoffice_http_shed_per_address_total").increment(0);
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
            shares: Shares::new(config.max_in_flight_per_address),
            request_timeout: Duration::from_millis(config.request_timeout_ms),
            keep_alive: Duration::from_millis(config.stream_keep_alive_ms),
            streams: StreamSlots::new(config.max_streams, config.max_streams_per_address),
            feeds: Feeds::default(),
            seat_maps: SeatMaps::default(),
            availability: Default::default(),
            audits: Default::default(),
            signal_reads: Default::default(),
            scrapes: Default::default(),
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

    /// A place among the requests in flight for a request of `addr`, or what is full:
    /// the node, or the address's share.
    pub(crate) fn enter(self: &Arc<Edge>, addr: IpAddr) -> Result<InFlight, Full> {
        let before = self.in_flight.fetch_add(1, Ordering::Relaxed);
        let mut place = InFlight {
            edge: self.clone(),
            addr: None,
        };
        if before >= self.max_in_flight {
            return Err(Full::Node);
        }
        // Counted per address only once the node is busy (`Shares`).
        if before >= self.shares.max {
            if !self.shares.take(addr) {
                return Err(Full::Address);
            }
            place.addr = Some(addr);
        }
        Ok(place)
    }

    /// The deadline of a request that holds a place.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The answer to a request shed because the node, or its address's share, is
    /// full: JSON with the code `overloaded`, or for a page (`RouteClass::Page`) a page
    /// saying so that loads itself again (`busy_page`).
    pub(crate) fn shed(&self, full: Full, class: RouteClass) -> Response {
        let (status, message) = match full {
            Full::Node => {
                metrics::counter!("boxoffice_http_shed_total").increment(1);
                let message = "this node is handling as many requests as it can; retry shortly";
                (StatusCode::SERVICE_UNAVAILABLE, message.to_owned())
            }
            Full::Address => {
                metrics::counter!("boxoffice_http_shed_per_address_total").increment(1);
                let message = format!(
                    "this node is handling {} requests from your address; retry once one \
                     has finished",
                    self.shares.max
                );
                (StatusCode::TOO_MANY_REQUESTS, message)
            }
        };
        if class == RouteClass::Page {
            return busy_page(status, &message);
        }
        ApiError::with_status(status, ErrorCode::Overloaded, message).into_response()
    }
}

/// Seconds a shed page waits before it loads itself again: a few, and not the same for
/// every browser, so that the pages shed together do not all come back at one moment.
fn page_retry_s() -> u64 {
    rand::random_range(3..=8)
}

/// The shed page's one script: after the page's wait, a reload of the page's own
/// address. A reload keeps the address's fragment (the app's `/#/events/5`), where a
/// refresh to the same address would only move to the fragment and a refresh to
/// another one loses it.
const BUSY_RELOAD: &str =
    "setTimeout(function(){location.reload()},1000*document.body.dataset.wait)";

/// The shed page's policy: nothing at all but its one script, allowed by its digest.
static BUSY_POLICY: std::sync::LazyLock<HeaderValue> = std::sync::LazyLock::new(|| {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest =
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(BUSY_RELOAD));
    let policy =
        format!("default-src 'none'; script-src 'sha256-{digest}'; frame-ancestors 'none'");
    HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("default-src 'none'"))
});

/// A shed page: what a person sees instead of the app while the node is full, which
/// loads itself again after `Retry-After`, at the address the person asked for,
/// fragment and all (`BUSY_RELOAD`). Without scripts, a refresh in the page itself does
/// it, naming the page with a query the page ignores (`?retry`): a refresh to the page's
/// own address would be no reload at all for an address with a fragment, only a move to
/// the fragment, so that one starts the app at its first page. Never kept by a cache,
/// and carrying the refusal's code for the log like any refusal.
fn busy_page(status: StatusCode, message: &str) -> Response {
    let wait = page_retry_s();
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <noscript><meta http-equiv=\"refresh\" content=\"{wait}; url=?retry\"></noscript>\
         <title>Very busy</title></head>\
         <body data-wait=\"{wait}\"><h1>Very busy right now</h1><p>So many people are here at \
         once that this page could not be served. It will load again by itself in a few \
         seconds; nothing you have done is lost, and a place in a queue is kept.</p>\
         <script>{BUSY_RELOAD}</script></body></html>\n"
    );
    let mut res = (status, html).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from(wait));
    crate::routes::web::page_headers(h, "no-store", BUSY_POLICY.clone());
    res.extensions_mut().insert(Failure {
        code: ErrorCode::Overloaded,
        detail: Some(message.to_owned()),
    });
    res
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("in_flight", &self.in_flight.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(max: usize, per_address: usize) -> Arc<Edge> {
        Arc::new(Edge::new(&HttpConfig {
            max_in_flight: max,
            max_in_flight_per_address: per_address,
            ..HttpConfig::default()
        }))
    }

    fn counted(edge: &Edge) -> usize {
        let shards = edge.shares.shards.iter();
        shards
            .map(|s| s.lock().values().sum::<u32>() as usize)
            .sum()
    }

    #[test]
    fn a_shed_page_is_a_page_that_loads_itself_again_and_a_shed_call_stays_json() {
        let edge = edge(1, 1);
        for (full, status) in [
            (Full::Node, StatusCode::SERVICE_UNAVAILABLE),
            (Full::Address, StatusCode::TOO_MANY_REQUESTS),
        ] {
            let page = edge.shed(full, RouteClass::Page);
            assert_eq!(page.status(), status);
            let h = page.headers();
            assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
            assert_eq!(h[header::CACHE_CONTROL], "no-store");
            // Nothing is allowed but the page's one script, by its digest.
            let policy = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            let digest = {
                use base64::Engine as _;
                use sha2::Digest as _;
                let d = sha2::Sha256::digest(BUSY_RELOAD);
                base64::engine::general_purpose::STANDARD.encode(d)
            };
            assert_eq!(
                policy,
                format!("default-src 'none'; script-src 'sha256-{digest}'; frame-ancestors 'none'")
            );
            let wait: u64 = h[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
            assert!((3..=8).contains(&wait), "waits {wait} s");
            let failure = page
                .extensions()
                .get::<Failure>()
                .expect("the code for the log");
            assert_eq!(failure.code, ErrorCode::Overloaded);
            let body = futures::executor::block_on(axum::body::to_bytes(page.into_body(), 4096));
            let body = String::from_utf8(body.unwrap().to_vec()).unwrap();
            // The script reloads after the page's wait; without scripts, the refresh.
            let script = format!("<script>{BUSY_RELOAD}</script>");
            assert!(body.contains(&script), "{body}");
            assert_eq!(body.matches("<script").count(), 1, "{body}");
            assert!(
                body.contains(&format!("<body data-wait=\"{wait}\">")),
                "{body}"
            );
            let refresh = format!(
                "<noscript><meta http-equiv=\"refresh\" content=\"{wait}; url=?retry\"></noscript>"
            );
            assert!(body.contains(&refresh), "{body}");

            let call = edge.shed(full, RouteClass::Api);
            assert_eq!(call.status(), status);
            assert_eq!(call.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(call.headers()[header::RETRY_AFTER], "1");
            let body = futures::executor::block_on(axum::body::to_bytes(call.into_body(), 4096));
            let json: serde_json::Value = serde_json::from_slice(&body.unwrap()).unwrap();
            assert_eq!(json["error"], "overloaded");
        }
    }

    #[test]
    fn an_address_is_counted_once_the_node_is_busy_and_leaves_nothing_behind() {
        let edge = edge(8, 2);
        let (a, b): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "2001:db8::".parse().unwrap());
        // Below the share in flight nobody is counted.
        let uncounted: Vec<_> = (0..2).map(|_| edge.enter(a).unwrap()).collect();
        assert_eq!(counted(&edge), 0);
        let mut full: Vec<_> = (0..2).map(|_| edge.enter(a).unwrap()).collect();
        assert_eq!(counted(&edge), 2);
        assert_eq!(edge.enter(a).err(), Some(Full::Address));
        assert_eq!(edge.in_flight(), 4, "a refusal gives its place back");
        let other: Vec<_> = (0..2).map(|_| edge.enter(b).unwrap()).collect();
        assert_eq!(edge.enter(b).err(), Some(Full::Address));
        // A counted request that ends frees a place of its address's.
        full.pop();
        full.push(edge.enter(a).unwrap());
        let filler: Vec<_> = (0..2)
            .map(|i| edge.enter(IpAddr::from([198, 51, 100, i])).unwrap())
            .collect();
        assert_eq!(
            edge.enter(IpAddr::from([203, 0, 113, 1])).err(),
            Some(Full::Node)
        );
        drop((uncounted, full, other, filler));
        assert_eq!(edge.in_flight(), 0);
        assert!(
            edge.shares.shards.iter().all(|s| s.lock().is_empty()),
            "no address is left behind"
        );
    }
}

//! Settings of the HTTP edge: which proxies are believed about a client's address, and
//! the limits that keep slow, abundant or long-lived clients from exhausting a node.

use ipnet::IpNet;
use serde::Deserialize;

/// `[http]` in the server's configuration; every field has a documented default.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Load balancers and proxies (CIDRs such as `10.0.0.0/8`) whose forwarding header
    /// names the client. A request from any other peer is attributed to that peer.
    /// Default: none.
    pub trusted_proxies: Vec<IpNet>,
    /// The header the trusted proxies append the client's address to. Default
    /// `x-forwarded-for`; `forwarded` reads RFC 7239 `for=` parameters instead.
    pub forwarded_header: ForwardedHeader,
    /// How many leading bits of an IPv6 client address name the client for every
    /// per-address limit (joins, sign-ups, event streams, proof-of-work): a subscriber
    /// or a cloud host is given a whole /64, and would otherwise get an allowance per
    /// address it rotates through. 16-128; IPv4 addresses are always whole. Default 64.
    pub ipv6_client_prefix: u8,
    /// A client must send a request's headers within this long, counted from the end
    /// of its previous request on the connection, so this is also how long an idle
    /// keep-alive connection is kept. Keep it above the idle timeout of the load
    /// balancer's (or client's) connection pool, or a request sent on a connection just
    /// being closed fails. Default 75,000 ms.
    pub header_read_timeout_ms: u64,
    /// A response (not the body of an event stream) must be ready within this long,
    /// reading the request body included; otherwise 503 `request_timeout`. Longer than
    /// a checkout's provider calls. Default 30,000 ms.
    pub request_timeout_ms: u64,
    /// Requests handled at once by this node; above it, 503 `overloaded` with
    /// Retry-After. Health, readiness and metrics are never shed. Default 4,096.
    pub max_in_flight: usize,
    /// Requests handled at once for one client address (as `trusted_proxies` and
    /// `ipv6_client_prefix` name it), counted while the node has at least this many in
    /// flight; above it, 429 `overloaded` with Retry-After, so one client holding
    /// requests open (slow bodies, say) takes at most twice this of `max_in_flight`'s
    /// places. Default 512.
    pub max_in_flight_per_address: usize,
    /// Event streams (SSE) open at once on this node; above it, 503
    /// `too_many_streams`. Default 10,000.
    pub max_streams: usize,
    /// Event streams open at once per client address; above it, 429
    /// `too_many_streams`. Default 32.
    pub max_streams_per_address: usize,
    /// After a stop signal, event streams end at once, requests in progress and the
    /// workers get this long to finish, and what is left is closed. Default 10,000 ms.
    pub shutdown_grace_ms: u64,
    /// A comment is sent on idle event streams this often, so proxies keep them
    /// open. Default 15,000 ms.
    pub stream_keep_alive_ms: u64,
    /// Connections the kernel queues for this node before it accepts them. A burst of
    /// new connections larger than the queue is reset by the kernel before the node
    /// sees it (the opening minute of an on-sale is such a burst). The kernel caps it
    /// at `net.core.somaxconn`. Default 8,192.
    pub listen_backlog: u32,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    #[default]
    XForwardedFor,
    Forwarded,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            trusted_proxies: Vec::new(),
            forwarded_header: ForwardedHeader::XForwardedFor,
            ipv6_client_prefix: 64,
            header_read_timeout_ms: 75_000,
            request_timeout_ms: 30_000,
            max_in_flight: 4_096,
            max_in_flight_per_address: 512,
            max_streams: 10_000,
            max_streams_per_address: 32,
            shutdown_grace_ms: 10_000,
            stream_keep_alive_ms: 15_000,
            listen_backlog: 8_192,
        }
    }
}

impl HttpConfig {
    /// Rejects settings that would stop the node from serving anything.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("http.header_read_timeout_ms", self.header_read_timeout_ms),
            ("http.request_timeout_ms", self.request_timeout_ms),
            ("http.max_in_flight", self.max_in_flight as u64),
            (
                "http.max_in_flight_per_address",
                self.max_in_flight_per_address as u64,
            ),
            ("http.max_streams", self.max_streams as u64),
            (
                "http.max_streams_per_address",
                self.max_streams_per_address as u64,
            ),
            ("http.stream_keep_alive_ms", self.stream_keep_alive_ms),
            ("http.listen_backlog", u64::from(self.listen_backlog)),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        if !(16..=128).contains(&self.ipv6_client_prefix) {
            return Err(format!(
                "http.ipv6_client_prefix must be 16-128 (bits of an IPv6 address that name a client), not {}",
                self.ipv6_client_prefix
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_no_requests_in_flight_per_address_is_refused_by_name() {
        let config = HttpConfig {
            max_in_flight_per_address: 0,
            ..HttpConfig::default()
        };
        let refused = config.validate().expect_err("a node serving nobody");
        assert!(
            refused.contains("http.max_in_flight_per_address"),
            "{refused}"
        );
        assert!(HttpConfig::default().validate().is_ok());
    }
}

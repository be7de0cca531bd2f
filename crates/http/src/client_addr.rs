//! The client's address, for every per-address decision (rate limits, proof-of-work
//! challenges, stream caps). It is the TCP peer, unless the peer is a trusted proxy:
//! then the proxies' forwarding header is read from the right, each trusted hop is
//! skipped, and the first untrusted address is the client. Only the right end of the
//! header was written by proxies we trust, so whatever a client put to the left of it
//! is never reached. A header that cannot be read there falls back to the peer.
//!
//! An IPv6 client is its network, not its address: one subscriber or one cloud host is
//! given a whole /64 (2^64 addresses to rotate through), so a per-address limit keyed
//! on the full address would give it as many allowances as it cares to use. The
//! address is cut to its first `http.ipv6_client_prefix` bits (64 unless set) before
//! any decision sees it; IPv4 addresses (and IPv4-mapped IPv6 ones) are kept whole.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};
use ipnet::IpNet;

use crate::AppState;
use crate::config::ForwardedHeader;
use crate::edge::Edge;
use crate::front::Routed;

/// The address a request is attributed to (for IPv6, its network: see above).
/// In-process requests without a TCP peer (tests driving the router directly) share
/// the unspecified address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The client of `req` as `edge`'s trusted proxies say.
    pub(crate) fn of(edge: &Edge, req: &Request) -> ClientAddr {
        ClientAddr::from_parts(edge, req.extensions(), req.headers())
    }

    fn from_parts(edge: &Edge, extensions: &Extensions, headers: &HeaderMap) -> ClientAddr {
        let peer = extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        ClientAddr(edge.proxies.client(peer, headers))
    }
}

/// The address the edge named for the request's share in flight (`front`), or named
/// now for a route the edge does not count.
impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = Infallible;
    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, Infallible> {
        Ok(ClientAddr::of_parts(st, parts))
    }
}

impl ClientAddr {
    pub(crate) fn of_parts(st: &AppState, parts: &Parts) -> ClientAddr {
        if let Some(named) = parts.extensions.get::<Routed>().and_then(|r| r.addr) {
            return named;
        }
        ClientAddr::from_parts(&st.edge, &parts.extensions, &parts.headers)
    }
}

/// The trusted proxies and the header they write, and how much of an IPv6 address
/// names a client.
pub(crate) struct Proxies {
    nets: Vec<IpNet>,
    header: ForwardedHeader,
    /// The bits of an IPv6 address kept (`http.ipv6_client_prefix`).
    v6_prefix: u8,
}

impl Proxies {
    pub(crate) fn new(nets: Vec<IpNet>, header: ForwardedHeader, v6_prefix: u8) -> Proxies {
        Proxies {
            nets,
            header,
            v6_prefix: v6_prefix.min(128),
        }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// The client behind `peer`, given the request's headers: an IPv4 address, or an
    /// IPv6 network's first address.
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        let client = if self.nets.is_empty() || !self.trusts(peer) {
            peer
        } else {
            self.walk(headers).unwrap_or(peer)
        };
        match client {
            IpAddr::V6(v6) => {
                let kept = u128::MAX.checked_shl(128 - u32::from(self.v6_prefix));
                IpAddr::V6((v6.to_bits() & kept.unwrap_or(0)).into())
            }
            v4 => v4,
        }
    }

    /// The first untrusted hop from the right; with every hop trusted, the leftmost
    /// (the request started inside the trusted network). None when the header is
    /// missing or a hop before the answer cannot be read.
    fn walk(&self, headers: &HeaderMap) -> Option<IpAddr> {
        let name = match self.header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        };
        let mut furthest = None;
        for line in headers.get_all(name).iter().rev() {
            for hop in line.to_str().ok()?.rsplit(',') {
                let ip = match self.header {
                    ForwardedHeader::XForwardedFor => node(hop),
                    ForwardedHeader::Forwarded => forwarded_for(hop),
                }?
                .to_canonical();
                if !self.trusts(ip) {
                    return Some(ip);
                }
                furthest = Some(ip);
            }
        }
        furthest
    }
}

/// The `for=` node of one RFC 7239 forwarded-element (`for=192.0.2.1;proto=https`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then(|| node(value))?
    })
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:4711`, possibly quoted. Obfuscated identifiers
/// and `unknown` name no address.
fn node(raw: &str) -> Option<IpAddr> {
    let s = raw.trim();
    let s = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s);
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    let bracketed = s.strip_prefix('[').and_then(|s| s.strip_suffix(']'))?;
    bracketed.parse().ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn proxies(header: ForwardedHeader) -> Proxies {
        let nets = ["10.0.0.0/8", "2001:db8:ffff::/48"];
        Proxies::new(
            nets.iter().map(|n| n.parse().unwrap()).collect(),
            header,
            64,
        )
    }

    fn headers(name: &'static str, lines: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append(name, HeaderValue::from_str(l).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let h = headers("x-forwarded-for", &["203.0.113.9"]);
        assert_eq!(p.client(ip("198.51.100.7"), &h), ip("198.51.100.7"));
    }

    #[test]
    fn behind_trusted_hops_the_first_untrusted_address_from_the_right_is_the_client() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        // The client forged the first entry; the proxies appended the rest.
        let h = headers("x-forwarded-for", &["1.1.1.1, 203.0.113.9", "10.1.2.3"]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), ip("203.0.113.9"));
    }

    #[test]
    fn a_malformed_or_missing_header_falls_back_to_the_peer() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let peer = ip("10.0.0.1");
        assert_eq!(p.client(peer, &HeaderMap::new()), peer);
        let h = headers("x-forwarded-for", &["203.0.113.9, not-an-address"]);
        assert_eq!(p.client(peer, &h), peer);
        // Garbage to the left of the client is never read.
        let h = headers("x-forwarded-for", &["garbage, 203.0.113.9"]);
        assert_eq!(p.client(peer, &h), ip("203.0.113.9"));
    }

    #[test]
    fn a_chain_of_trusted_hops_only_names_its_furthest_hop() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let h = headers("x-forwarded-for", &["10.9.9.9, 10.1.1.1"]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), ip("10.9.9.9"));
    }

    #[test]
    fn rfc_7239_nodes_with_ports_quotes_and_brackets_are_read() {
        let p = proxies(ForwardedHeader::Forwarded);
        let h = headers(
            "forwarded",
            &[
                "for=1.1.1.1, for=\"[2001:db8::17]:4711\";proto=https",
                "for=10.2.2.2:80;by=10.0.0.1",
            ],
        );
        // 2001:db8::17, as its /64.
        assert_eq!(p.client(ip("10.0.0.1"), &h), ip("2001:db8::"));
        let h = headers("forwarded", &["for=unknown"]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), ip("10.0.0.1"));
        // X-Forwarded-For is not read when the proxies write Forwarded.
        let h = headers("x-forwarded-for", &["203.0.113.9"]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), ip("10.0.0.1"));
    }

    #[test]
    fn an_ipv6_client_is_its_network_so_rotating_addresses_in_it_changes_nothing() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let none = HeaderMap::new();
        let net = ip("2001:db8:1:2::");
        for peer in [
            "2001:db8:1:2::1",
            "2001:db8:1:2:ffff:ffff:ffff:ffff",
            "2001:db8:1:2::",
        ] {
            assert_eq!(p.client(ip(peer), &none), net, "{peer}");
        }
        assert_eq!(p.client(ip("2001:db8:1:3::1"), &none), ip("2001:db8:1:3::"));
        // Behind a trusted proxy the forwarded client is cut the same way.
        let h = headers("x-forwarded-for", &["2001:db8:1:2::99"]);
        assert_eq!(p.client(ip("10.0.0.1"), &h), net);
        // IPv4, mapped or not, is kept whole; so is IPv6 at /128, and /0 is one client.
        assert_eq!(p.client(ip("::ffff:203.0.113.9"), &none), ip("203.0.113.9"));
        let whole = Proxies::new(Vec::new(), ForwardedHeader::XForwardedFor, 128);
        assert_eq!(whole.client(ip("2001:db8::1"), &none), ip("2001:db8::1"));
        let one = Proxies::new(Vec::new(), ForwardedHeader::XForwardedFor, 0);
        assert_eq!(one.client(ip("2001:db8::1"), &none), ip("::"));
    }

    #[test]
    fn ipv4_mapped_peers_and_hops_are_compared_as_ipv4() {
        let p = proxies(ForwardedHeader::XForwardedFor);
        let h = headers("x-forwarded-for", &["::ffff:203.0.113.9"]);
        assert_eq!(p.client(ip("::ffff:10.0.0.1"), &h), ip("203.0.113.9"));
    }
}

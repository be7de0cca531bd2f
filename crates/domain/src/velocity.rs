//! Payment velocity and buyer signals of one event: how many checkouts a buyer, a
//! payment method and a client network may start and have declined in a sliding window
//! before the provider is called again, when many declines lock a buyer out, and how
//! many distinct buyers one device, network or payment method may serve before it is
//! flagged or refused. Off unless the event's sale settings name it; `{}` turns every
//! limit on at its default.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The longest window and lockout an event may set: a week.
pub const MAX_WINDOW_S: u32 = 7 * 86_400;
/// The largest count a limit or threshold may name.
pub const MAX_LIMIT: u32 = 100_000;

/// Velocity limits and signal thresholds of an event. A group left out takes its
/// defaults; inside a group, a limit left out or null is off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VelocityRules {
    /// The sliding window (seconds) the attempt and decline limits count in.
    #[schema(minimum = 1, maximum = 604_800)]
    pub window_s: u32,
    /// Checkouts started and declined per buyer in the window (default 10 and 3).
    pub per_buyer: VelocityLimits,
    /// Per payment method (its fingerprint) in the window (default 5 and 3).
    pub per_card: VelocityLimits,
    /// Per client network in the window (default 300 and 30).
    pub per_network: VelocityLimits,
    /// Declines of one buyer within `lockout_s` that lock the buyer out of the event's
    /// checkouts (default 5; null: never).
    #[schema(minimum = 1, maximum = 100_000)]
    pub lockout_declines: Option<u32>,
    /// How long (seconds) the declines that lock a buyer out are remembered.
    #[schema(minimum = 1, maximum = 604_800)]
    pub lockout_s: u32,
    /// The prefix length that makes an IPv4 address a network (default 24).
    #[schema(minimum = 8, maximum = 32)]
    pub ipv4_prefix: u8,
    /// The prefix length that makes an IPv6 address a network (default 56).
    #[schema(minimum = 16, maximum = 128)]
    pub ipv6_prefix: u8,
    /// Distinct buyers per device key, client network and payment method.
    pub signals: SignalThresholds,
}

impl Default for VelocityRules {
    fn default() -> Self {
        VelocityRules {
            window_s: 600,
            per_buyer: VelocityLimits::new(10, 3),
            per_card: VelocityLimits::new(5, 3),
            per_network: VelocityLimits::new(300, 30),
            lockout_declines: Some(5),
            lockout_s: 86_400,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            signals: SignalThresholds::default(),
        }
    }
}

/// How many checkouts may start, and how many may have been declined, in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VelocityLimits {
    #[schema(minimum = 1, maximum = 100_000)]
    pub attempts: Option<u32>,
    #[schema(minimum = 1, maximum = 100_000)]
    pub declines: Option<u32>,
}

impl VelocityLimits {
    pub const fn new(attempts: u32, declines: u32) -> VelocityLimits {
        VelocityLimits {
            attempts: Some(attempts),
            declines: Some(declines),
        }
    }
}

/// Distinct buyers one device key, one client network or one payment method may serve
/// in the event before it is flagged (counted and listed) or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SignalThresholds {
    /// Default: flag at 3, refuse at 5.
    pub per_device: SignalThreshold,
    /// Default: flag at 50, never refuse (many honest buyers share a network).
    pub per_network: SignalThreshold,
    /// Default: flag at 2, refuse at 3.
    pub per_card: SignalThreshold,
}

impl Default for SignalThresholds {
    fn default() -> Self {
        SignalThresholds {
            per_device: SignalThreshold::new(Some(3), Some(5)),
            per_network: SignalThreshold::new(Some(50), None),
            per_card: SignalThreshold::new(Some(2), Some(3)),
        }
    }
}

/// From how many distinct buyers a cluster is flagged, and from how many a further
/// buyer is refused. Null: never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalThreshold {
    #[schema(minimum = 1, maximum = 100_000)]
    pub flag_at: Option<u32>,
    /// A buyer who would make the cluster this large is refused.
    #[schema(minimum = 2, maximum = 100_000)]
    pub refuse_at: Option<u32>,
}

impl SignalThreshold {
    pub const fn new(flag_at: Option<u32>, refuse_at: Option<u32>) -> SignalThreshold {
        SignalThreshold { flag_at, refuse_at }
    }

    /// Whether a cluster of `buyers` distinct buyers is flagged.
    pub fn flags(&self, buyers: u32) -> bool {
        self.flag_at.is_some_and(|f| buyers >= f)
    }
}

impl VelocityRules {
    pub fn validate(&self) -> Result<(), String> {
        let window = |name: &str, s: u32| {
            if (1..=MAX_WINDOW_S).contains(&s) {
                Ok(())
            } else {
                Err(format!("velocity.{name} must be 1-{MAX_WINDOW_S}"))
            }
        };
        window("window_s", self.window_s)?;
        window("lockout_s", self.lockout_s)?;
        let counts = [
            self.per_buyer.attempts,
            self.per_buyer.declines,
            self.per_card.attempts,
            self.per_card.declines,
            self.per_network.attempts,
            self.per_network.declines,
            self.lockout_declines,
        ];
        if counts
            .iter()
            .flatten()
            .any(|&n| !(1..=MAX_LIMIT).contains(&n))
        {
            return Err(format!("velocity limits must be 1-{MAX_LIMIT} (or null)"));
        }
        if !(8..=32).contains(&self.ipv4_prefix) || !(16..=128).contains(&self.ipv6_prefix) {
            return Err("velocity.ipv4_prefix must be 8-32 and ipv6_prefix 16-128".into());
        }
        let s = &self.signals;
        for t in [s.per_device, s.per_network, s.per_card] {
            let flag_ok = t.flag_at.is_none_or(|f| (1..=MAX_LIMIT).contains(&f));
            let refuse_ok = t.refuse_at.is_none_or(|r| (2..=MAX_LIMIT).contains(&r));
            if !flag_ok || !refuse_ok {
                return Err(format!(
                    "velocity.signals: flag_at must be 1-{MAX_LIMIT} and refuse_at 2-{MAX_LIMIT}"
                ));
            }
        }
        Ok(())
    }

    /// The network `ip` belongs to, as text (`203.0.113.0/24`); IPv4-mapped IPv6
    /// addresses count as IPv4.
    pub fn network_of(&self, ip: IpAddr) -> String {
        network(ip, self.ipv4_prefix, self.ipv6_prefix)
    }
}

/// `ip` masked to its network's prefix, as text.
pub fn network(ip: IpAddr, v4_prefix: u8, v6_prefix: u8) -> String {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            let p = v4_prefix.min(32);
            let mask = u32::MAX.checked_shl(32 - u32::from(p)).unwrap_or(0);
            let net = std::net::Ipv4Addr::from(u32::from(a) & mask);
            format!("{net}/{p}")
        }
        IpAddr::V6(a) => {
            let p = v6_prefix.min(128);
            let mask = u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
            let net = std::net::Ipv6Addr::from(u128::from(a) & mask);
            format!("{net}/{p}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_of_one_network_share_its_name() {
        assert_eq!(network(ip("203.0.113.9"), 24, 56), "203.0.113.0/24");
        assert_eq!(
            network(ip("::ffff:203.0.113.200"), 24, 56),
            "203.0.113.0/24"
        );
        assert_eq!(
            network(ip("2001:db8:1:2ff:1::1"), 24, 56),
            "2001:db8:1:200::/56"
        );
        assert_eq!(network(ip("198.51.100.7"), 32, 56), "198.51.100.7/32");
        assert_ne!(
            network(ip("203.0.113.9"), 24, 56),
            network(ip("203.0.114.9"), 24, 56)
        );
    }

    #[test]
    fn an_empty_object_turns_every_default_on_and_null_turns_a_limit_off() {
        let r: VelocityRules = serde_json::from_str("{}").unwrap();
        assert_eq!(r, VelocityRules::default());
        let r: VelocityRules =
            serde_json::from_str(r#"{"per_buyer":{"attempts":null,"declines":2}}"#).unwrap();
        assert_eq!(r.per_buyer.attempts, None);
        assert_eq!(r.per_buyer.declines, Some(2));
        assert!(r.validate().is_ok());
    }

    #[test]
    fn limits_out_of_range_are_refused() {
        let zero = VelocityRules {
            per_card: VelocityLimits::new(0, 1),
            ..VelocityRules::default()
        };
        assert!(zero.validate().is_err());
        let prefix = VelocityRules {
            ipv4_prefix: 4,
            ..VelocityRules::default()
        };
        assert!(prefix.validate().is_err());
        let mut refuse_one = VelocityRules::default();
        refuse_one.signals.per_card.refuse_at = Some(1);
        assert!(refuse_one.validate().is_err());
    }
}

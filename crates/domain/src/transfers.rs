//! When a ticket may change hands: an event's transfer rules. An event's tickets are
//! not transferable unless its sale settings say so; offers close a set time before the
//! doors open and lapse after a while if the recipient does not accept.

use serde::{Deserialize, Serialize};

use crate::time::Millis;

/// How long an offer waits for its recipient unless the event says otherwise.
pub const DEFAULT_OFFER_TTL_S: u64 = 48 * 3600;

/// Holders may offer their tickets to another buyer until `closes_before_doors_s`
/// before `doors_at`; an offer lapses `offer_ttl_s` after it was made, or at that
/// cutoff if sooner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferRules {
    /// When the doors open (milliseconds since the epoch).
    pub doors_at: Millis,
    /// How long before the doors transfers stop (offers and acceptances alike).
    #[serde(default)]
    pub closes_before_doors_s: u64,
    /// How long an offer waits for its recipient.
    #[serde(default = "default_offer_ttl_s")]
    pub offer_ttl_s: u64,
}

fn default_offer_ttl_s() -> u64 {
    DEFAULT_OFFER_TTL_S
}

impl TransferRules {
    /// The last instant a transfer may be offered or accepted (exclusive).
    pub fn closes_at(&self) -> Millis {
        let before =
            i64::try_from(self.closes_before_doors_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        Millis(self.doors_at.0.saturating_sub(before))
    }

    pub fn is_open_at(&self, now: Millis) -> bool {
        now < self.closes_at()
    }

    /// When an offer made at `now` lapses: after its time to live, or at the cutoff.
    pub fn offer_expires_at(&self, now: Millis) -> Millis {
        let ttl = i64::try_from(self.offer_ttl_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        Millis(now.0.saturating_add(ttl).min(self.closes_at().0))
    }
}

/// Why an event's rules refuse a transfer at `now` (none: allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferClosed {
    /// The event's tickets are not transferable at all.
    NotTransferable,
    /// The cutoff before the doors has passed.
    WindowClosed,
}

/// Whether a ticket of an event with these rules may change hands at `now`.
pub fn transfer_allowed(rules: Option<&TransferRules>, now: Millis) -> Result<(), TransferClosed> {
    match rules {
        None => Err(TransferClosed::NotTransferable),
        Some(r) if !r.is_open_at(now) => Err(TransferClosed::WindowClosed),
        Some(_) => Ok(()),
    }
}

/// Where an offer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransferState {
    /// Waiting for the recipient.
    Offered,
    Accepted,
    /// Withdrawn by the holder.
    Cancelled,
    /// Its time ran out, or the ticket changed under it, before anyone acted.
    Expired,
}

impl TransferState {
    pub const ALL: [TransferState; 4] = [
        TransferState::Offered,
        TransferState::Accepted,
        TransferState::Cancelled,
        TransferState::Expired,
    ];

    /// The name in the ledgers' `ticket_transfers.state` column and in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            TransferState::Offered => "offered",
            TransferState::Accepted => "accepted",
            TransferState::Cancelled => "cancelled",
            TransferState::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<TransferState> {
        TransferState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ttl: u64) -> TransferRules {
        TransferRules {
            doors_at: Millis(100_000),
            closes_before_doors_s: 30,
            offer_ttl_s: ttl,
        }
    }

    #[test]
    fn transfers_close_the_given_time_before_the_doors() {
        let r = rules(10);
        assert_eq!(r.closes_at(), Millis(70_000));
        assert_eq!(transfer_allowed(Some(&r), Millis(69_999)), Ok(()));
        assert_eq!(
            transfer_allowed(Some(&r), Millis(70_000)),
            Err(TransferClosed::WindowClosed)
        );
        assert_eq!(
            transfer_allowed(None, Millis(0)),
            Err(TransferClosed::NotTransferable)
        );
    }

    #[test]
    fn an_offer_lapses_after_its_time_to_live_or_at_the_cutoff() {
        assert_eq!(rules(10).offer_expires_at(Millis(1_000)), Millis(11_000));
        assert_eq!(rules(3600).offer_expires_at(Millis(1_000)), Millis(70_000));
        assert_eq!(rules(u64::MAX).offer_expires_at(Millis(1)), Millis(70_000));
    }

    #[test]
    fn the_offer_time_to_live_defaults_to_two_days() {
        let r: TransferRules = serde_json::from_str(r#"{"doors_at": 5}"#).unwrap();
        assert_eq!(r.offer_ttl_s, DEFAULT_OFFER_TTL_S);
        assert_eq!(r.closes_before_doors_s, 0);
    }
}

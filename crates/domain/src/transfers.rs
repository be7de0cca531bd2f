//! When a ticket may change hands: an event's transfer rules. An event's tickets are
//! not transferable unless its sale settings say so; the policy says whether holders
//! transfer freely, may only change the attendee's name (a set number of times), or
//! only sell through the exchange; everything closes a set time before the doors open,
//! and offers lapse after a while if the recipient does not accept.

use serde::{Deserialize, Serialize};

use crate::time::Millis;

/// How long an offer waits for its recipient unless the event says otherwise.
pub const DEFAULT_OFFER_TTL_S: u64 = 48 * 3600;

/// How the tickets of an event may change hands before the cutoff.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransferPolicy {
    /// Holders offer tickets to other buyers, and may change the attendee's name
    /// (the default: what rules without a policy always meant).
    #[default]
    Free,
    /// Tickets stay with their buyers; only the attendee's name may change, at most
    /// `max_name_changes` times per ticket.
    NameChangeOnly,
    /// Tickets and their names stay as sold (as with no transfer rules at all).
    None,
    /// Tickets change hands only through the event's face-value exchange; no direct
    /// transfers and no name changes.
    ExchangeOnly,
}

/// Name changes allowed per ticket unless the event says otherwise.
pub const DEFAULT_MAX_NAME_CHANGES: u32 = 1;

/// Holders may offer their tickets to another buyer (or change the attendee's name, as
/// `policy` allows) until `closes_before_doors_s` before `doors_at`; an offer lapses
/// `offer_ttl_s` after it was made, or at that cutoff if sooner.
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
    /// What may change hands: free transfers by default.
    #[serde(default)]
    pub policy: TransferPolicy,
    /// How many times the holder may change a ticket's attendee name (naming a ticket
    /// that has no name is not a change). At most 100.
    #[serde(default = "default_max_name_changes")]
    #[schema(maximum = 100)]
    pub max_name_changes: u32,
}

/// The most name changes an event may allow per ticket.
pub const MAX_NAME_CHANGES: u32 = 100;

fn default_offer_ttl_s() -> u64 {
    DEFAULT_OFFER_TTL_S
}

fn default_max_name_changes() -> u32 {
    DEFAULT_MAX_NAME_CHANGES
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

/// Why an event's rules refuse a transfer or a name change at `now` (none: allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferClosed {
    /// The event's tickets are not transferable at all (or, for a name change, their
    /// names cannot change).
    NotTransferable,
    /// Tickets change hands only through the event's exchange.
    ExchangeOnly,
    /// The cutoff before the doors has passed.
    WindowClosed,
}

/// Whether a ticket of an event with these rules may be offered to another buyer at
/// `now`.
pub fn transfer_allowed(rules: Option<&TransferRules>, now: Millis) -> Result<(), TransferClosed> {
    let r = rules.ok_or(TransferClosed::NotTransferable)?;
    match r.policy {
        TransferPolicy::Free => {}
        TransferPolicy::NameChangeOnly | TransferPolicy::None => {
            return Err(TransferClosed::NotTransferable);
        }
        TransferPolicy::ExchangeOnly => return Err(TransferClosed::ExchangeOnly),
    }
    if !r.is_open_at(now) {
        return Err(TransferClosed::WindowClosed);
    }
    Ok(())
}

/// Whether the attendee name on a ticket of an event with these rules may be changed
/// at `now`, and if so how many changes a ticket may have in all.
pub fn name_change_allowed(
    rules: Option<&TransferRules>,
    now: Millis,
) -> Result<u32, TransferClosed> {
    let r = rules.ok_or(TransferClosed::NotTransferable)?;
    match r.policy {
        TransferPolicy::Free | TransferPolicy::NameChangeOnly => {}
        TransferPolicy::None => return Err(TransferClosed::NotTransferable),
        TransferPolicy::ExchangeOnly => return Err(TransferClosed::ExchangeOnly),
    }
    if !r.is_open_at(now) {
        return Err(TransferClosed::WindowClosed);
    }
    Ok(r.max_name_changes.min(MAX_NAME_CHANGES))
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
            policy: TransferPolicy::Free,
            max_name_changes: 2,
        }
    }

    #[test]
    fn each_policy_allows_what_it_says_until_the_cutoff() {
        use TransferClosed as C;
        use TransferPolicy as P;
        let at = |policy| TransferRules {
            policy,
            ..rules(10)
        };
        let open = Millis(1_000);
        let late = Millis(70_000);
        let cases = [
            (P::Free, Ok(()), Ok(2)),
            (P::NameChangeOnly, Err(C::NotTransferable), Ok(2)),
            (P::None, Err(C::NotTransferable), Err(C::NotTransferable)),
            (P::ExchangeOnly, Err(C::ExchangeOnly), Err(C::ExchangeOnly)),
        ];
        for (policy, transfer, rename) in cases {
            let r = at(policy);
            assert_eq!(transfer_allowed(Some(&r), open), transfer, "{policy:?}");
            assert_eq!(name_change_allowed(Some(&r), open), rename, "{policy:?}");
        }
        let r = at(P::NameChangeOnly);
        assert_eq!(name_change_allowed(Some(&r), late), Err(C::WindowClosed));
        assert_eq!(
            name_change_allowed(None, open),
            Err(TransferClosed::NotTransferable)
        );
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
        assert_eq!(r.policy, TransferPolicy::Free);
        assert_eq!(r.max_name_changes, DEFAULT_MAX_NAME_CHANGES);
        let r: TransferRules =
            serde_json::from_str(r#"{"doors_at": 5, "policy": "exchange_only"}"#).unwrap();
        assert_eq!(r.policy, TransferPolicy::ExchangeOnly);
    }
}

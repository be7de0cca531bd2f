//! What the fake does with a first authorization: the scripted test cards, then the
//! configured random declines and timeouts. Pure apart from the seeded RNG it is handed.

use rand::Rng;

/// Test payment methods with a scripted outcome. Any other method is approved, so a
/// demo can use whatever string its client sends.
pub mod methods {
    pub const VISA: &str = "pm_card_visa";
    pub const DECLINED: &str = "pm_card_declined";
    /// Any method starting with this (`pm_card_declined_4000000000000002`) is declined
    /// too: as many distinct declined cards as a test wants.
    pub const DECLINED_PREFIX: &str = "pm_card_declined_";
    pub const INSUFFICIENT_FUNDS: &str = "pm_card_insufficient_funds";
    /// Refused outright: the provider answers the authorization with an error
    /// (`PaymentError::Rejected`, as Stripe answers a request it will not take) instead
    /// of a declined payment, and keeps nothing of it.
    pub const REFUSED: &str = "pm_card_refused";
    pub const TIMEOUT_AFTER_CHARGE: &str = "pm_timeout_after_charge";
    pub const TIMEOUT_BEFORE_CHARGE: &str = "pm_timeout_before_charge";
    /// 3-D Secure: the buyer must confirm at the bank; an authorization follows (or a
    /// decline) when a test calls `FakeGateway::complete_action`.
    pub const THREE_D_SECURE: &str = "pm_card_threeDSecure";
    /// A bank redirect: like 3-D Secure, but the money is captured the moment the buyer
    /// approves, as with payment methods that do not support a separate capture.
    pub const BANK_REDIRECT: &str = "pm_bank_redirect";
}

/// The decline reason of a card declined for no stated cause.
pub const CARD_DECLINED: &str = "card_declined";
pub const INSUFFICIENT_FUNDS: &str = "insufficient_funds";

/// What the provider does with an authorization it has not seen before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Script {
    Approve,
    Decline(&'static str),
    /// Refuses the request: no payment on the book, an error for an answer.
    Refuse,
    /// Records the authorization, then fails to answer.
    TimeoutAfterCharge,
    /// Fails to answer without having done anything.
    TimeoutBeforeCharge,
    /// Waits for the buyer; approval leaves an authorization (or, with
    /// `captures`, a capture).
    RequiresAction {
        captures: bool,
    },
}

impl Script {
    /// The scripted outcome of a test card, before any random misbehaviour.
    pub fn for_method(method: &str) -> Script {
        match method {
            methods::DECLINED => Script::Decline(CARD_DECLINED),
            methods::INSUFFICIENT_FUNDS => Script::Decline(INSUFFICIENT_FUNDS),
            methods::REFUSED => Script::Refuse,
            methods::TIMEOUT_AFTER_CHARGE => Script::TimeoutAfterCharge,
            methods::TIMEOUT_BEFORE_CHARGE => Script::TimeoutBeforeCharge,
            methods::THREE_D_SECURE => Script::RequiresAction { captures: false },
            methods::BANK_REDIRECT => Script::RequiresAction { captures: true },
            m if m.starts_with(methods::DECLINED_PREFIX) => Script::Decline(CARD_DECLINED),
            _ => Script::Approve,
        }
    }

    /// Lets the soak rates turn an approval into a decline or a timeout. Scripted cards
    /// keep their script so a test asking for a decline always gets one.
    pub fn with_rates(self, decline_rate: f64, timeout_rate: f64, rng: &mut impl Rng) -> Script {
        if self != Script::Approve || (decline_rate == 0.0 && timeout_rate == 0.0) {
            return self;
        }
        let draw: f64 = rng.random();
        if draw < decline_rate {
            Script::Decline(CARD_DECLINED)
        } else if draw < decline_rate + timeout_rate {
            if rng.random::<bool>() {
                Script::TimeoutAfterCharge
            } else {
                Script::TimeoutBeforeCharge
            }
        } else {
            Script::Approve
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn unknown_methods_are_approved() {
        assert_eq!(Script::for_method("pm_anything"), Script::Approve);
        assert_eq!(Script::for_method(methods::VISA), Script::Approve);
    }

    #[test]
    fn a_rate_of_one_declines_every_approval_but_keeps_scripts() {
        let mut rng = StdRng::seed_from_u64(7);
        assert_eq!(
            Script::Approve.with_rates(1.0, 0.0, &mut rng),
            Script::Decline(CARD_DECLINED)
        );
        let timeout = Script::TimeoutBeforeCharge.with_rates(1.0, 0.0, &mut rng);
        assert_eq!(timeout, Script::TimeoutBeforeCharge);
    }

    #[test]
    fn rates_come_out_near_their_configured_share() {
        let mut rng = StdRng::seed_from_u64(42);
        let (mut declined, mut timed_out) = (0, 0);
        for _ in 0..10_000 {
            match Script::Approve.with_rates(0.2, 0.1, &mut rng) {
                Script::Decline(_) => declined += 1,
                Script::TimeoutAfterCharge | Script::TimeoutBeforeCharge => timed_out += 1,
                Script::Approve | Script::Refuse | Script::RequiresAction { .. } => {}
            }
        }
        assert!((1_800..2_200).contains(&declined), "{declined}");
        assert!((800..1_200).contains(&timed_out), "{timed_out}");
    }
}

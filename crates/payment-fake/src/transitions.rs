//! The provider's own state machine for an existing payment, as a pure function so the
//! legal and illegal moves can be read in one place and tested without a database.

use boxoffice_engine::ports::ProviderState;

/// A change a caller asks of an existing payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Capture,
    Void,
    Refund,
}

impl Move {
    fn verb(self) -> &'static str {
        match self {
            Move::Capture => "capture",
            Move::Void => "void",
            Move::Refund => "refund",
        }
    }

    /// The state this move starts from, and the state it ends in.
    fn edge(self) -> (ProviderState, ProviderState) {
        match self {
            Move::Capture => (ProviderState::Authorized, ProviderState::Captured),
            Move::Void => (ProviderState::Authorized, ProviderState::Voided),
            Move::Refund => (ProviderState::Captured, ProviderState::Refunded),
        }
    }

    /// A payment still waiting for the buyer can be cancelled too, like a Stripe
    /// PaymentIntent in `requires_action`.
    fn starts_from(self, from: ProviderState) -> bool {
        from == self.edge().0 || (self == Move::Void && from == ProviderState::RequiresAction)
    }

    /// The webhook type a provider sends after this move.
    pub fn webhook_kind(self) -> &'static str {
        match self {
            Move::Capture => "payment_intent.succeeded",
            Move::Void => "payment_intent.canceled",
            Move::Refund => "charge.refunded",
        }
    }
}

/// What to do with a payment in state `from` when asked to make `mv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write the new state.
    Go(ProviderState),
    /// Already done by an earlier call: answer Ok and change nothing, because every
    /// call is idempotent at the provider and a retry must not fail.
    AlreadyDone,
}

/// Decides a move, or explains in plain words why the provider refuses it.
pub fn decide(mv: Move, from: ProviderState) -> Result<Step, String> {
    let (start, end) = mv.edge();
    if mv.starts_from(from) {
        Ok(Step::Go(end))
    } else if from == end {
        Ok(Step::AlreadyDone)
    } else {
        Err(format!(
            "cannot {verb} a payment that is {}: {verb} applies only to {} payments",
            state_name(from),
            state_name(start),
            verb = mv.verb()
        ))
    }
}

/// The text form of a state, both in messages and in the provider's table.
pub fn state_name(s: ProviderState) -> &'static str {
    match s {
        ProviderState::RequiresAction => "requires_action",
        ProviderState::Authorized => "authorized",
        ProviderState::Captured => "captured",
        ProviderState::Voided => "voided",
        ProviderState::Declined => "declined",
        ProviderState::Refunded => "refunded",
    }
}

pub fn parse_state(s: &str) -> Option<ProviderState> {
    Some(match s {
        "requires_action" => ProviderState::RequiresAction,
        "authorized" => ProviderState::Authorized,
        "captured" => ProviderState::Captured,
        "voided" => ProviderState::Voided,
        "declined" => ProviderState::Declined,
        "refunded" => ProviderState::Refunded,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProviderState::*;

    #[test]
    fn each_move_goes_forward_once_and_then_is_a_no_op() {
        assert_eq!(decide(Move::Capture, Authorized), Ok(Step::Go(Captured)));
        assert_eq!(decide(Move::Capture, Captured), Ok(Step::AlreadyDone));
        assert_eq!(decide(Move::Void, Authorized), Ok(Step::Go(Voided)));
        assert_eq!(decide(Move::Void, Voided), Ok(Step::AlreadyDone));
        assert_eq!(decide(Move::Void, RequiresAction), Ok(Step::Go(Voided)));
        assert_eq!(decide(Move::Refund, Captured), Ok(Step::Go(Refunded)));
        assert_eq!(decide(Move::Refund, Refunded), Ok(Step::AlreadyDone));
    }

    #[test]
    fn crossing_moves_are_refused_with_a_reason() {
        let err = decide(Move::Capture, Voided).unwrap_err();
        assert!(
            err.contains("cannot capture a payment that is voided"),
            "{err}"
        );
        for (mv, from) in [
            (Move::Capture, Declined),
            (Move::Capture, Refunded),
            (Move::Void, Captured),
            (Move::Void, Declined),
            (Move::Refund, Authorized),
            (Move::Refund, Voided),
            (Move::Capture, RequiresAction),
            (Move::Refund, RequiresAction),
        ] {
            assert!(decide(mv, from).is_err(), "{mv:?} from {from:?}");
        }
    }

    #[test]
    fn state_names_round_trip() {
        for s in [
            RequiresAction,
            Authorized,
            Captured,
            Voided,
            Declined,
            Refunded,
        ] {
            assert_eq!(parse_state(state_name(s)), Some(s));
        }
    }
}

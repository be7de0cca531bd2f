//! Names on tickets: whether an event prints the attendee's name on each ticket and
//! when the name must be there. A named ticket carries the name inside its signed
//! barcode, so the gate shows it; changing the name issues the next version of the
//! ticket, and the old barcode is refused at the door.

use serde::{Deserialize, Serialize};

use crate::ticket::AttendeeName;

/// Whether and when an event's tickets carry the attendee's name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttendeeNames {
    /// Tickets carry no name (the default).
    #[default]
    Off,
    /// The checkout names every seat; a checkout without them is refused.
    AtCheckout,
    /// The checkout may name the seats; the holder names the rest later, and the door
    /// refuses a ticket that still has no name.
    BeforeDoors,
}

impl AttendeeNames {
    /// Whether tickets carry names at all.
    pub fn is_on(self) -> bool {
        self != AttendeeNames::Off
    }

    /// Whether the door refuses a ticket without a name.
    pub fn required_at_door(self) -> bool {
        self.is_on()
    }
}

/// Why the names given at checkout do not fit the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NamesRefusal {
    #[error("this event takes no attendee names")]
    NotTaken,
    #[error("this event needs one attendee name per seat ({seats} seats)")]
    Required { seats: usize },
    #[error("one attendee name per seat, in the hold's order ({seats} seats)")]
    WrongCount { seats: usize },
}

/// The name for each of `seats` seats that a checkout under `policy` records: `names`
/// as given (one per seat, in order), or none at all where the event allows it.
pub fn names_for_checkout(
    policy: AttendeeNames,
    names: Vec<AttendeeName>,
    seats: usize,
) -> Result<Vec<Option<AttendeeName>>, NamesRefusal> {
    match (policy, names.len()) {
        (AttendeeNames::Off, 0) | (AttendeeNames::BeforeDoors, 0) => Ok(vec![None; seats]),
        (AttendeeNames::Off, _) => Err(NamesRefusal::NotTaken),
        (AttendeeNames::AtCheckout, 0) => Err(NamesRefusal::Required { seats }),
        (_, n) if n != seats => Err(NamesRefusal::WrongCount { seats }),
        _ => Ok(names.into_iter().map(Some).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> AttendeeName {
        AttendeeName::parse(s).unwrap()
    }

    #[test]
    fn names_are_off_unless_the_event_says_otherwise() {
        let p: AttendeeNames = serde_json::from_str(r#""at_checkout""#).unwrap();
        assert_eq!(p, AttendeeNames::AtCheckout);
        assert_eq!(AttendeeNames::default(), AttendeeNames::Off);
        assert!(!AttendeeNames::Off.required_at_door());
        assert!(AttendeeNames::BeforeDoors.required_at_door());
    }

    #[test]
    fn a_checkout_names_every_seat_or_none_as_the_event_asks() {
        use AttendeeNames as P;
        let two = || vec![name("Ada"), name("Grace")];
        assert_eq!(names_for_checkout(P::Off, vec![], 2), Ok(vec![None, None]));
        assert_eq!(
            names_for_checkout(P::Off, two(), 2),
            Err(NamesRefusal::NotTaken)
        );
        assert_eq!(
            names_for_checkout(P::AtCheckout, vec![], 2),
            Err(NamesRefusal::Required { seats: 2 })
        );
        assert_eq!(
            names_for_checkout(P::AtCheckout, vec![name("Ada")], 2),
            Err(NamesRefusal::WrongCount { seats: 2 })
        );
        assert_eq!(
            names_for_checkout(P::BeforeDoors, vec![], 2),
            Ok(vec![None, None])
        );
        let named = names_for_checkout(P::AtCheckout, two(), 2).unwrap();
        assert_eq!(named[1].as_ref().map(AttendeeName::as_str), Some("Grace"));
    }
}

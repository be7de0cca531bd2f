mod fuzz;
mod gate;
mod identity;
mod keys;
mod rotating;

use uuid::Uuid;

use super::*;
use crate::ids::{BuyerId, EventId, OrderId};
use crate::time::Millis;

const NOW: Millis = Millis(1_800_000_000_000);

fn keys(event: i64, seed: u8) -> EventKeys {
    EventKeys::generate(EventId(event), [seed; 32]).unwrap()
}

fn seat(label: &str) -> SeatLabel {
    SeatLabel::try_from(label.to_owned()).unwrap()
}

fn buyer(n: u128) -> BuyerId {
    BuyerId(Uuid::from_u128(n))
}

fn ticket(event: i64) -> Ticket {
    Ticket::issue(
        OrderId(Uuid::from_u128(0xfeed)),
        EventId(event),
        seat("FLOOR-C-12"),
        buyer(1),
    )
}

/// The text of `ticket`'s barcode issued by `keys` at `NOW`, static.
fn barcode(keys: &EventKeys, ticket: &Ticket) -> String {
    keys.issue(ticket, NOW).unwrap().0.text()
}

fn gate(keys: &EventKeys) -> GateBundle {
    GateBundle {
        event_id: keys.public().event(),
        keys: keys.public().clone(),
        revoked: Revocations::default(),
        admitted: Default::default(),
        rotation: keys.rotation().cloned(),
        generated_at: NOW,
        names_required: false,
    }
}

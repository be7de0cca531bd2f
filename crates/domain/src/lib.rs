//! The rules of an on-sale with no I/O, no async and no framework: identifiers, money,
//! the catalog (events, sections, rows, seats), the hold and order state machines, and
//! the signed tokens buyers carry, and tickets with the signed barcodes a door checks.
//! Time is always an argument (`Millis`).

pub mod admission;
pub mod attendees;
pub mod catalog;
pub mod exchange;
pub mod fairness;
pub mod hold;
pub mod human_check;
pub mod ids;
pub mod money;
pub mod order;
pub mod possession;
pub mod pow;
pub mod refunds;
pub mod secret;
pub mod signature;
pub mod ticket;
pub mod time;
pub mod token;
pub mod transfers;
pub mod velocity;

pub use catalog::{Event, EventSpec, SaleSettings, SaleStatus, Seat, Section, SectionKind};
pub use hold::HoldState;
pub use ids::{
    BuyerId, EventId, GateId, HoldId, HoldIdText, ListingId, OrderId, SeatIndex, SwapId, TransferId,
};
pub use money::Money;
pub use order::{OrderEvent, OrderState};
pub use secret::Secret;
pub use time::Millis;

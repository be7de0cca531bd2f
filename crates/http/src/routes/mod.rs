//! Route handlers, one module per resource.

pub mod availability;
pub mod buyers;
pub mod events;
pub mod holds;
pub mod ops;
pub mod orders;
pub mod payments;
pub mod queue;
pub mod waiting;

//! Servers killed with -9 and restarted: what recovery finds and settles.

mod checkout_retry;
mod fairness;
mod recovery_bench;
mod server;

//! The server's tests that need no cluster: the application in-process on port 0 (one
//! per test, with a fresh data directory), real `boxoffice` processes for the edge, crash
//! and restart tests, and the API fuzz. One binary, so the server is linked once; the
//! tests that need PostgreSQL and Redis in cluster mode are in `tests/cluster`.

#[path = "../common/mod.rs"]
mod common;

mod availability;
mod bad_input;
mod bounded_state;
mod checkout_kept;
mod concurrency;
mod console;
mod contract;
mod crash;
mod edge;
mod fuzz;
mod human_check;
mod identity;
mod order_events;
mod payments;
mod possession;
mod refunds;
mod rehearse;
mod rehearse_sockets;
mod seed_scenario;
mod tickets;
mod tokens;
mod velocity;
mod waiting_restart;
mod waiting_room;

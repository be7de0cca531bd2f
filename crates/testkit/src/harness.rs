//! What integration tests need around the code under test (the `harness` feature): the
//! `boxoffice` binary started as a real process, a fresh PostgreSQL database, a Redis
//! key prefix of the test's own (or a Redis server of its own), localstripe, an event to
//! sell and buyers driven over HTTP. Every backend is required: when PostgreSQL, Redis
//! or localstripe cannot be reached the test fails saying how to fix it, never skips.

pub mod buyers;
pub mod events;
pub mod http;
pub mod localstripe;
pub mod postgres;
pub mod process;
pub mod receiver;
pub mod redis;

pub use events::spec;

/// A fresh random id (an Idempotency-Key, a name nobody else uses).
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A path as the `&str` a command line takes.
pub fn path_str(p: &std::path::Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

/// A loopback port free right now (for a server that cannot bind port 0 itself).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().expect("a bound address").port()
}

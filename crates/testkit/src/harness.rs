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

/// 32 random bytes (from two random UUIDs, enough for a test).
fn seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    seed[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    seed[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    seed
}

/// A fresh client key for proofs of possession (`DPoP`), as a non-browser client makes
/// one: an ES256 (P-256) key.
pub fn proof_key() -> boxoffice_domain::possession::ProofKey {
    loop {
        if let Some(key) = boxoffice_domain::possession::ProofKey::from_seed(&seed()) {
            return key;
        }
    }
}

/// A fresh EdDSA (Ed25519) client key for proofs of possession.
pub fn ed25519_proof_key() -> boxoffice_domain::possession::ProofKey {
    boxoffice_domain::possession::ProofKey::ed25519_from_seed(&seed())
}

/// A proof of possession for one request made now (`now_s`, seconds since the epoch).
pub fn proof(
    key: &boxoffice_domain::possession::ProofKey,
    method: &str,
    path: &str,
    now_s: i64,
) -> String {
    key.proof(method, path, now_s, &uuid())
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

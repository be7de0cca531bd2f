//! In-process backends for the embedded deployment: the seat arbiter (hot store), the
//! waiting-room queue, the idempotency-key store and the proof-of-possession memory. Nothing here survives a restart;
//! the engine rebuilds the arbiter from the ledger (docs/ARCHITECTURE.md P5) and a lost queue costs
//! fairness, never correctness.

mod arbiter;
mod claimed;
mod hash;
pub mod idempotency;
pub mod proofs;
mod queue;
pub mod velocity;

pub use arbiter::InMemoryArbiter;
pub use claimed::MemoryClaimedHolds;
pub use idempotency::MemoryIdempotency;
pub use proofs::MemoryProofs;
pub use queue::InMemoryQueue;
pub use velocity::MemoryVelocity;

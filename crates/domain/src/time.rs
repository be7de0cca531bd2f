//! Wall-clock instants as milliseconds since the Unix epoch: the one unit of time the
//! domain speaks. Where "now" comes from is the engine's business (the Clock port).

use serde::{Deserialize, Serialize};

/// Milliseconds since 1970-01-01T00:00:00Z.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Millis(pub i64);

impl Millis {
    pub fn plus_secs(self, secs: u64) -> Millis {
        Millis(self.0.saturating_add((secs as i64).saturating_mul(1000)))
    }
    pub fn plus_millis(self, ms: i64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }
}

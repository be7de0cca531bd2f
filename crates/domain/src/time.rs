//! Wall-clock instants as milliseconds since the Unix epoch: the one unit of time the
//! domain speaks. Where "now" comes from is the engine's business (the Clock port).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Milliseconds since the Unix epoch (1970-01-01T00:00:00Z, UTC).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    ToSchema,
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

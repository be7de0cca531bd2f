//! Money in integer minor units (cents). The currency is the event's; amounts of
//! different events are never added together.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Amount in minor units of the event's currency (e.g. cents).
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
pub struct Money(pub i64);

impl Money {
    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }

    pub fn sum<I: IntoIterator<Item = Money>>(items: I) -> Option<Money> {
        items.into_iter().try_fold(Money(0), Money::checked_add)
    }
}

//! What the API's pages show, read in one call each: an event with its seat counts,
//! a hold's seats by their labels.

use std::sync::Arc;

use boxoffice_domain::EventId;

use crate::ports::{HoldView, SeatCounts};
use crate::{Engine, EngineError, EventEntry};

/// An event and its seat counts (none while the hot store rebuilds it).
pub struct EventOverview {
    pub entry: Arc<EventEntry>,
    pub counts: Option<SeatCounts>,
}

/// Opening or closing an event's sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaleChange {
    Open,
    Close,
}

impl Engine {
    pub async fn event_overview(&self, id: EventId) -> Result<EventOverview, EngineError> {
        let entry = self.event(id).await?;
        Ok(self.with_counts(entry).await)
    }

    /// Opens or closes the sale, and shows the event as it is then.
    pub async fn change_sale(
        &self,
        id: EventId,
        change: SaleChange,
    ) -> Result<EventOverview, EngineError> {
        let entry = match change {
            SaleChange::Open => self.open_sale(id).await?,
            SaleChange::Close => self.close_sale(id).await?,
        };
        Ok(self.with_counts(entry).await)
    }

    async fn with_counts(&self, entry: Arc<EventEntry>) -> EventOverview {
        let counts = self.ports.arbiter.counts(entry.event.id).await.ok();
        EventOverview { entry, counts }
    }

    /// The labels of a hold's seats, in the hold's order.
    pub async fn hold_seat_labels(&self, hold: &HoldView) -> Result<Vec<String>, EngineError> {
        let entry = self.event(hold.hold.event).await?;
        Ok(self.seat_labels(&entry, &hold.seats))
    }
}

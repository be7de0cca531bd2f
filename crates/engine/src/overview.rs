//! What the API's pages show, read in one call each: an event with its seat counts,
//! a hold's seats by their labels.

use std::sync::Arc;

use boxoffice_domain::{EventId, SaleStatus};

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

/// Most events one listing shows.
pub const MAX_LISTED_EVENTS: usize = 100;

impl Engine {
    /// The newest events (highest id first) whose sale is in one of `statuses`, at most
    /// `limit` (capped at `MAX_LISTED_EVENTS`), each with its seat counts. The ledger
    /// is asked once per sale status, however often `statuses` names it (the public
    /// listing's `?status=` is a client's list).
    pub async fn list_events(
        &self,
        statuses: &[SaleStatus],
        limit: usize,
    ) -> Result<Vec<EventOverview>, EngineError> {
        let mut ids = Vec::new();
        for status in SaleStatus::ALL.iter().filter(|s| statuses.contains(s)) {
            ids.extend(self.ports.ledger.events_with_status(*status).await?);
        }
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.dedup();
        ids.truncate(limit.min(MAX_LISTED_EVENTS));
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let mut entry = self.event(id).await?;
            if !statuses.contains(&entry.event.status) {
                // Another node changed the sale since this one cached it.
                entry = self.reload_event(id).await?;
            }
            out.push(self.with_counts(entry).await);
        }
        Ok(out)
    }

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

//! The `Exchange` port on PostgreSQL: each write one transaction (see `exchange_rows`),
//! committed when it succeeds, rolled back when the store refuses, and run again when
//! it loses a race with another transaction (`PostgresLedger::apart`).

use async_trait::async_trait;
use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{BuyerId, EventId, ListingId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{Exchange, Listing, Moved, Reserve, StoreError, Swap};
use sqlx::Row;

use crate::PostgresLedger;
use crate::conn::{corrupt, db};
use crate::exchange_rows::{self as rows, Answer, listing_of, listing_sql, swap_of, swap_sql};
use crate::handover::kept;
use crate::standing;
use crate::writer::Step;

#[async_trait]
impl Exchange for PostgresLedger {
    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %listing.ticket))]
    async fn list(&self, listing: &Listing) -> Answer<()> {
        let listing = listing.clone();
        self.apart(move |c| {
            let listing = listing.clone();
            Box::pin(async move { rows::list(c, &listing).await.map(kept) })
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(listing = %id))]
    async fn withdraw(&self, id: ListingId, by: BuyerId, now: Millis) -> Answer<Listing> {
        self.apart(move |c| Box::pin(async move { rows::withdraw(c, id, by, now).await.map(kept) }))
            .await
    }

    async fn listing(&self, id: ListingId) -> Result<Option<Listing>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        rows::read_listing(&mut conn, id).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn open_listings(
        &self,
        event: EventId,
        after: Option<ListingId>,
        limit: u32,
    ) -> Result<Vec<Listing>, StoreError> {
        let sql = concat!(
            listing_sql!(),
            "JOIN tickets t ON t.id = l.ticket_id JOIN orders o ON o.id = t.order_id
             WHERE l.event_id = $1 AND l.state = 'open' AND l.id > $2
               AND t.version = l.version AND t.holder_id = l.seller
               AND COALESCE(t.own_state, o.state) = $4
               AND NOT EXISTS (SELECT 1 FROM checkins c WHERE c.ticket_id = l.ticket_id)
             ORDER BY l.id LIMIT $3"
        );
        let found = sqlx::query(sql)
            .bind(event.0)
            .bind(after.map(|a| a.to_string()).unwrap_or_default())
            .bind(i64::from(limit))
            .bind(boxoffice_domain::OrderState::Confirmed.as_str())
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        found.iter().map(listing_of).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(listing = %reserve.swap.listing))]
    async fn reserve(&self, reserve: &Reserve) -> Answer<()> {
        let reserve = reserve.clone();
        self.apart(move |c| {
            let reserve = reserve.clone();
            Box::pin(async move { rows::reserve(c, &reserve).await.map(kept) })
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(swap = %id))]
    async fn advance(
        &self,
        id: SwapId,
        from: SwapState,
        to: SwapState,
        charge_ref: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let charge_ref = charge_ref.map(str::to_owned);
        self.apart(move |c| {
            let charge_ref = charge_ref.clone();
            Box::pin(async move {
                let moved = rows::advance(c, id, from, to, charge_ref.as_deref(), now).await?;
                Ok(Step::Keep(moved))
            })
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(swap = %id))]
    async fn move_ticket(&self, id: SwapId, max: u32, now: Millis) -> Result<Moved, StoreError> {
        self.apart(move |c| {
            Box::pin(async move { rows::move_ticket(c, id, max, now).await.map(Step::Keep) })
        })
        .await
    }

    async fn swap(&self, id: SwapId) -> Result<Option<Swap>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        rows::read_swap(&mut conn, id).await
    }

    async fn swap_by_charge(&self, charge: OrderId) -> Result<Option<Swap>, StoreError> {
        let row = sqlx::query(concat!(swap_sql!(), "WHERE charge = $1"))
            .bind(charge.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?;
        row.as_ref().map(swap_of).transpose()
    }

    async fn unfinished_swaps(&self, before: Millis, limit: u32) -> Result<Vec<Swap>, StoreError> {
        let sql = concat!(
            swap_sql!(),
            "WHERE state NOT IN ('done', 'undone') AND updated_at < $1
             ORDER BY updated_at, id LIMIT $2"
        );
        let found = sqlx::query(sql)
            .bind(before.0)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        found.iter().map(swap_of).collect()
    }

    async fn swap_charges(&self) -> Result<Vec<(OrderId, SwapState)>, StoreError> {
        let found = sqlx::query("SELECT charge, state FROM exchange_swaps")
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        found
            .iter()
            .map(|r| {
                let charge: String = r.try_get(0).map_err(db)?;
                let state: String = r.try_get(1).map_err(db)?;
                Ok((
                    charge.parse().map_err(|e| corrupt("swap charge", e))?,
                    SwapState::parse(&state).ok_or_else(|| corrupt("swap state", &state))?,
                ))
            })
            .collect()
    }

    async fn payouts_of(&self, order: OrderId) -> Result<Money, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        standing::payouts_of(&mut conn, order).await
    }

    async fn live_swaps(&self, event: EventId) -> Result<Vec<Swap>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        standing::live_swaps(&mut conn, event).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(swap = %id))]
    async fn claim_cancelled_swap(&self, id: SwapId, now: Millis) -> Result<bool, StoreError> {
        self.apart(move |c| {
            Box::pin(async move {
                standing::claim_cancelled_swap(c, id, now)
                    .await
                    .map(Step::Keep)
            })
        })
        .await
    }
}

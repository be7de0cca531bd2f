//! The `Exchange` port on the ledger's SQLite file: reads on the reader pool, every
//! write a job of the one writer (see `exchange_rows`).

use async_trait::async_trait;
use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{BuyerId, EventId, ListingId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{
    Exchange, Listing, ListingRefusal, Moved, Reserve, StoreError, Swap,
};

use crate::SqliteLedger;
use crate::exchange_rows as rows;
use crate::standing;

#[async_trait]
impl Exchange for SqliteLedger {
    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %listing.ticket))]
    async fn list(&self, listing: &Listing) -> Result<Result<(), ListingRefusal>, StoreError> {
        let listing = listing.clone();
        self.writer.submit(move |c| rows::list(c, &listing)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(listing = %id))]
    async fn withdraw(
        &self,
        id: ListingId,
        by: BuyerId,
        now: Millis,
    ) -> Result<Result<Listing, ListingRefusal>, StoreError> {
        self.writer
            .submit(move |c| rows::withdraw(c, id, by, now))
            .await
    }

    async fn listing(&self, id: ListingId) -> Result<Option<Listing>, StoreError> {
        self.readers.read(move |c| rows::listing(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn open_listings(
        &self,
        event: EventId,
        after: Option<ListingId>,
        limit: u32,
    ) -> Result<Vec<Listing>, StoreError> {
        self.readers
            .read(move |c| rows::open_listings(c, event, after, limit))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(listing = %reserve.swap.listing))]
    async fn reserve(&self, reserve: &Reserve) -> Result<Result<(), ListingRefusal>, StoreError> {
        let reserve = reserve.clone();
        self.writer
            .submit(move |c| rows::reserve(c, &reserve))
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
        self.writer
            .submit(move |c| rows::advance(c, id, from, to, charge_ref.as_deref(), now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(swap = %id))]
    async fn move_ticket(
        &self,
        id: SwapId,
        max_per_buyer: u32,
        now: Millis,
    ) -> Result<Moved, StoreError> {
        self.writer
            .submit(move |c| rows::move_ticket(c, id, max_per_buyer, now))
            .await
    }

    async fn swap(&self, id: SwapId) -> Result<Option<Swap>, StoreError> {
        self.readers.read(move |c| rows::swap(c, id)).await
    }

    async fn swap_by_charge(&self, charge: OrderId) -> Result<Option<Swap>, StoreError> {
        self.readers
            .read(move |c| rows::swap_by_charge(c, charge))
            .await
    }

    async fn unfinished_swaps(&self, before: Millis, limit: u32) -> Result<Vec<Swap>, StoreError> {
        self.readers
            .read(move |c| rows::unfinished(c, before, limit))
            .await
    }

    async fn swap_charges(&self) -> Result<Vec<(OrderId, SwapState)>, StoreError> {
        self.readers.read(rows::charges).await
    }

    async fn payouts_of(&self, order: OrderId) -> Result<Money, StoreError> {
        self.readers
            .read(move |c| standing::payouts_of(c, order))
            .await
    }

    async fn live_swaps(&self, event: EventId) -> Result<Vec<Swap>, StoreError> {
        self.readers
            .read(move |c| standing::live_swaps(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(swap = %id))]
    async fn claim_cancelled_swap(&self, id: SwapId, now: Millis) -> Result<bool, StoreError> {
        self.writer
            .submit(move |c| standing::claim_cancelled_swap(c, id, now))
            .await
    }
}

//! The `Tickets` port on the ledger's SQLite file: reads on the reader pool, writes
//! through the one writer, so a check-in decides against the ticket and its order as
//! they are in the same transaction.

use async_trait::async_trait;
use boxoffice_domain::ticket::{KeyId, TicketId};
use boxoffice_domain::{BuyerId, EventId, GateId, Millis, Money, OrderId, TransferId};
use boxoffice_engine::ports::{
    Accept, Accepted, BarcodeSetting, CancelledTicket, CheckIn, Gate, Rename, RenameRefusal,
    ScanAttempt, StoreError, StoredKey, TicketCancelRefusal, TicketFacts, TicketRow, Tickets,
    TransferOffer, TransferRefusal,
};

use crate::SqliteLedger;
use crate::standing;
use crate::ticket_rows as rows;
use crate::transfer_rows as transfers;

#[async_trait]
impl Tickets for SqliteLedger {
    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn keys(&self, event: EventId) -> Result<Vec<StoredKey>, StoreError> {
        self.readers.read(move |c| rows::keys(c, event)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn add_key(&self, event: EventId, key: &StoredKey) -> Result<bool, StoreError> {
        let key = key.clone();
        self.writer
            .submit(move |c| rows::add_key(c, event, &key))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn retire_key(
        &self,
        event: EventId,
        kid: KeyId,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.writer
            .submit(move |c| rows::retire_key(c, event, kid, now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn barcode_setting(&self, event: EventId) -> Result<Option<BarcodeSetting>, StoreError> {
        self.readers.read(move |c| rows::setting(c, event)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn set_rotating(
        &self,
        event: EventId,
        rotating: bool,
        secret: [u8; 32],
    ) -> Result<BarcodeSetting, StoreError> {
        self.writer
            .submit(move |c| rows::set_rotating(c, event, rotating, secret))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn insert_tickets(&self, tickets: &[TicketRow]) -> Result<(), StoreError> {
        let tickets = tickets.to_vec();
        self.writer
            .submit(move |c| rows::insert_tickets(c, &tickets))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %id))]
    async fn ticket(&self, id: TicketId) -> Result<Option<TicketFacts>, StoreError> {
        self.readers.read(move |c| rows::ticket(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn tickets_of_order(&self, order: OrderId) -> Result<Vec<TicketRow>, StoreError> {
        let facts = self
            .readers
            .read(move |c| {
                rows::facts_where(
                    c,
                    "WHERE t.order_id = ?1 ORDER BY t.seat_id",
                    [order.to_string()],
                )
            })
            .await?;
        Ok(facts.into_iter().map(|f| f.ticket).collect())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn tickets_of_holder(&self, holder: BuyerId) -> Result<Vec<TicketFacts>, StoreError> {
        self.readers
            .read(move |c| {
                let clause = "WHERE t.holder_id = ?1 ORDER BY t.event_id, t.seat_id";
                rows::facts_where(c, clause, [holder.to_string()])
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn tickets_of_event(&self, event: EventId) -> Result<Vec<TicketFacts>, StoreError> {
        self.readers
            .read(move |c| rows::facts_where(c, "WHERE t.event_id = ?1", [event.0]))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %gate.event))]
    async fn add_gate(&self, gate: &Gate, key: &str) -> Result<Option<Gate>, StoreError> {
        let (gate, key) = (gate.clone(), key.to_owned());
        self.writer
            .submit(move |c| rows::add_gate(c, &gate, &key))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(gate = %id))]
    async fn gate(&self, id: GateId) -> Result<Option<Gate>, StoreError> {
        self.readers.read(move |c| rows::gate(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn gate_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Gate>, StoreError> {
        let digest = *digest;
        self.readers
            .read(move |c| rows::gate_by_digest(c, digest))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(gate = %id))]
    async fn revoke_gate(&self, id: GateId) -> Result<Option<Gate>, StoreError> {
        self.writer.submit(move |c| rows::revoke_gate(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %scan.ticket))]
    async fn check_in(&self, scan: &ScanAttempt) -> Result<CheckIn, StoreError> {
        let scan = scan.clone();
        self.writer.submit(move |c| rows::check_in(c, &scan)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %offer.ticket))]
    async fn offer_transfer(
        &self,
        offer: &TransferOffer,
    ) -> Result<Result<(), TransferRefusal>, StoreError> {
        let offer = offer.clone();
        self.writer
            .submit(move |c| transfers::offer(c, &offer))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %accept.transfer))]
    async fn accept_transfer(
        &self,
        accept: &Accept,
    ) -> Result<Result<Accepted, TransferRefusal>, StoreError> {
        let accept = accept.clone();
        self.writer
            .submit(move |c| transfers::accept(c, &accept))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %id))]
    async fn cancel_transfer(
        &self,
        id: TransferId,
        by: BuyerId,
        now: Millis,
    ) -> Result<Result<TransferOffer, TransferRefusal>, StoreError> {
        self.writer
            .submit(move |c| transfers::cancel(c, id, by, now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %id))]
    async fn transfer(&self, id: TransferId) -> Result<Option<TransferOffer>, StoreError> {
        self.readers.read(move |c| transfers::transfer(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %rename.ticket))]
    async fn rename_ticket(
        &self,
        rename: &Rename,
    ) -> Result<Result<TicketRow, RenameRefusal>, StoreError> {
        let rename = rename.clone();
        self.writer
            .submit(move |c| crate::name_rows::rename(c, &rename))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn transfers_of(
        &self,
        buyer: BuyerId,
        limit: u32,
    ) -> Result<Vec<TransferOffer>, StoreError> {
        self.readers
            .read(move |c| transfers::transfers_of(c, buyer, limit))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %id))]
    async fn cancel_ticket(
        &self,
        id: TicketId,
        now: Millis,
    ) -> Result<Result<CancelledTicket, TicketCancelRefusal>, StoreError> {
        self.writer
            .submit(move |c| standing::cancel_ticket(c, id, now))
            .await
    }

    async fn ticket_refunded(&self, id: TicketId) -> Result<bool, StoreError> {
        self.writer
            .submit(move |c| standing::ticket_refunded(c, id))
            .await
    }

    async fn tickets_refunding(
        &self,
        before: Millis,
        limit: u32,
    ) -> Result<Vec<CancelledTicket>, StoreError> {
        self.readers
            .read(move |c| standing::tickets_refunding(c, before, limit))
            .await
    }

    async fn cancelled_parts(&self, order: OrderId) -> Result<Money, StoreError> {
        self.readers
            .read(move |c| standing::cancelled_parts(c, order))
            .await
    }
}

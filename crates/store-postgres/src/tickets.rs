//! The `Tickets` port on the ledger's PostgreSQL database. Writes are single
//! conditional statements, or (check-in) one transaction that locks the ticket's row,
//! so nodes sharing the database agree without talking to each other.

use async_trait::async_trait;
use boxoffice_domain::ticket::{KeyId, TicketId};
use boxoffice_domain::{BuyerId, EventId, GateId, Millis, Money, OrderId, Secret, TransferId};
use boxoffice_engine::ports::{
    Accept, Accepted, BarcodeSetting, CancelledTicket, CheckIn, Gate, Rename, RenameRefusal,
    ScanAttempt, StoreError, StoredKey, TicketCancelRefusal, TicketFacts, TicketRow, Tickets,
    TransferOffer, TransferRefusal,
};
use sqlx::Row;

use crate::PostgresLedger;
use crate::conn::db;
use crate::handover::kept;
use crate::standing;
use crate::ticket_rows::{self as rows, KEYS, bytes32, facts_sql, gates_sql, version};
use crate::writer::Step;

impl PostgresLedger {
    async fn facts_where(
        &self,
        sql: &'static str,
        bind: impl FnOnce(
            sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
        )
            -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<Vec<TicketFacts>, StoreError> {
        let found = bind(sqlx::query(sql))
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        found.iter().map(rows::facts).collect()
    }

    async fn gate_where(
        &self,
        sql: &'static str,
        value: impl sqlx::Encode<'_, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send,
    ) -> Result<Option<Gate>, StoreError> {
        let found = sqlx::query(sql)
            .bind(value)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?;
        found.as_ref().map(rows::gate).transpose()
    }
}

#[async_trait]
impl Tickets for PostgresLedger {
    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn keys(&self, event: EventId) -> Result<Vec<StoredKey>, StoreError> {
        let found = sqlx::query(KEYS)
            .bind(event.0)
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        found.iter().map(rows::key).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn add_key(&self, event: EventId, key: &StoredKey) -> Result<bool, StoreError> {
        let added = sqlx::query(
            "INSERT INTO ticket_keys (event_id, kid, seed, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (event_id, kid) DO NOTHING",
        )
        .bind(event.0)
        .bind(version(key.kid.0))
        .bind(&key.seed.expose()[..])
        .bind(key.created_at.0)
        .execute(self.pool())
        .await
        .map_err(db)?;
        Ok(added.rows_affected() == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn retire_key(
        &self,
        event: EventId,
        kid: KeyId,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE ticket_keys SET retired_at = $3
             WHERE event_id = $1 AND kid = $2 AND retired_at IS NULL",
        )
        .bind(event.0)
        .bind(version(kid.0))
        .bind(now.0)
        .execute(self.pool())
        .await
        .map_err(db)?;
        Ok(changed.rows_affected() == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn barcode_setting(&self, event: EventId) -> Result<Option<BarcodeSetting>, StoreError> {
        let found = sqlx::query(
            "SELECT rotating, rotation_secret FROM ticket_settings WHERE event_id = $1",
        )
        .bind(event.0)
        .fetch_optional(self.pool())
        .await
        .map_err(db)?;
        found.map(|r| setting(&r)).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn set_rotating(
        &self,
        event: EventId,
        rotating: bool,
        secret: [u8; 32],
    ) -> Result<BarcodeSetting, StoreError> {
        let row = sqlx::query(
            "INSERT INTO ticket_settings (event_id, rotating, rotation_secret) VALUES ($1, $2, $3)
             ON CONFLICT (event_id) DO UPDATE SET rotating = excluded.rotating
             RETURNING rotating, rotation_secret",
        )
        .bind(event.0)
        .bind(rotating)
        .bind(&secret[..])
        .fetch_one(self.pool())
        .await
        .map_err(db)?;
        setting(&row)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn insert_tickets(&self, tickets: &[TicketRow]) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        rows::insert_tickets(&mut conn, tickets).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %id))]
    async fn ticket(&self, id: TicketId) -> Result<Option<TicketFacts>, StoreError> {
        let found = self
            .facts_where(concat!(facts_sql!(), "WHERE t.id = $1"), |q| {
                q.bind(id.to_string())
            })
            .await?;
        Ok(found.into_iter().next())
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn tickets_of_order(&self, order: OrderId) -> Result<Vec<TicketRow>, StoreError> {
        let found = self
            .facts_where(
                concat!(facts_sql!(), "WHERE t.order_id = $1 ORDER BY t.seat_id"),
                |q| q.bind(order.to_string()),
            )
            .await?;
        Ok(found.into_iter().map(|f| f.ticket).collect())
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn tickets_of_holder(&self, holder: BuyerId) -> Result<Vec<TicketFacts>, StoreError> {
        let clause = concat!(
            facts_sql!(),
            "WHERE t.holder_id = $1 ORDER BY t.event_id, t.seat_id"
        );
        self.facts_where(clause, |q| q.bind(holder.to_string()))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn tickets_of_event(&self, event: EventId) -> Result<Vec<TicketFacts>, StoreError> {
        self.facts_where(concat!(facts_sql!(), "WHERE t.event_id = $1"), |q| {
            q.bind(event.0)
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %gate.event))]
    async fn add_gate(&self, gate: &Gate, key: &str) -> Result<Option<Gate>, StoreError> {
        let added = sqlx::query(
            "INSERT INTO gates (id, event_id, name, digest, revoked, creation_key, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (event_id, creation_key) DO NOTHING",
        )
        .bind(gate.id.to_string())
        .bind(gate.event.0)
        .bind(&gate.name)
        .bind(&gate.digest[..])
        .bind(gate.revoked)
        .bind(key)
        .bind(gate.created_at.0)
        .execute(self.pool())
        .await
        .map_err(db)?;
        if added.rows_affected() == 1 {
            return Ok(None);
        }
        let sql = concat!(gates_sql!(), "WHERE event_id = $1 AND creation_key = $2");
        let first = sqlx::query(sql)
            .bind(gate.event.0)
            .bind(key)
            .fetch_optional(self.pool())
            .await
            .map_err(db)?;
        first.as_ref().map(rows::gate).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(gate = %id))]
    async fn gate(&self, id: GateId) -> Result<Option<Gate>, StoreError> {
        self.gate_where(concat!(gates_sql!(), "WHERE id = $1"), id.to_string())
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn gate_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Gate>, StoreError> {
        self.gate_where(concat!(gates_sql!(), "WHERE digest = $1"), digest.to_vec())
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(gate = %id))]
    async fn revoke_gate(&self, id: GateId) -> Result<Option<Gate>, StoreError> {
        let sql = "WITH r AS (UPDATE gates SET revoked = TRUE WHERE id = $1 RETURNING *)
             SELECT id, event_id, name, digest, revoked, created_at FROM r";
        let found = sqlx::query(sql)
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db)?;
        found.as_ref().map(rows::gate).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %scan.ticket))]
    async fn check_in(&self, scan: &ScanAttempt) -> Result<CheckIn, StoreError> {
        let scan = scan.clone();
        self.apart(move |c| {
            let scan = scan.clone();
            Box::pin(async move { rows::check_in(c, &scan).await.map(Step::Keep) })
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %offer.ticket))]
    async fn offer_transfer(
        &self,
        offer: &TransferOffer,
    ) -> Result<Result<(), TransferRefusal>, StoreError> {
        self.offer_transfer_tx(offer).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %accept.transfer))]
    async fn accept_transfer(
        &self,
        accept: &Accept,
    ) -> Result<Result<Accepted, TransferRefusal>, StoreError> {
        self.accept_transfer_tx(accept).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %id))]
    async fn cancel_transfer(
        &self,
        id: TransferId,
        by: BuyerId,
        now: Millis,
    ) -> Result<Result<TransferOffer, TransferRefusal>, StoreError> {
        self.cancel_transfer_tx(id, by, now).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(transfer = %id))]
    async fn transfer(&self, id: TransferId) -> Result<Option<TransferOffer>, StoreError> {
        self.read_transfer(id).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %rename.ticket))]
    async fn rename_ticket(
        &self,
        rename: &Rename,
    ) -> Result<Result<TicketRow, RenameRefusal>, StoreError> {
        self.rename_ticket_tx(rename).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn transfers_of(
        &self,
        buyer: BuyerId,
        limit: u32,
    ) -> Result<Vec<TransferOffer>, StoreError> {
        self.read_transfers_of(buyer, limit).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(ticket = %id))]
    async fn cancel_ticket(
        &self,
        id: TicketId,
        now: Millis,
    ) -> Result<Result<CancelledTicket, TicketCancelRefusal>, StoreError> {
        self.apart(move |c| {
            Box::pin(async move { standing::cancel_ticket(c, id, now).await.map(kept) })
        })
        .await
    }

    async fn ticket_refunded(&self, id: TicketId) -> Result<bool, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        standing::ticket_refunded(&mut conn, id).await
    }

    async fn tickets_refunding(
        &self,
        before: Millis,
        limit: u32,
    ) -> Result<Vec<CancelledTicket>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        standing::tickets_refunding(&mut conn, before, limit).await
    }

    async fn cancelled_parts(&self, order: OrderId) -> Result<Money, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        standing::cancelled_parts(&mut conn, order).await
    }
}

fn setting(row: &sqlx::postgres::PgRow) -> Result<BarcodeSetting, StoreError> {
    let secret: Vec<u8> = row.try_get(1).map_err(db)?;
    Ok(BarcodeSetting {
        rotating: row.try_get(0).map_err(db)?,
        rotation_secret: Secret::new(bytes32(&secret, "rotation secret")?),
    })
}

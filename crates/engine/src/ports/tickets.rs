//! The after-sale's durable record: each event's barcode keys and rotating-code
//! setting, the tickets of paid orders, gate devices, and check-in. It lives in the
//! ledger's database (the ticket rows join the order rows), behind a port of its own so
//! the sale's hot path never grows.
//!
//! Two rules are the store's to keep, whatever the number of nodes: a ticket is
//! admitted at most once (`check_in` is a conditional insert on the ticket's primary
//! key, never a read-then-write), and a ticket is valid at the door only while its
//! order is `confirmed` (the money captured): the store reads the order's state in the
//! same step, so a refund or a cancellation revokes the ticket with no call of its own.

use async_trait::async_trait;
use boxoffice_domain::ticket::{AttendeeName, KeyId, SeatLabel, TicketId};
use boxoffice_domain::{
    BuyerId, EventId, GateId, Millis, Money, OrderId, OrderState, Secret, TransferId,
};

use super::{Accept, Accepted, Rename, RenameRefusal, StoreError, TransferOffer, TransferRefusal};

/// One barcode key of an event. The seed is the Ed25519 private key: it never leaves
/// the server, and never prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredKey {
    pub kid: KeyId,
    pub seed: Secret<[u8; 32]>,
    pub created_at: Millis,
}

/// An event's rotating-barcode setting. The secret is drawn the first time rotation is
/// turned on and kept when it is turned off, so turning it on again needs no reissue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarcodeSetting {
    pub rotating: bool,
    pub rotation_secret: Secret<[u8; 32]>,
}

/// A ticket as stored: the current version of one seat of a paid order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketRow {
    pub id: TicketId,
    pub event: EventId,
    pub order: OrderId,
    pub seat: SeatLabel,
    pub holder: BuyerId,
    pub version: u32,
    pub attendee: Option<AttendeeName>,
    /// When this version was issued: its barcodes carry it, so they are made again,
    /// byte for byte, rather than stored.
    pub issued_at: Millis,
}

impl TicketRow {
    /// The first version of each ticket of a paid order, issued at `now`: what the
    /// ledger writes when the order is captured. Ids are derived from (order, seat), so
    /// writing them twice writes nothing new.
    pub fn first_of(order: &super::Order, now: Millis) -> Result<Vec<TicketRow>, StoreError> {
        (order.seats.iter())
            .map(|s| {
                let seat = SeatLabel::try_from(s.seat_id.clone())
                    .map_err(|e| StoreError::new(format_args!("sold seat label: {e}")))?;
                Ok(TicketRow {
                    id: TicketId::for_seat(order.id, &seat),
                    event: order.event,
                    order: order.id,
                    seat,
                    holder: order.buyer,
                    version: 1,
                    attendee: s.attendee.clone(),
                    issued_at: now,
                })
            })
            .collect()
    }
}

/// A ticket with what the door needs besides: its order's state and its check-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketFacts {
    pub ticket: TicketRow,
    pub order_state: OrderState,
    pub checked_in: Option<FirstScan>,
    /// How many times the holder changed the attendee's name (not counting naming a
    /// ticket that had none).
    pub name_changes: u32,
}

/// The scan that admitted a ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstScan {
    pub gate: GateId,
    pub gate_name: String,
    pub at: Millis,
}

/// A gate device. Its credential is stored as a SHA-256 digest only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    pub id: GateId,
    pub event: EventId,
    pub name: String,
    pub digest: [u8; 32],
    pub revoked: bool,
    pub created_at: Millis,
}

/// A scan whose barcode verified, presented for check-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanAttempt {
    pub ticket: TicketId,
    pub version: u32,
    pub gate: GateId,
    pub at: Millis,
    /// Made offline and uploaded later: the earliest scan wins, even over one recorded
    /// before it. An online scan only ever admits a ticket nobody admitted yet.
    pub offline: bool,
}

/// What the store decided about a scan; every scan is logged with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckIn {
    /// The first admit of the ticket. For an offline scan, `replaced` is the later
    /// scan recorded before it that it displaced.
    Admitted { replaced: Option<FirstScan> },
    /// The ticket was admitted before (earlier, for an offline scan).
    AlreadyScanned(FirstScan),
    /// No such ticket.
    Unknown,
    /// The barcode is of an earlier version than the ticket's current one.
    OldVersion { current: u32 },
    /// The ticket's order is not (or no longer) paid for.
    NotPaid(OrderState),
}

impl CheckIn {
    /// The outcome's name in the scan log.
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckIn::Admitted { .. } => "admitted",
            CheckIn::AlreadyScanned(_) => "already_scanned",
            CheckIn::Unknown => "unknown_ticket",
            CheckIn::OldVersion { .. } => "revoked_version",
            CheckIn::NotPaid(_) => "not_paid",
        }
    }
}

/// The after-sale record. Every write is atomic and conditional where it races.
#[async_trait]
pub trait Tickets: Send + Sync {
    /// The event's keys that still verify (not retired), oldest first.
    async fn keys(&self, event: EventId) -> Result<Vec<StoredKey>, StoreError>;
    /// Adds a key; `false` (and nothing written) when the event already has a key with
    /// that number: another request created or rotated first.
    async fn add_key(&self, event: EventId, key: &StoredKey) -> Result<bool, StoreError>;
    /// Retires a key; `false` when the event has no such unretired key.
    async fn retire_key(&self, event: EventId, kid: KeyId, now: Millis)
    -> Result<bool, StoreError>;

    async fn barcode_setting(&self, event: EventId) -> Result<Option<BarcodeSetting>, StoreError>;
    /// Sets rotation on or off. `secret` is stored only if the event has none yet;
    /// returns the setting as stored.
    async fn set_rotating(
        &self,
        event: EventId,
        rotating: bool,
        secret: [u8; 32],
    ) -> Result<BarcodeSetting, StoreError>;

    /// Records tickets that do not exist yet (by id); existing ones are left as they are
    /// (a ticket transferred away keeps its holder).
    async fn insert_tickets(&self, tickets: &[TicketRow]) -> Result<(), StoreError>;
    async fn ticket(&self, id: TicketId) -> Result<Option<TicketFacts>, StoreError>;
    async fn tickets_of_order(&self, order: OrderId) -> Result<Vec<TicketRow>, StoreError>;
    /// The tickets `holder` holds, by event and seat.
    async fn tickets_of_holder(&self, holder: BuyerId) -> Result<Vec<TicketFacts>, StoreError>;
    /// Every ticket of the event with its order's state (for the revocation list).
    async fn tickets_of_event(&self, event: EventId) -> Result<Vec<TicketFacts>, StoreError>;

    /// Adds a gate created under the operator's Idempotency-Key `key`; a second
    /// creation with the same key for the event returns the first gate and writes
    /// nothing (its credential is not kept, so it cannot be shown again).
    async fn add_gate(&self, gate: &Gate, key: &str) -> Result<Option<Gate>, StoreError>;
    async fn gate(&self, id: GateId) -> Result<Option<Gate>, StoreError>;
    async fn gate_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Gate>, StoreError>;
    /// Revokes the gate (idempotent); `None` when there is no such gate.
    async fn revoke_gate(&self, id: GateId) -> Result<Option<Gate>, StoreError>;

    /// Decides and logs one scan in one step: the ticket must exist at this version
    /// with a confirmed order; then it is admitted unless it was before (online: the
    /// first recorded scan wins; offline: the earliest scan wins).
    async fn check_in(&self, scan: &ScanAttempt) -> Result<CheckIn, StoreError>;

    /// Opens an offer of `offer.ticket` at `offer.version` from `offer.from`, if the
    /// ticket is theirs at that version, not checked in, its order confirmed, and it
    /// has no open offer (a lapsed one is closed first). One conditional step: of two
    /// offers racing, one opens.
    async fn offer_transfer(
        &self,
        offer: &TransferOffer,
    ) -> Result<Result<(), TransferRefusal>, StoreError>;
    /// Accepts the offer for its recipient `accept.by`: in one transaction the offer
    /// ends accepted, the ticket moves to the recipient at the next version, the sold
    /// seat's buyer and both ticket counts follow, and the order's history gets a
    /// `transferred` line; or nothing is written and the refusal says why.
    async fn accept_transfer(
        &self,
        accept: &Accept,
    ) -> Result<Result<Accepted, TransferRefusal>, StoreError>;
    /// Withdraws an open offer of `by` (its holder).
    async fn cancel_transfer(
        &self,
        id: TransferId,
        by: BuyerId,
        now: Millis,
    ) -> Result<Result<TransferOffer, TransferRefusal>, StoreError>;
    async fn transfer(&self, id: TransferId) -> Result<Option<TransferOffer>, StoreError>;

    /// Puts `rename.attendee` on the ticket at its next version, issued `rename.now`,
    /// if `rename.by` holds it at `rename.version`, it is not checked in, its order is
    /// confirmed and, for a counted rename, its changes are under the limit (then one
    /// more). One conditional step: of renames racing over one version, one wins.
    async fn rename_ticket(
        &self,
        rename: &Rename,
    ) -> Result<Result<TicketRow, RenameRefusal>, StoreError>;
    /// The newest offers `buyer` made or received, newest first, at most `limit`.
    async fn transfers_of(
        &self,
        buyer: BuyerId,
        limit: u32,
    ) -> Result<Vec<TransferOffer>, StoreError>;

    /// Claims the cancellation of one ticket of a confirmed order before any money
    /// moves, in one step: the ticket stands `refunding` on its own (refused at the
    /// door, listed revoked), its refund amount is its seat's price, its sold seat is
    /// deleted with its holder's count lowered, and a `ticket_cancelled` line goes into
    /// the order's history (and out through the outbox). Conditional on the ticket
    /// still following its order: of any number of claims racing, one wins; a refusal
    /// writes nothing.
    async fn cancel_ticket(
        &self,
        id: TicketId,
        now: Millis,
    ) -> Result<Result<CancelledTicket, TicketCancelRefusal>, StoreError>;
    /// The claimed ticket's money is back: `refunding → cancelled`; `false` when it was
    /// not `refunding`.
    async fn ticket_refunded(&self, id: TicketId) -> Result<bool, StoreError>;
    /// Tickets claimed for cancellation before `before` whose money is not back yet,
    /// oldest first, at most `limit`: the recovery sweep's work.
    async fn tickets_refunding(
        &self,
        before: Millis,
        limit: u32,
    ) -> Result<Vec<CancelledTicket>, StoreError>;
    /// What the order's cancelled tickets give back of its payment in parts (claimed
    /// or done): its own refund is only the rest.
    async fn cancelled_parts(&self, order: OrderId) -> Result<Money, StoreError>;
}

/// One ticket cancelled on its own, as the ledger claimed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelledTicket {
    pub ticket: TicketId,
    pub order: OrderId,
    pub event: EventId,
    pub seat: SeatLabel,
    /// The part of the order's payment going back: the seat's price in the order.
    pub amount: Money,
    /// `refunding` while the money is on its way back, then `cancelled`.
    pub state: OrderState,
    pub cancelled_at: Millis,
}

/// Why a ticket cannot be cancelled on its own; nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketCancelRefusal {
    NotFound,
    /// Cancelled before (its money back, or on its way).
    AlreadyCancelled,
    /// Admitted at a gate.
    CheckedIn,
    /// Sold on through the exchange: it is its swap buyer's, not the order's.
    Exchanged,
    /// Listed on the exchange (or in a swap) or offered to another buyer: withdraw
    /// that first.
    Listed,
    /// Its order is not confirmed (not paid yet, or already undone).
    NotConfirmed(OrderState),
    /// The order's only ticket still following it: cancel the order instead.
    LastTicket,
}

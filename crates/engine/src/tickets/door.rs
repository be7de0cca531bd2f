//! The door: gate devices, the bundle an offline gate downloads, and check-in.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use boxoffice_domain::ticket::{
    AttendeeName, BarcodeRefusal, GateBundle, MAX_REVOCATIONS, Revocations, SeatLabel, TicketId,
    VerifiedTicket, require_name, verify,
};
use boxoffice_domain::{EventId, GateId, Millis, OrderState};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{TicketRefusal, random32};
use crate::ports::{CheckIn, FirstScan, Gate, ScanAttempt};
use crate::{Engine, EngineError, Resource};

/// Longest gate name, in bytes.
pub const MAX_GATE_NAME: usize = 64;

/// A gate device as created: the credential is shown this once, and only its digest is
/// kept. A retried creation returns the gate without it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Gate)]
pub struct GateCreated {
    pub gate_id: GateId,
    pub event_id: EventId,
    pub name: String,
    pub revoked: bool,
    /// The gate's bearer credential: in the first answer only.
    #[schema(required)]
    pub credential: Option<String>,
}

impl GateCreated {
    fn of(gate: &Gate, credential: Option<String>) -> GateCreated {
        GateCreated {
            gate_id: gate.id,
            event_id: gate.event,
            name: gate.name.clone(),
            revoked: gate.revoked,
            credential,
        }
    }
}

/// An admitted scan.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ScanVerdict {
    /// Always `admitted`: a refusal is an error response.
    pub verdict: &'static str,
    pub ticket_id: TicketId,
    pub version: u32,
    #[schema(value_type = Option<String>, required)]
    pub seat: Option<SeatLabel>,
    /// The attendee's name as the barcode carries it (signed), for door staff to
    /// compare with an identity document; absent on unnamed tickets.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub attendee: Option<AttendeeName>,
    pub gate_id: GateId,
    pub at: Millis,
}

/// One offline scan uploaded in a batch.
#[derive(Clone, Debug)]
pub struct BatchItem {
    pub barcode: String,
    pub scanned_at: Millis,
}

/// What became of one offline scan.
#[derive(Debug)]
pub enum BatchOutcome {
    /// The first scan of the ticket; `replaced` is a later scan recorded before it.
    Admitted {
        ticket_id: TicketId,
        replaced: Option<ScanRef>,
    },
    /// An earlier scan admitted the ticket.
    AlreadyScanned { ticket_id: TicketId, first: ScanRef },
    /// Refused as the online scan would have been.
    Refused(EngineError),
}

/// A recorded scan, as reported.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ScanRef {
    pub gate_id: GateId,
    pub gate_name: String,
    pub at: Millis,
}

impl From<FirstScan> for ScanRef {
    fn from(f: FirstScan) -> ScanRef {
        ScanRef {
            gate_id: f.gate,
            gate_name: f.gate_name,
            at: f.at,
        }
    }
}

fn digest(credential: &str) -> [u8; 32] {
    Sha256::digest(credential.as_bytes()).into()
}

impl Engine {
    /// POST /v1/events/{id}/gates: a gate device for the event, created once per
    /// Idempotency-Key.
    pub async fn create_gate(
        &self,
        event: EventId,
        name: &str,
        key: &str,
    ) -> Result<GateCreated, EngineError> {
        let name = name.trim();
        if name.is_empty() || name.len() > MAX_GATE_NAME || name.chars().any(char::is_control) {
            return Err(EngineError::Invalid(format!(
                "a gate name is 1-{MAX_GATE_NAME} bytes of text"
            )));
        }
        self.event(event).await?;
        let credential = format!("gate_{}", B64.encode(random32()));
        let gate = Gate {
            id: GateId::random(),
            event,
            name: name.to_owned(),
            digest: digest(&credential),
            revoked: false,
            created_at: self.now(),
        };
        Ok(match self.tickets_port()?.add_gate(&gate, key).await? {
            None => GateCreated::of(&gate, Some(credential)),
            Some(first) => GateCreated::of(&first, None),
        })
    }

    /// DELETE /v1/gates/{id}: the device's credential stops working at once.
    pub async fn revoke_gate(&self, id: GateId) -> Result<GateCreated, EngineError> {
        let gate = self.tickets_port()?.revoke_gate(id).await?;
        let gate = gate.ok_or(EngineError::NotFound(Resource::Gate))?;
        Ok(GateCreated::of(&gate, None))
    }

    /// The gate a credential belongs to, if it may act for `event`.
    pub async fn gate_for(&self, credential: &str, event: EventId) -> Result<Gate, EngineError> {
        let gate = self
            .tickets_port()?
            .gate_by_digest(&digest(credential))
            .await?;
        let gate = gate.ok_or(TicketRefusal::GateUnknown)?;
        if gate.revoked {
            return Err(TicketRefusal::GateRevoked.into());
        }
        if gate.event != event {
            return Err(TicketRefusal::GateWrongEvent.into());
        }
        Ok(gate)
    }

    /// GET /v1/events/{id}/gate-bundle: what an offline gate verifies with. Every
    /// ticket whose order is not confirmed is revoked at its current version, and every
    /// ticket's earlier versions are revoked; a valid ticket already admitted at a gate
    /// is listed as admitted, so an offline gate does not admit it again.
    pub async fn gate_bundle(&self, gate: &Gate) -> Result<GateBundle, EngineError> {
        let keys = self.event_keys(gate.event).await?;
        let tickets = self.tickets_port()?.tickets_of_event(gate.event).await?;
        let mut revoked = Revocations::default();
        let mut admitted = std::collections::BTreeSet::new();
        for f in tickets {
            let t = &f.ticket;
            let through = match f.order_state {
                OrderState::Confirmed => t.version - 1,
                _ => t.version,
            };
            if through > 0 && !revoked.revoke(t.id, through) {
                return Err(EngineError::Internal("the revocation list is full".into()));
            }
            if f.order_state == OrderState::Confirmed && f.checked_in.is_some() {
                if admitted.len() >= MAX_REVOCATIONS {
                    return Err(EngineError::Internal("the admitted list is full".into()));
                }
                admitted.insert(t.id);
            }
        }
        Ok(GateBundle {
            event_id: gate.event,
            keys: keys.public().clone(),
            revoked,
            admitted,
            rotation: keys.rotation().cloned(),
            generated_at: self.now(),
            names_required: self.names_required(gate.event).await?,
        })
    }

    /// POST /v1/events/{id}/scans: verifies the barcode, then admits the ticket if no
    /// scan did before.
    pub async fn scan(&self, gate: &Gate, barcode: &str) -> Result<ScanVerdict, EngineError> {
        let now = self.now();
        let v = self.verify_barcode(gate.event, barcode, now).await?;
        let attempt = ScanAttempt {
            ticket: v.ticket,
            version: v.version,
            gate: gate.id,
            at: now,
            offline: false,
        };
        match self.tickets_port()?.check_in(&attempt).await? {
            CheckIn::Admitted { .. } => {}
            refused => return Err(refusal(refused)),
        }
        let seat = (self.tickets_port()?.ticket(v.ticket).await?).map(|f| f.ticket.seat);
        Ok(ScanVerdict {
            verdict: "admitted",
            ticket_id: v.ticket,
            version: v.version,
            seat,
            attendee: v.attendee,
            gate_id: gate.id,
            at: now,
        })
    }

    /// POST /v1/events/{id}/scans/batch: scans a gate made offline, each verified at
    /// the time it was made and reconciled by scan time (the earliest admits).
    pub async fn scan_batch(
        &self,
        gate: &Gate,
        items: &[BatchItem],
    ) -> Result<Vec<BatchOutcome>, EngineError> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(self.offline_scan(gate, item).await?);
        }
        Ok(out)
    }

    async fn offline_scan(
        &self,
        gate: &Gate,
        item: &BatchItem,
    ) -> Result<BatchOutcome, EngineError> {
        let v = match self
            .verify_barcode(gate.event, &item.barcode, item.scanned_at)
            .await
        {
            Ok(v) => v,
            Err(e @ EngineError::Ticket(_)) => return Ok(BatchOutcome::Refused(e)),
            Err(e) => return Err(e),
        };
        let attempt = ScanAttempt {
            ticket: v.ticket,
            version: v.version,
            gate: gate.id,
            at: item.scanned_at,
            offline: true,
        };
        Ok(match self.tickets_port()?.check_in(&attempt).await? {
            CheckIn::Admitted { replaced } => BatchOutcome::Admitted {
                ticket_id: v.ticket,
                replaced: replaced.map(ScanRef::from),
            },
            CheckIn::AlreadyScanned(first) => BatchOutcome::AlreadyScanned {
                ticket_id: v.ticket,
                first: first.into(),
            },
            refused => BatchOutcome::Refused(refusal(refused)),
        })
    }

    /// The barcode checked with the event's current keys and rotation secret at `at`,
    /// and for an event that admits named attendees only, that it carries a name;
    /// revocation is the ledger's to decide, against the ticket as it is now.
    async fn verify_barcode(
        &self,
        event: EventId,
        barcode: &str,
        at: Millis,
    ) -> Result<VerifiedTicket, EngineError> {
        let keys = self.event_keys(event).await?;
        let none = Revocations::default();
        let named = self.names_required(event).await?;
        verify(barcode.trim(), keys.public(), &none, keys.rotation(), at)
            .and_then(|v| require_name(v, named))
            .map_err(|r| TicketRefusal::Barcode(r).into())
    }

    /// Whether the event's door admits named attendees only.
    async fn names_required(&self, event: EventId) -> Result<bool, EngineError> {
        let entry = self.event(event).await?;
        Ok(entry.event.sale.attendee_names.required_at_door())
    }
}

fn refusal(outcome: CheckIn) -> EngineError {
    match outcome {
        CheckIn::AlreadyScanned(first) => TicketRefusal::AlreadyScanned(first).into(),
        CheckIn::Unknown => EngineError::NotFound(Resource::Ticket),
        CheckIn::OldVersion { .. } => TicketRefusal::Barcode(BarcodeRefusal::Revoked).into(),
        CheckIn::NotPaid(_) => TicketRefusal::NotPaid.into(),
        CheckIn::Admitted { .. } => EngineError::Internal("an admit taken for a refusal".into()),
    }
}

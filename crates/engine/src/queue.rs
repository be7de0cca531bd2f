//! The waiting room, basic form: FIFO positions, a signed queue ticket, and an
//! admission token once "serving up to" passes the buyer's position.

use boxoffice_domain::token::{Claims, TokenKind};
use boxoffice_domain::{EventId, SaleStatus};
use serde::Serialize;

use crate::buyers::BuyerSession;
use crate::ports::QueueState;
use crate::{Engine, EngineError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitStatus {
    Waiting,
    Admitted,
    SoldOut,
}

#[derive(Clone, Debug, Serialize)]
pub struct JoinOutcome {
    pub queue_ticket: String,
    pub status: WaitStatus,
    pub position: u64,
    pub estimated_wait_s: u64,
    pub poll_after_ms: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueueStatus {
    pub event_id: EventId,
    pub status: WaitStatus,
    pub position: u64,
    pub estimated_wait_s: u64,
    pub poll_after_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_expires_at: Option<boxoffice_domain::Millis>,
}

impl Engine {
    /// Places the buyer in line (or finds their place: joining twice is harmless).
    pub async fn join_queue(
        &self,
        event: EventId,
        who: &BuyerSession,
    ) -> Result<JoinOutcome, EngineError> {
        let entry = self.event(event).await?;
        if entry.event.status == SaleStatus::Closed {
            return Err(EngineError::SaleClosed);
        }
        let place = self.ports.queue.join(event, who.buyer).await?;
        let now = self.now();
        let claims = Claims {
            kind: TokenKind::QueueTicket,
            kid: String::new(),
            buyer: who.buyer,
            sid: who.session.clone(),
            event: Some(event),
            position: Some(place.position),
            exp: now.plus_secs(self.config.queue_ticket_ttl_s),
        };
        let state = self.ports.queue.state(event).await?;
        let (status, wait) = self.wait_for(
            place.position,
            &state,
            entry.event.sale.admission_rate_per_s,
        );
        Ok(JoinOutcome {
            queue_ticket: self.keys.sign(claims),
            status,
            position: place.position,
            estimated_wait_s: wait,
            poll_after_ms: self.config.poll_after_ms,
        })
    }

    /// Where the ticket holder stands; once admitted, carries an admission token bound
    /// to the buyer, the session and the event.
    pub async fn queue_status(&self, ticket: &str) -> Result<QueueStatus, EngineError> {
        let now = self.now();
        let claims = self.keys.verify(ticket, TokenKind::QueueTicket, now)?;
        let event = claims.event.ok_or(EngineError::BadToken(
            boxoffice_domain::token::TokenError::Malformed,
        ))?;
        let position = claims.position.unwrap_or(u64::MAX);
        let entry = self.event(event).await?;
        let state = self.ports.queue.state(event).await?;
        let (status, wait) = self.wait_for(position, &state, entry.event.sale.admission_rate_per_s);
        let mut out = QueueStatus {
            event_id: event,
            status,
            position,
            estimated_wait_s: wait,
            poll_after_ms: self.config.poll_after_ms,
            admission_token: None,
            admission_expires_at: None,
        };
        if status == WaitStatus::Admitted {
            let exp = now.plus_secs(self.config.admission_token_ttl_s);
            let admission = Claims {
                kind: TokenKind::Admission,
                kid: String::new(),
                position: Some(position),
                exp,
                ..claims
            };
            out.admission_token = Some(self.keys.sign(admission));
            out.admission_expires_at = Some(exp);
        }
        Ok(out)
    }

    pub async fn queue_state(&self, event: EventId) -> Result<QueueState, EngineError> {
        self.event(event).await?;
        Ok(self.ports.queue.state(event).await?)
    }

    fn wait_for(&self, position: u64, state: &QueueState, rate: u32) -> (WaitStatus, u64) {
        if position <= state.serving_up_to {
            return (WaitStatus::Admitted, 0);
        }
        if state.sold_out {
            return (WaitStatus::SoldOut, 0);
        }
        let ahead = position - state.serving_up_to;
        (WaitStatus::Waiting, ahead.div_ceil(rate.max(1) as u64))
    }
}

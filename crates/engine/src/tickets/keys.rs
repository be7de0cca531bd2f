//! An event's barcode keys as the engine uses them: loaded from the ledger (the first
//! key made on first use), rotated, retired, and the rotating-barcode setting.

use boxoffice_domain::ticket::{EventKeys, KeyId, MAX_KEYS, PublicKeys, RotationSecret};
use boxoffice_domain::{EventId, Secret};
use serde::Serialize;

use super::{TicketRefusal, random32};
use crate::ports::StoredKey;
use crate::{Engine, EngineError};

/// An event's key set as the operator sees it after a change.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct KeySetView {
    pub event_id: EventId,
    pub current: KeyId,
    pub keys: Vec<KeyId>,
    pub rotating: bool,
}

impl Engine {
    /// The event's unretired keys, making the first if it has none. Two nodes making
    /// it at once agree: the ledger keeps the first and the other reads it back.
    async fn stored_keys(&self, event: EventId) -> Result<Vec<StoredKey>, EngineError> {
        self.event(event).await?;
        let port = self.tickets_port()?;
        let keys = port.keys(event).await?;
        if !keys.is_empty() {
            return Ok(keys);
        }
        let first = StoredKey {
            kid: KeyId(1),
            seed: Secret::new(random32()),
            created_at: self.now(),
        };
        port.add_key(event, &first).await?;
        let keys = port.keys(event).await?;
        if keys.is_empty() {
            // Key 1 exists but was retired: impossible, the current key cannot be.
            return Err(EngineError::Internal("an event without keys".into()));
        }
        Ok(keys)
    }

    /// The event's keys as the server signs and gates verify with, rotation included.
    pub(crate) async fn event_keys(&self, event: EventId) -> Result<EventKeys, EngineError> {
        let stored = self.stored_keys(event).await?;
        let (current, older) = stored
            .split_last()
            .ok_or_else(|| EngineError::Internal("an event without keys".into()))?;
        let older = (older.iter())
            .map(|k| (k.kid, EventKeys::public_half(k.seed.expose())))
            .collect();
        let keys = EventKeys::restore(event, current.kid, *current.seed.expose(), older)
            .map_err(|e| EngineError::Internal(format!("stored keys: {e}")))?;
        let setting = self.tickets_port()?.barcode_setting(event).await?;
        Ok(match setting {
            Some(s) if s.rotating => {
                keys.with_rotation(RotationSecret::from_bytes(*s.rotation_secret.expose()))
            }
            _ => keys,
        })
    }

    /// GET /v1/events/{id}/keys: the public keys a gate verifies with.
    pub async fn barcode_keys(&self, event: EventId) -> Result<PublicKeys, EngineError> {
        Ok(self.event_keys(event).await?.public().clone())
    }

    /// A new current key; the previous ones keep verifying until retired.
    pub async fn rotate_barcode_key(&self, event: EventId) -> Result<KeySetView, EngineError> {
        let stored = self.stored_keys(event).await?;
        if stored.len() >= MAX_KEYS {
            return Err(TicketRefusal::TooManyKeys.into());
        }
        let last = stored.last().map_or(0, |k| k.kid.0);
        let next = StoredKey {
            kid: KeyId(last.saturating_add(1)),
            seed: Secret::new(random32()),
            created_at: self.now(),
        };
        // A concurrent rotation that took the number first is as good as this one.
        self.tickets_port()?.add_key(event, &next).await?;
        self.key_set(event).await
    }

    /// Stops accepting barcodes signed by `kid`.
    pub async fn retire_barcode_key(
        &self,
        event: EventId,
        kid: KeyId,
    ) -> Result<KeySetView, EngineError> {
        let stored = self.stored_keys(event).await?;
        if stored.last().map(|k| k.kid) == Some(kid) {
            return Err(TicketRefusal::CurrentKey.into());
        }
        let retired = self
            .tickets_port()?
            .retire_key(event, kid, self.now())
            .await?;
        if !retired {
            return Err(TicketRefusal::KeyNotFound.into());
        }
        self.key_set(event).await
    }

    /// Turns rotating barcodes on or off for the event's tickets.
    pub async fn set_rotating_barcodes(
        &self,
        event: EventId,
        rotating: bool,
    ) -> Result<KeySetView, EngineError> {
        self.event(event).await?;
        (self.tickets_port()?)
            .set_rotating(event, rotating, random32())
            .await?;
        self.key_set(event).await
    }

    async fn key_set(&self, event: EventId) -> Result<KeySetView, EngineError> {
        let keys = self.event_keys(event).await?;
        Ok(KeySetView {
            event_id: event,
            current: keys.current(),
            keys: keys.public().ids().collect(),
            rotating: keys.rotation().is_some(),
        })
    }
}

//! An event's barcode keys. The server holds `EventKeys`: the current Ed25519 key,
//! which signs every barcode it issues, and the public halves of retired keys, which
//! still verify barcodes issued before a rotation until they are removed. Gates hold
//! `PublicKeys`, the public halves alone, published as a JSON Web Key Set.

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::identity::{Ticket, TicketError};
use super::payload::{self, CONTEXT, Fields};
use super::rotating::{RotationSecret, TicketSecret};
use super::{Barcode, KeyError};
use crate::ids::EventId;
use crate::time::Millis;

/// Most keys an event's set holds: a rotation needs two, a slow one three.
pub const MAX_KEYS: usize = 8;

/// A key's number within its event's set (published as the decimal `kid`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(transparent)]
#[schema(minimum = 1)]
pub struct KeyId(pub u32);

/// The server's keys for one event.
#[derive(Clone)]
pub struct EventKeys {
    event: EventId,
    kid: KeyId,
    signing: SigningKey,
    public: PublicKeys,
    rotation: Option<RotationSecret>,
}

impl EventKeys {
    /// A first key, number 1, from 32 random bytes the caller draws.
    pub fn generate(event: EventId, seed: [u8; 32]) -> Result<EventKeys, KeyError> {
        EventKeys::restore(event, KeyId(1), seed, Vec::new())
    }

    /// Keys as stored: the current key's id and seed, and the retired keys' public
    /// halves (id, 32 bytes).
    pub fn restore(
        event: EventId,
        kid: KeyId,
        seed: [u8; 32],
        retired: Vec<(KeyId, [u8; 32])>,
    ) -> Result<EventKeys, KeyError> {
        let signing = SigningKey::from_bytes(&seed);
        let mut keys = vec![(kid, signing.verifying_key())];
        for (id, x) in retired {
            keys.push((
                id,
                VerifyingKey::from_bytes(&x).map_err(|_| KeyError::BadKey)?,
            ));
        }
        let public = PublicKeys::new(event, keys)?;
        Ok(EventKeys {
            event,
            kid,
            signing,
            public,
            rotation: None,
        })
    }

    /// Issues rotating barcodes from now on, their codes derived from `secret`.
    pub fn with_rotation(self, secret: RotationSecret) -> EventKeys {
        EventKeys {
            rotation: Some(secret),
            ..self
        }
    }

    /// A new current key (the next number) from fresh seed bytes; the previous one
    /// keeps verifying until `retire` removes it.
    pub fn rotate(&self, seed: [u8; 32]) -> Result<EventKeys, KeyError> {
        let last = self
            .public
            .keys
            .iter()
            .map(|(id, _)| id.0)
            .max()
            .unwrap_or(0);
        let kid = KeyId(last.checked_add(1).ok_or(KeyError::TooManyKeys)?);
        let retired = self.public.keys.iter().map(|(id, k)| (*id, k.to_bytes()));
        let restored = EventKeys::restore(self.event, kid, seed, retired.collect())?;
        Ok(EventKeys {
            rotation: self.rotation.clone(),
            ..restored
        })
    }

    /// Stops accepting barcodes signed by `kid` (a retired key's last barcodes have
    /// been reissued, or the key leaked). The current key cannot be retired.
    pub fn retire(&self, kid: KeyId) -> Result<EventKeys, KeyError> {
        if kid == self.kid {
            return Err(KeyError::CurrentKey);
        }
        let mut out = self.clone();
        out.public.keys.retain(|(id, _)| *id != kid);
        Ok(out)
    }

    /// The public half of a key seed, as a store keeps it beside the seed.
    pub fn public_half(seed: &[u8; 32]) -> [u8; 32] {
        SigningKey::from_bytes(seed).verifying_key().to_bytes()
    }

    pub fn current(&self) -> KeyId {
        self.kid
    }

    /// What the event's gates download (besides revocations).
    pub fn public(&self) -> &PublicKeys {
        &self.public
    }

    pub fn rotation(&self) -> Option<&RotationSecret> {
        self.rotation.as_ref()
    }

    /// The barcode of `ticket`'s current version, and for a rotating event the secret
    /// its holder's device makes codes with. Signing is deterministic: the same
    /// version, key and second of issue give the same barcode, so it can be made again
    /// rather than stored.
    pub fn issue(
        &self,
        ticket: &Ticket,
        now: Millis,
    ) -> Result<(Barcode, Option<TicketSecret>), TicketError> {
        if ticket.event != self.event {
            return Err(TicketError::WrongEvent);
        }
        let fields = Fields {
            event: ticket.event,
            ticket: ticket.id,
            version: ticket.version,
            key: self.kid,
            issued_at_secs: u64::try_from(now.0.div_euclid(1000)).unwrap_or(0),
            attendee: ticket.attendee.clone(),
            rotating: self.rotation.is_some(),
        };
        let mut bytes = payload::encode(&fields);
        let mut message = Vec::with_capacity(CONTEXT.len() + bytes.len());
        message.extend_from_slice(CONTEXT);
        message.extend_from_slice(&bytes);
        bytes.extend_from_slice(&self.signing.sign(&message).to_bytes());
        let secret = self
            .rotation
            .as_ref()
            .map(|r| r.ticket_secret(ticket.event, ticket.id, ticket.version));
        Ok((Barcode::signed(bytes, fields.rotating), secret))
    }
}

/// The public keys of one event, current first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKeys {
    pub(super) event: EventId,
    pub(super) keys: Vec<(KeyId, VerifyingKey)>,
}

impl PublicKeys {
    /// Refuses an empty or oversized set, a repeated key id, a non-positive event and
    /// weak (small-order) keys.
    pub fn new(event: EventId, keys: Vec<(KeyId, VerifyingKey)>) -> Result<PublicKeys, KeyError> {
        if event.0 <= 0 {
            return Err(KeyError::BadEvent);
        }
        if keys.is_empty() || keys.len() > MAX_KEYS {
            return Err(KeyError::TooManyKeys);
        }
        if keys.iter().any(|(_, k)| k.is_weak()) {
            return Err(KeyError::BadKey);
        }
        let mut ids: Vec<u32> = keys.iter().map(|(id, _)| id.0).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(KeyError::DuplicateKeyId);
        }
        Ok(PublicKeys { event, keys })
    }

    pub fn event(&self) -> EventId {
        self.event
    }

    pub fn ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        self.keys.iter().map(|(id, _)| *id)
    }

    pub(super) fn key(&self, kid: KeyId) -> Option<&VerifyingKey> {
        self.keys.iter().find(|(id, _)| *id == kid).map(|(_, k)| k)
    }
}

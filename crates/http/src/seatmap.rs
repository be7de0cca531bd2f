//! The seat map document, rendered once per event version and node: a stadium's map
//! is megabytes of JSON, and it is public, so it must not be built per request. The
//! first request after a change renders it; requests arriving meanwhile wait for that
//! rendering instead of starting their own.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderValue;
use boxoffice_domain::EventId;
use boxoffice_domain::catalog::PriceTier;
use boxoffice_domain::{Event, SeatIndex, Section, SectionKind};
use boxoffice_engine::{EngineError, EventEntry};
use parking_lot::Mutex;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::error::ApiError;

/// Events whose maps are kept; beyond it, one is dropped to make room.
const MAX_MAPS: usize = 64;

/// A rendered map and its ETag; cloning shares the body.
#[derive(Clone)]
pub(crate) struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
}

/// The event version a rendering belongs to (the cached entry is replaced whenever
/// the event changes), and the rendering, done at most once.
type Slot = (Arc<EventEntry>, Arc<OnceCell<Rendered>>);

#[derive(Default)]
pub(crate) struct SeatMaps {
    by_event: Mutex<HashMap<EventId, Slot>>,
}

impl SeatMaps {
    /// The rendered map of this version of the event.
    pub(crate) async fn get(&self, entry: &Arc<EventEntry>) -> Result<Rendered, ApiError> {
        let cell = self.cell(entry);
        let rendered = cell
            .get_or_try_init(|| async {
                let entry = entry.clone();
                tokio::task::spawn_blocking(move || render(&entry))
                    .await
                    .map_err(|e| EngineError::Internal(format!("rendering a seat map: {e}")))
            })
            .await?;
        Ok(rendered.clone())
    }

    fn cell(&self, entry: &Arc<EventEntry>) -> Arc<OnceCell<Rendered>> {
        let id = entry.event.id;
        let mut maps = self.by_event.lock();
        if let Some((of, cell)) = maps.get(&id)
            && Arc::ptr_eq(of, entry)
        {
            return cell.clone();
        }
        if maps.len() >= MAX_MAPS && !maps.contains_key(&id) {
            let evict = maps.keys().next().copied();
            evict.map(|k| maps.remove(&k));
        }
        let cell = Arc::new(OnceCell::new());
        maps.insert(id, (entry.clone(), cell.clone()));
        cell
    }
}

/// The static layout of an event, for drawing the map. Seat state is not here: see the
/// availability bitmap.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = SeatMap)]
pub struct SeatMapOut<'a> {
    event_id: EventId,
    tiers: &'a [PriceTier],
    sections: Vec<SeatMapSection<'a>>,
}

/// A section of the seat map, its rows front first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SeatMapSection<'a> {
    key: &'a str,
    name: &'a str,
    kind: SectionKind,
    rows: Vec<SeatMapRow<'a>>,
}

/// A row of the seat map.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SeatMapRow<'a> {
    label: &'a str,
    seats: Vec<SeatMapSeat<'a>>,
}

/// A seat at (x, y) = (its number, its row's place in the section).
#[derive(Serialize, utoipa::ToSchema)]
pub struct SeatMapSeat<'a> {
    /// The seat's bit in the availability bitmap.
    #[schema(value_type = u32)]
    index: SeatIndex,
    /// Public seat id, used in hold requests and tickets.
    seat_id: &'a str,
    /// 1-based seat number in its row (unit number in GA).
    number: u32,
    /// Price tier key.
    tier: &'a str,
    /// Horizontal position within the row (the seat number).
    x: u32,
    /// Row position within the section, 0 = front.
    y: usize,
}

fn section<'a>(e: &'a Event, s: &'a Section) -> SeatMapSection<'a> {
    let rows = (s.rows.iter().enumerate())
        .map(|(y, r)| SeatMapRow {
            label: &r.label,
            seats: (r.first_seat..r.first_seat + r.len)
                .map(|i| {
                    let seat = &e.seats[i as usize];
                    SeatMapSeat {
                        index: i,
                        seat_id: &seat.label,
                        number: seat.number,
                        tier: &e.tiers[seat.tier as usize].key,
                        x: seat.number,
                        y,
                    }
                })
                .collect(),
        })
        .collect();
    SeatMapSection {
        key: &s.key,
        name: &s.name,
        kind: s.kind,
        rows,
    }
}

fn render(entry: &EventEntry) -> Rendered {
    metrics::counter!("boxoffice_seatmap_renders_total").increment(1);
    let e = &entry.event;
    let doc = SeatMapOut {
        event_id: e.id,
        tiers: &e.tiers,
        sections: e.sections.iter().map(|s| section(e, s)).collect(),
    };
    let body = serde_json::to_string(&doc).unwrap_or_default();
    let digest = Sha256::digest(body.as_bytes());
    let etag = format!("\"{}\"", boxoffice_domain::fairness::hex(&digest[..8]));
    Rendered {
        body: Bytes::from(body),
        etag: HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"0\"")),
    }
}

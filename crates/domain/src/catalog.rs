//! The catalog: what an event sells. An event has sections; a seated section has rows
//! of seats, a general-admission (GA) section has numbered units with no position.
//! Every sellable unit is a `Seat` with a stable index (its bit in the availability
//! bitmap), a public label, a quality rank (lower is better) and a price tier.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ids::{EventId, SeatIndex};
use crate::money::Money;
use crate::time::Millis;

/// Limits that keep one event's catalog within what the stores are sized for.
pub const MAX_SEATS_PER_EVENT: usize = 250_000;
pub const MAX_SECTIONS: usize = 500;
pub const MAX_TICKETS_PER_BUYER: u32 = 50;

/// A price, referenced by key from sections and rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PriceTier {
    /// Unique within the event.
    #[schema(pattern = "^[A-Za-z0-9_]{1,24}$")]
    pub key: String,
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// Price per seat in minor units, 0-100000000.
    pub price: Money,
}

/// A row of a seated section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RowSpec {
    /// Row label shown to buyers, e.g. "A".
    pub label: String,
    /// Number of seats in the row, numbered from 1.
    #[schema(minimum = 1)]
    pub seats: u32,
    /// Tier key overriding the section's tier for this row.
    #[serde(default)]
    pub tier: Option<String>,
}

/// A seated section (rows) or a general-admission one (ga_capacity), not both.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SectionSpec {
    /// Unique within the event; used by best_available and in seat ids.
    #[schema(pattern = "^[A-Za-z0-9_]{1,24}$")]
    pub key: String,
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// Key of the section's default price tier.
    pub tier: String,
    /// Lower is better; best_available ranks sections by this, then front rows, then
    /// seats near the row centre.
    #[serde(default)]
    pub quality: u32,
    /// Rows of a seated section, front first.
    #[serde(default)]
    pub rows: Vec<RowSpec>,
    /// Set instead of rows for a general-admission section: the number of unnumbered
    /// units.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 250_000)]
    pub ga_capacity: Option<u32>,
}

/// How an event sells. When omitted: 4 tickets per buyer, 480 s hold TTL, 120 s
/// payment grace, 500 admissions/s, late payments refunded, not refundable by buyers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SaleSettings {
    #[schema(minimum = 1, maximum = 50)]
    pub max_tickets_per_buyer: u32,
    /// How long a hold lasts (seconds) before its seats return to stock.
    #[schema(minimum = 10, maximum = 3600)]
    pub hold_ttl_s: u32,
    /// How long (seconds) a hold in checkout stays pinned while the payment provider
    /// answers.
    #[schema(minimum = 5, maximum = 3600)]
    pub payment_grace_s: u32,
    /// Buyers admitted from the queue per second.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub admission_rate_per_s: u32,
    /// When true, a payment that arrives after the hold's payment grace ran out is
    /// fulfilled if every seat of its order is still free; otherwise (and always when
    /// false) it is refunded or voided.
    #[serde(default)]
    pub honour_late_payments: bool,
    /// Until when buyers may return their own orders (`POST /v1/orders/{id}/refund`).
    /// Absent or null (the default): buyers cannot; only the operator cancels sales.
    #[serde(default)]
    pub buyer_refunds: Option<crate::refunds::RefundWindow>,
    /// Whether and until when holders may transfer their tickets to another buyer
    /// (`POST /v1/tickets/{id}/transfers`). None (the default): tickets stay with
    /// their buyers.
    #[serde(default)]
    pub transfers: Option<crate::transfers::TransferRules>,
    /// Whether tickets carry the attendee's name, and whether it is needed at checkout
    /// or only before the doors. Off by default.
    #[serde(default)]
    pub attendee_names: crate::attendees::AttendeeNames,
    /// Whether and until when holders may resell their tickets at face value on the
    /// exchange (`POST /v1/tickets/{id}/listings`), and the fee kept from the seller.
    /// None (the default): no exchange.
    #[serde(default)]
    pub exchange: Option<crate::exchange::ExchangeRules>,
    /// Payment velocity limits and buyer signals, checked before the provider is
    /// called. None (the default): off; `{}`: every limit at its default.
    #[serde(default)]
    pub velocity: Option<crate::velocity::VelocityRules>,
    /// Whether holds, checkouts and releases carry a proof of possession of the key the
    /// buyer bound at join (RFC 9449 DPoP): off (the default), optional or required.
    #[serde(default)]
    pub proof_of_possession: crate::possession::PopMode,
}

impl Default for SaleSettings {
    fn default() -> Self {
        SaleSettings {
            max_tickets_per_buyer: 4,
            hold_ttl_s: 480,
            payment_grace_s: 120,
            admission_rate_per_s: 500,
            honour_late_payments: false,
            buyer_refunds: None,
            transfers: None,
            attendee_names: Default::default(),
            exchange: None,
            velocity: None,
            proof_of_possession: crate::possession::PopMode::Off,
        }
    }
}

/// Everything an event sells. At most 250000 seats in total, at least one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventSpec {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// ISO 4217 code.
    #[serde(default = "default_currency")]
    #[schema(pattern = "^[A-Z]{3}$")]
    pub currency: String,
    /// Price tiers, referenced by key.
    #[schema(min_items = 1, max_items = 100)]
    pub tiers: Vec<PriceTier>,
    #[schema(min_items = 1, max_items = 500)]
    pub sections: Vec<SectionSpec>,
    #[serde(default)]
    pub sale: SaleSettings,
    /// Where the event takes place, as buyers read it (1-200 characters).
    #[serde(default)]
    pub venue: Option<String>,
    /// When the sale is announced to open: told to buyers, not acted on (the operator
    /// opens the sale).
    #[serde(default)]
    pub opens_at: Option<Millis>,
}

fn default_currency() -> String {
    "EUR".into()
}

/// scheduled → open → closed; a closed sale never reopens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaleStatus {
    Scheduled,
    Open,
    Closed,
}

impl SaleStatus {
    pub const ALL: [SaleStatus; 3] = [SaleStatus::Scheduled, SaleStatus::Open, SaleStatus::Closed];

    /// The name in the API and in the ledgers' `events.status` column (whose CHECK lists
    /// exactly these names).
    pub fn as_str(self) -> &'static str {
        match self {
            SaleStatus::Scheduled => "scheduled",
            SaleStatus::Open => "open",
            SaleStatus::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<SaleStatus> {
        SaleStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// Numbered seats in rows, or unnumbered general-admission units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    Seated,
    GeneralAdmission,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub label: String,
    pub first_seat: SeatIndex,
    pub len: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub key: String,
    pub name: String,
    pub kind: SectionKind,
    pub rows: Vec<Row>,
    pub first_seat: SeatIndex,
    pub len: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    pub label: String,
    pub section: u16,
    pub row: u16,
    /// 1-based seat number within its row (or unit number in a GA section).
    pub number: u32,
    pub rank: u32,
    pub tier: u16,
}

/// A validated event with every seat laid out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub name: String,
    pub currency: String,
    pub status: SaleStatus,
    pub sale: SaleSettings,
    pub tiers: Vec<PriceTier>,
    pub sections: Vec<Section>,
    pub seats: Vec<Seat>,
    pub created_at: Millis,
    #[serde(default)]
    pub venue: Option<String>,
    #[serde(default)]
    pub opens_at: Option<Millis>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CatalogError {
    #[error("{0}")]
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, CatalogError> {
    Err(CatalogError::Invalid(msg.into()))
}

fn check_key(what: &str, key: &str) -> Result<(), CatalogError> {
    let ok = !key.is_empty()
        && key.len() <= 24
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        invalid(format!(
            "{what} key {key:?} must be 1-24 letters, digits or _"
        ))
    }
}

fn check_name(what: &str, name: &str) -> Result<(), CatalogError> {
    if name.trim().is_empty() || name.len() > 200 {
        invalid(format!("{what} name must be 1-200 characters"))
    } else {
        Ok(())
    }
}

impl EventSpec {
    /// Validates the spec and lays out every seat. Quality rank: section quality first,
    /// then row order (front rows better), then distance from the row's centre.
    pub fn build(&self, id: EventId, created_at: Millis) -> Result<Event, CatalogError> {
        self.check_header()?;
        let tier_of: HashMap<&str, u16> = self
            .tiers
            .iter()
            .enumerate()
            .map(|(i, t)| (t.key.as_str(), i as u16))
            .collect();
        let mut sections = Vec::with_capacity(self.sections.len());
        let mut seats: Vec<Seat> = Vec::new();
        for (si, spec) in self.sections.iter().enumerate() {
            if sections.iter().any(|s: &Section| s.key == spec.key) {
                return invalid(format!("section key {:?} is used twice", spec.key));
            }
            sections.push(lay_out_section(spec, si as u16, &tier_of, &mut seats)?);
            if seats.len() > MAX_SEATS_PER_EVENT {
                return invalid(format!(
                    "an event may have at most {MAX_SEATS_PER_EVENT} seats"
                ));
            }
        }
        if seats.is_empty() {
            return invalid("an event needs at least one seat");
        }
        Ok(Event {
            id,
            name: self.name.trim().to_string(),
            currency: self.currency.clone(),
            status: SaleStatus::Scheduled,
            sale: self.sale.clone(),
            tiers: self.tiers.clone(),
            sections,
            seats,
            created_at,
            venue: self.venue.as_ref().map(|v| v.trim().to_string()),
            opens_at: self.opens_at,
        })
    }

    fn check_header(&self) -> Result<(), CatalogError> {
        check_name("event", &self.name)?;
        if let Some(venue) = &self.venue {
            check_name("venue", venue)?;
        }
        if self.currency.len() != 3 || !self.currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return invalid("currency must be a three-letter ISO 4217 code such as EUR");
        }
        if self.tiers.is_empty() || self.tiers.len() > 100 {
            return invalid("an event needs 1-100 price tiers");
        }
        for (i, t) in self.tiers.iter().enumerate() {
            check_key("tier", &t.key)?;
            check_name("tier", &t.name)?;
            if t.price.0 < 0 || t.price.0 > 100_000_000 {
                return invalid(format!(
                    "tier {:?} price must be 0-100000000 minor units",
                    t.key
                ));
            }
            if self.tiers[..i].iter().any(|o| o.key == t.key) {
                return invalid(format!("tier key {:?} is used twice", t.key));
            }
        }
        if self.sections.is_empty() || self.sections.len() > MAX_SECTIONS {
            return invalid(format!("an event needs 1-{MAX_SECTIONS} sections"));
        }
        let s = &self.sale;
        if let Some(Err(why)) = s.exchange.as_ref().map(|x| x.check()) {
            return invalid(why);
        }
        if s.max_tickets_per_buyer == 0 || s.max_tickets_per_buyer > MAX_TICKETS_PER_BUYER {
            return invalid(format!(
                "max_tickets_per_buyer must be 1-{MAX_TICKETS_PER_BUYER}"
            ));
        }
        if !(10..=3600).contains(&s.hold_ttl_s) {
            return invalid("hold_ttl_s must be 10-3600");
        }
        if !(5..=3600).contains(&s.payment_grace_s) {
            return invalid("payment_grace_s must be 5-3600");
        }
        if !(1..=1_000_000).contains(&s.admission_rate_per_s) {
            return invalid("admission_rate_per_s must be 1-1000000");
        }
        if s.transfers
            .is_some_and(|t| t.max_name_changes > crate::transfers::MAX_NAME_CHANGES)
        {
            return invalid(format!(
                "transfers.max_name_changes must be 0-{}",
                crate::transfers::MAX_NAME_CHANGES
            ));
        }
        if let Some(v) = &s.velocity {
            v.validate().map_err(CatalogError::Invalid)?;
        }
        // `honour_late_payments` is a bool: every value is valid.
        Ok(())
    }
}

fn lay_out_section(
    spec: &SectionSpec,
    index: u16,
    tier_of: &HashMap<&str, u16>,
    seats: &mut Vec<Seat>,
) -> Result<Section, CatalogError> {
    check_key("section", &spec.key)?;
    check_name("section", &spec.name)?;
    let tier_index = |key: &str| {
        tier_of
            .get(key)
            .copied()
            .ok_or_else(|| CatalogError::Invalid(format!("unknown tier {key:?}")))
    };
    let section_tier = tier_index(&spec.tier)?;
    let first_seat = seats.len() as SeatIndex;
    let base_rank = spec.quality.min(1_000) * 1_000_000;
    let (kind, rows) = match (spec.ga_capacity, spec.rows.is_empty()) {
        (Some(cap), true) => {
            if cap == 0 || cap as usize > MAX_SEATS_PER_EVENT {
                return invalid(format!(
                    "section {:?}: ga_capacity must be 1-{MAX_SEATS_PER_EVENT}",
                    spec.key
                ));
            }
            for n in 1..=cap {
                let label = format!("{}-GA-{n:06}", spec.key);
                seats.push(Seat {
                    label,
                    section: index,
                    row: 0,
                    number: n,
                    rank: base_rank,
                    tier: section_tier,
                });
            }
            (
                SectionKind::GeneralAdmission,
                vec![Row {
                    label: "GA".into(),
                    first_seat,
                    len: cap,
                }],
            )
        }
        (None, false) => (
            SectionKind::Seated,
            lay_out_rows(spec, index, base_rank, section_tier, &tier_index, seats)?,
        ),
        _ => {
            return invalid(format!(
                "section {:?} needs either rows or ga_capacity, not both",
                spec.key
            ));
        }
    };
    let len = seats.len() as u32 - first_seat;
    Ok(Section {
        key: spec.key.clone(),
        name: spec.name.trim().to_string(),
        kind,
        rows,
        first_seat,
        len,
    })
}

fn lay_out_rows(
    spec: &SectionSpec,
    index: u16,
    base_rank: u32,
    section_tier: u16,
    tier_index: &dyn Fn(&str) -> Result<u16, CatalogError>,
    seats: &mut Vec<Seat>,
) -> Result<Vec<Row>, CatalogError> {
    if spec.rows.len() > 999 {
        return invalid(format!("section {:?} may have at most 999 rows", spec.key));
    }
    let mut rows = Vec::with_capacity(spec.rows.len());
    for (ri, row) in spec.rows.iter().enumerate() {
        check_key("row", &row.label)?;
        if rows.iter().any(|r: &Row| r.label == row.label) {
            return invalid(format!(
                "section {:?}: row {:?} is used twice",
                spec.key, row.label
            ));
        }
        if row.seats == 0 || row.seats > 999 {
            return invalid(format!(
                "section {:?} row {:?}: seats must be 1-999",
                spec.key, row.label
            ));
        }
        let tier = match &row.tier {
            Some(t) => tier_index(t)?,
            None => section_tier,
        };
        let first_seat = seats.len() as SeatIndex;
        let centre2 = row.seats + 1; // twice the centre, to stay in integers
        for n in 1..=row.seats {
            let off_centre = (2 * n).abs_diff(centre2);
            let rank = base_rank + ri as u32 * 1_000 + off_centre;
            let label = format!("{}-{}-{}", spec.key, row.label, n);
            seats.push(Seat {
                label,
                section: index,
                row: ri as u16,
                number: n,
                rank,
                tier,
            });
        }
        rows.push(Row {
            label: row.label.clone(),
            first_seat,
            len: row.seats,
        });
    }
    Ok(rows)
}

impl Event {
    pub fn capacity(&self) -> u32 {
        self.seats.len() as u32
    }

    pub fn price_of(&self, seat: SeatIndex) -> Money {
        self.tiers[self.seats[seat as usize].tier as usize].price
    }

    pub fn section_index(&self, key: &str) -> Option<u16> {
        self.sections
            .iter()
            .position(|s| s.key == key)
            .map(|i| i as u16)
    }

    /// A label → index map; built once per event by whoever needs lookups.
    pub fn seat_lookup(&self) -> HashMap<String, SeatIndex> {
        self.seats
            .iter()
            .enumerate()
            .map(|(i, s)| (s.label.clone(), i as SeatIndex))
            .collect()
    }
}

#[cfg(test)]
mod tests;

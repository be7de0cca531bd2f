//! The event a rehearsal sells: a fresh one made with the operator key (scheduled, so
//! the rush lands in the pre-opening pool, and opened when the rush is over), or one
//! that exists already; its admission rate and proof of work set as asked, and the
//! made event's proofs of possession and velocity rules.

use std::time::Duration;

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::exchange::ExchangeRules;
use boxoffice_domain::possession::PopMode;
use boxoffice_domain::transfers::TransferRules;
use boxoffice_domain::{EventSpec, Millis, Money, SaleSettings};
use serde_json::{Value, json};

use super::api::{Answer, Api, Call};
use super::record::Step;
use super::shop::Layout;

/// The event as the run sells it.
pub struct Prepared {
    pub event: i64,
    pub capacity: u64,
    pub max_per_buyer: u32,
    pub layout: Layout,
    /// Made by this run and not open yet: the run opens it after the rush.
    pub to_open: bool,
    /// The event asks for proofs of possession (optional or required): only then do
    /// the buyers make keys and sign a proof for each request that may carry one.
    pub proofs: bool,
}

/// Rows per seated section (the catalog takes at most 999 a section).
const ROWS_PER_SECTION: u32 = 500;

/// A fresh event of about `seats` units: six tenths seated (rows of ten, in stands of at
/// most 500 rows: A, B, ...), the rest standing, sold under the run's limits and layers.
pub fn spec(s: &super::Settings) -> EventSpec {
    let (seats, hold_ttl_s) = (s.seats, s.hold_ttl_s);
    let (admission_rate_per_s, max_per_buyer) = (s.event_rate_per_s, s.max_per_buyer);
    let rows = (seats * 6 / 10).div_ceil(10).max(1);
    let ga = seats.saturating_sub(rows * 10);
    let mut sections: Vec<SectionSpec> = (0..rows.div_ceil(ROWS_PER_SECTION))
        .map(|i| {
            let key = match u8::try_from(i) {
                Ok(n) if n < 26 => char::from(b'A' + n).to_string(),
                _ => format!("S{}", i + 1),
            };
            let first = i * ROWS_PER_SECTION + 1;
            let last = ((i + 1) * ROWS_PER_SECTION).min(rows);
            SectionSpec {
                name: format!("Stand {key}"),
                key,
                tier: "STD".into(),
                quality: 1,
                rows: (first..=last)
                    .map(|r| RowSpec {
                        label: r.to_string(),
                        seats: 10,
                        tier: None,
                    })
                    .collect(),
                ga_capacity: None,
            }
        })
        .collect();
    if ga > 0 {
        sections.push(SectionSpec {
            key: "GA".into(),
            name: "Floor".into(),
            tier: "STD".into(),
            quality: 0,
            rows: vec![],
            ga_capacity: Some(ga),
        });
    }
    // Doors a month away: transfers and the exchange stay open through the run.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let doors_at = Millis(now_ms).plus_secs(30 * 86_400);
    EventSpec {
        name: format!("Rehearsal {}", uuid::Uuid::new_v4()),
        venue: None,
        opens_at: None,
        currency: "EUR".into(),
        tiers: vec![PriceTier {
            key: "STD".into(),
            name: "Standard".into(),
            price: Money(5_000),
        }],
        sections,
        sale: SaleSettings {
            max_tickets_per_buyer: max_per_buyer,
            hold_ttl_s,
            payment_grace_s: 120,
            admission_rate_per_s,
            transfers: s.transfers.map(|policy| TransferRules {
                doors_at,
                closes_before_doors_s: 3_600,
                offer_ttl_s: 600,
                policy,
                max_name_changes: 1,
            }),
            exchange: s.exchange.then_some(ExchangeRules {
                doors_at,
                closes_before_doors_s: 3_600,
                fee_bps: 0,
                fee_fixed: Money(0),
            }),
            attendee_names: s.names,
            proof_of_possession: s.proofs,
            velocity: s.velocity.clone(),
            ..SaleSettings::default()
        },
    }
}

/// An operator call, tried again while the server sheds load or does not answer
/// (a rehearsal may be running it hot).
async fn operator(api: &Api, key: &str, call: Call<'_>) -> anyhow::Result<Value> {
    let base = api.targets[0].clone();
    let what = format!("{} {}", call.method, call.path);
    let call = call.token(key);
    let mut last = None;
    for attempt in 0..20u32 {
        let a: Answer = api.send_unbounded(&base, call.clone()).await;
        if a.ok() {
            return Ok(a.body);
        }
        if !a.failed() {
            anyhow::bail!("{what}: {} {}", a.status, a.body);
        }
        last = Some(a);
        let pause = Duration::from_millis(100 * u64::from(attempt.min(10) + 1));
        tokio::time::sleep(pause).await;
    }
    let a = last
        .map(|a| format!("{} {}", a.status, a.body))
        .unwrap_or_default();
    anyhow::bail!("{what}: {a} (20 attempts)")
}

/// Makes (or reads) the event and sets it up.
pub async fn prepare(api: &Api, key: &str, s: &super::Settings) -> anyhow::Result<Prepared> {
    let idem = || uuid::Uuid::new_v4().to_string();
    let (event, to_open) = match s.event {
        Some(id) => (id, false),
        None => {
            let spec = spec(s);
            let k = idem();
            let body = serde_json::to_value(&spec)?;
            let e = operator(api, key, Call::post(Step::Observe, "/v1/events", body, &k)).await?;
            let id = e["event_id"]
                .as_i64()
                .ok_or_else(|| anyhow::anyhow!("no event id in {e}"))?;
            (id, true)
        }
    };
    if let Some(rate) = s.admission_rate {
        set_admission(api, key, event, rate).await?;
    }
    if let Some(body) = waiting_rules(s) {
        let path = format!("/v1/events/{event}/waiting-room");
        let call = Call {
            method: reqwest::Method::PUT,
            body: Some(body),
            ..Call::get(Step::Observe, &path)
        };
        operator(api, key, call).await?;
    }
    let to_open = to_open && s.arrivals.rush_share > 0.0;
    if !to_open && s.event.is_none() {
        open(api, key, event).await?;
    }
    let info = operator(
        api,
        key,
        Call::get(Step::Observe, &format!("/v1/events/{event}")),
    )
    .await?;
    let map = operator(
        api,
        key,
        Call::get(Step::Observe, &format!("/v1/events/{event}/seatmap")),
    )
    .await?;
    Ok(Prepared {
        event,
        capacity: info["capacity"].as_u64().unwrap_or(0),
        max_per_buyer: info["sale"]["max_tickets_per_buyer"].as_u64().unwrap_or(1) as u32,
        layout: Layout::from_seatmap(&map),
        to_open,
        proofs: serde_json::from_value::<PopMode>(info["sale"]["proof_of_possession"].clone())
            .unwrap_or_default()
            != PopMode::Off,
    })
}

/// The waiting-room rules the run asks for, as one document (the rules are put whole),
/// or `None` when it asks for none.
fn waiting_rules(s: &super::Settings) -> Option<Value> {
    let asks =
        s.pow_difficulty > 0 || s.max_active_shoppers.is_some() || s.buyers_per_free_seat.is_some();
    asks.then(|| {
        json!({
            "pow_difficulty": s.pow_difficulty,
            "max_active_shoppers": s.max_active_shoppers,
            "buyers_per_free_seat": s.buyers_per_free_seat,
        })
    })
}

/// Opens the sale.
pub async fn open(api: &Api, key: &str, event: i64) -> anyhow::Result<()> {
    let path = format!("/v1/events/{event}/open");
    let k = uuid::Uuid::new_v4().to_string();
    operator(api, key, Call::post(Step::Observe, &path, json!({}), &k)).await?;
    Ok(())
}

/// The operator's admission override: a fixed rate.
pub async fn set_admission(api: &Api, key: &str, event: i64, rate: u32) -> anyhow::Result<()> {
    let path = format!("/v1/events/{event}/admission");
    let call = Call {
        method: reqwest::Method::PUT,
        body: Some(json!({ "mode": "fixed", "rate_per_s": rate })),
        ..Call::get(Step::Observe, &path)
    };
    operator(api, key, call).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::{EventId, Millis};

    use super::*;

    /// The demo stadium's size (and past it) makes a valid event: the seated share in
    /// stands the catalog accepts, every unit counted once.
    #[test]
    fn a_stadium_sized_rehearsal_event_is_one_the_catalog_accepts() {
        for seats in [100, 51_000, 250_000] {
            let settings = super::super::Settings {
                seats,
                ..super::super::Settings::default()
            };
            let event = spec(&settings)
                .build(EventId(1), Millis(0))
                .unwrap_or_else(|e| panic!("{seats} units: {e:?}"));
            assert_eq!(event.capacity(), seats, "{seats} units");
        }
    }

    /// The waiting room's rules are put whole: a run that asks for a cap on active
    /// shoppers, a proof of work, or both sends them in one document the route takes,
    /// and a run that asks for neither puts none (the event keeps its defaults).
    #[test]
    fn the_waiting_rules_a_run_asks_for_go_in_one_document() {
        let with =
            |pow_difficulty, max_active_shoppers, buyers_per_free_seat| super::super::Settings {
                pow_difficulty,
                max_active_shoppers,
                buyers_per_free_seat,
                ..super::super::Settings::default()
            };
        assert_eq!(waiting_rules(&with(0, None, None)), None);
        let both = waiting_rules(&with(3, Some(2_000), None)).expect("rules");
        assert_eq!(
            both,
            json!({"pow_difficulty": 3, "max_active_shoppers": 2000, "buyers_per_free_seat": null})
        );
        let cap = waiting_rules(&with(0, Some(5), Some(2))).expect("rules");
        let rules: boxoffice_engine::waiting::WaitingRules =
            serde_json::from_value(cap).expect("rules the route takes");
        assert_eq!(rules.max_active_shoppers, Some(5));
        assert_eq!(rules.buyers_per_free_seat, Some(2));
        assert_eq!(rules.pow_difficulty, 0);
        let seats = waiting_rules(&with(0, None, Some(1))).expect("rules");
        let rules: boxoffice_engine::waiting::WaitingRules =
            serde_json::from_value(seats).expect("rules the route takes");
        assert_eq!(rules.buyers_per_free_seat, Some(1));
    }
}

//! An admitted buyer shops: a hold (named seats, the best available or standing
//! units), a moment's thought, then walking away, releasing, or checking out with a
//! card that approves, declines, asks for 3-D Secure (approved on the stand-in bank's
//! page) or never answers (the order is followed until it settles).

use std::time::{Duration, Instant};

use boxoffice_domain::OrderState;
use boxoffice_domain::possession::ProofKey;
use rand::Rng;
use rand::rngs::StdRng;
use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Answer, Call, Stop};
use super::buyer::{BuyerResult, Ctx, Outcome, backoff, note, retryable};
use super::crowd::{Profile, pick};
use super::record::{Recorder, Step};
use super::resell::letters;

/// The event's sections as buyers choose from them.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Seated sections: key and rows of seat ids.
    pub seated: Vec<(String, Vec<Vec<String>>)>,
    /// General-admission section keys.
    pub ga: Vec<String>,
    /// Every section's key (seated, then standing) and its seats' bits in the
    /// availability bitmap, as ranges of indices.
    pub bits: Vec<(String, Vec<std::ops::Range<u32>>)>,
}

impl Layout {
    /// From `GET /v1/events/{id}/seatmap`.
    pub fn from_seatmap(map: &Value) -> Layout {
        let mut layout = Layout::default();
        let mut seated_bits = Vec::new();
        let mut ga_bits = Vec::new();
        for s in map["sections"].as_array().into_iter().flatten() {
            let key = s["key"].as_str().unwrap_or_default().to_owned();
            let indices = (s["rows"].as_array().into_iter().flatten())
                .flat_map(|r| r["seats"].as_array().into_iter().flatten())
                .filter_map(|seat| seat["index"].as_u64().map(|i| i as u32));
            let ranges = (key.clone(), ranges(indices));
            if s["kind"] == "seated" {
                seated_bits.push(ranges);
            } else {
                ga_bits.push(ranges);
            }
            if s["kind"] == "seated" {
                let rows = (s["rows"].as_array().into_iter().flatten())
                    .map(|r| {
                        (r["seats"].as_array().into_iter().flatten())
                            .filter_map(|seat| seat["seat_id"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .collect();
                layout.seated.push((key, rows));
            } else {
                layout.ga.push(key);
            }
        }
        layout.bits = seated_bits.into_iter().chain(ga_bits).collect();
        layout
    }

    /// The sections with at least `quantity` seats free in an availability bitmap
    /// (bit i of the seat with index i, most significant bit first).
    /// A section's count stops as soon as it has enough: every refused buyer of a
    /// stadium reads the whole map, so this is on the crowd's hot path.
    pub fn sections_with(&self, bitmap: &[u8], quantity: u32) -> Vec<&str> {
        let enough = |ranges: &[std::ops::Range<u32>]| {
            let mut n = 0;
            ranges.iter().any(|r| {
                n += free_in(bitmap, r.clone());
                n >= quantity
            }) || quantity == 0
        };
        (self.bits.iter())
            .filter(|(_, ranges)| enough(ranges))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    fn sections(&self) -> impl Iterator<Item = &str> {
        (self.seated.iter().map(|(k, _)| k.as_str())).chain(self.ga.iter().map(String::as_str))
    }
}

/// How many times a refused buyer looks at the map and tries again.
const LOOKS: usize = 3;

pub struct Shopper<'a> {
    pub ctx: &'a Ctx,
    pub base: &'a str,
    pub token: &'a str,
    /// The key the admission is bound to, when the event asks for proofs: every hold,
    /// release and checkout proves it.
    pub key: Option<&'a ProofKey>,
    pub admission: &'a str,
    pub profile: Profile,
    /// The card this shopper pays with, whatever the mix would draw (a farm's one card,
    /// a line-sitter's customer's own).
    pub card: Option<&'a str>,
}

/// A hold that was granted.
struct Held {
    id: String,
    /// How many seats it holds.
    seats: usize,
}

enum HoldAnswer {
    Held(Held),
    /// Try another choice (the seats were taken, that section is sold out).
    Other,
    /// Give up.
    No,
}

/// Indices folded into ascending ranges of consecutive numbers.
/// The bits set in `bits` of an availability bitmap (bit i of byte i / 8, most
/// significant bit first; bytes past the end count as taken), a byte at a time.
fn free_in(bitmap: &[u8], bits: std::ops::Range<u32>) -> u32 {
    if bits.is_empty() {
        return 0;
    }
    let (first, last) = ((bits.start >> 3) as usize, ((bits.end - 1) >> 3) as usize);
    let head = 0xffu8 >> (bits.start & 7);
    let tail = 0xffu8 << (7 - ((bits.end - 1) & 7));
    let byte = |i: usize| bitmap.get(i).copied().unwrap_or(0);
    if first == last {
        return (byte(first) & head & tail).count_ones();
    }
    let middle = bitmap.get(first + 1..last.min(bitmap.len())).unwrap_or(&[]);
    let middle: u32 = middle.iter().map(|b| b.count_ones()).sum();
    (byte(first) & head).count_ones() + middle + (byte(last) & tail).count_ones()
}

fn ranges(indices: impl Iterator<Item = u32>) -> Vec<std::ops::Range<u32>> {
    let mut sorted: Vec<u32> = indices.collect();
    sorted.sort_unstable();
    let mut out: Vec<std::ops::Range<u32>> = Vec::new();
    for i in sorted {
        match out.last_mut() {
            Some(r) if r.end == i => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

impl Shopper<'_> {
    pub async fn shop(&self, rng: &mut StdRng, r: &mut BuyerResult) -> Result<Outcome, Stop> {
        let bot = self.profile.greedy();
        let mix = &self.ctx.mix;
        let quantity = if bot {
            self.ctx.max_per_buyer
        } else {
            pick(rng, &mix.quantity) as u32 + 1
        };
        let Some(held) = self.hold(rng, quantity).await? else {
            return Ok(Outcome::NoHold);
        };
        let rec = &self.ctx.api.rec;
        Recorder::add(&rec.holding, 1);
        let outcome = self.after_hold(rng, &held, bot, r).await;
        Recorder::add(&rec.holding, -1);
        outcome
    }

    async fn after_hold(
        &self,
        rng: &mut StdRng,
        held: &Held,
        bot: bool,
        r: &mut BuyerResult,
    ) -> Result<Outcome, Stop> {
        let mix = &self.ctx.mix;
        if !bot {
            let think = rng.random_range(mix.think_min_ms..=mix.think_max_ms.max(mix.think_min_ms));
            self.ctx.api.pause(Duration::from_millis(think)).await?;
            let u: f64 = rng.random();
            if u < mix.abandon {
                return Ok(Outcome::Abandoned);
            }
            if u < mix.abandon + mix.release {
                self.release(&held.id).await?;
                return Ok(Outcome::Released);
            }
        }
        let cards = [mix.approve, mix.decline, mix.three_ds, mix.timeout];
        let own = format!("pm_card_visa_{}", r.index);
        let card = match (self.card, if bot { 0 } else { pick(rng, &cards) }) {
            (Some(card), _) => card,
            (None, 0) if mix.own_cards => own.as_str(),
            (None, 0) => "pm_card_visa",
            (None, 1) => "pm_card_declined",
            (None, 2) => "pm_card_threeDSecure",
            (None, _) => "pm_timeout_after_charge",
        };
        let (outcome, tickets) = self.checkout(held, card, r.index).await?;
        if tickets > 0 {
            r.tickets = tickets;
            Recorder::add(&self.ctx.api.rec.sold, i64::from(tickets));
        }
        Ok(outcome)
    }

    /// A hold of `quantity`: the buyer's first choice; when that is refused, the
    /// buyer looks at the map as it is now (the availability the buyer app shows) and
    /// tries the best available of a section that still has that many free, at most
    /// [`LOOKS`] times, and gives up when none has. Without a map to read, each section
    /// in turn.
    async fn hold(&self, rng: &mut StdRng, quantity: u32) -> Result<Option<Held>, Stop> {
        let layout = &self.ctx.layout;
        let mix = &self.ctx.mix;
        let first = match pick(rng, &[mix.named, mix.best, mix.ga]) {
            0 => self.named(rng, quantity),
            1 => (layout.seated.first()).map(|(k, _)| best(k, quantity)),
            _ => layout.ga.first().map(|k| best(k, quantity)),
        };
        if let Some(body) = first {
            match self.try_hold(body).await? {
                HoldAnswer::Held(h) => return Ok(Some(h)),
                HoldAnswer::Other => {}
                HoldAnswer::No => return Ok(None),
            }
        }
        for _ in 0..LOOKS {
            let Some(bitmap) = self.availability().await? else {
                return self.each_section(quantity).await;
            };
            let open = layout.sections_with(&bitmap, quantity);
            if open.is_empty() {
                return Ok(None);
            }
            let section = open[rng.random_range(0..open.len())];
            match self.try_hold(best(section, quantity)).await? {
                HoldAnswer::Held(h) => return Ok(Some(h)),
                HoldAnswer::Other => {}
                HoldAnswer::No => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The best available of each section in turn, until one is granted.
    async fn each_section(&self, quantity: u32) -> Result<Option<Held>, Stop> {
        for section in self.ctx.layout.sections() {
            match self.try_hold(best(section, quantity)).await? {
                HoldAnswer::Held(h) => return Ok(Some(h)),
                HoldAnswer::Other => {}
                HoldAnswer::No => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The event's availability bitmap as it is now, or `None` when it cannot be read.
    async fn availability(&self) -> Result<Option<Vec<u8>>, Stop> {
        use base64::Engine as _;
        let path = format!("/v1/events/{}/availability", self.ctx.event);
        let a = (self.ctx.api)
            .send(self.base, Call::get(Step::Availability, &path))
            .await?;
        if !a.ok() {
            note(&self.ctx.api, Step::Availability, &a);
            return Ok(None);
        }
        let bitmap = a.body["bitmap"].as_str().unwrap_or_default();
        Ok(base64::engine::general_purpose::STANDARD
            .decode(bitmap)
            .ok())
    }

    /// `quantity` seats side by side in a random row of a random seated section.
    fn named(&self, rng: &mut StdRng, quantity: u32) -> Option<Value> {
        let seated = &self.ctx.layout.seated;
        let (_, rows) = seated.get(rng.random_range(0..seated.len().max(1)))?;
        let row = rows.get(rng.random_range(0..rows.len().max(1)))?;
        let q = (quantity as usize).min(row.len());
        let start = rng.random_range(0..=row.len() - q);
        Some(json!({ "seat_ids": row[start..start + q] }))
    }

    async fn try_hold(&self, body: Value) -> Result<HoldAnswer, Stop> {
        let path = format!("/v1/events/{}/holds", self.ctx.event);
        let key = uuid::Uuid::new_v4().to_string();
        for attempt in 0..6 {
            let call = Call::post(Step::Hold, &path, body.clone(), &key)
                .token(self.admission)
                .proving(self.key);
            let a = self.ctx.api.send(self.base, call).await?;
            if a.status == 201 {
                let id = a.body["hold_id"].as_str().unwrap_or_default().to_owned();
                let seats = a.body["seat_ids"].as_array().map_or(0, Vec::len);
                return Ok(HoldAnswer::Held(Held { id, seats }));
            }
            note(&self.ctx.api, Step::Hold, &a);
            match a.code() {
                "seat_unavailable" | "sold_out" | "limit_exceeded" => return Ok(HoldAnswer::Other),
                _ if retryable(&a) => backoff(&self.ctx.api, &a, self.profile, attempt).await?,
                _ => return Ok(HoldAnswer::No),
            }
        }
        Ok(HoldAnswer::No)
    }

    async fn release(&self, hold: &str) -> Result<(), Stop> {
        let path = format!("/v1/holds/{hold}");
        let key = uuid::Uuid::new_v4().to_string();
        let call = Call {
            method: Method::DELETE,
            key: Some(&key),
            ..Call::get(Step::Release, &path)
                .token(self.token)
                .proving(self.key)
        };
        let a = self.ctx.api.send(self.base, call).await?;
        if !a.ok() {
            note(&self.ctx.api, Step::Release, &a);
        }
        Ok(())
    }

    /// Checks out; (how it ended, tickets bought).
    async fn checkout(&self, held: &Held, card: &str, who: usize) -> Result<(Outcome, u32), Stop> {
        let path = format!("/v1/holds/{}/checkout", held.id);
        let key = uuid::Uuid::new_v4().to_string();
        let mut body = json!({ "payment_method": card });
        if self.ctx.names {
            // One name per seat: the buyer's and their party's, in letters.
            let names: Vec<String> = (0..held.seats)
                .map(|seat| format!("Fan {} {}", letters(who), letters(seat)))
                .collect();
            body["attendees"] = json!(names);
        }
        for attempt in 0..6 {
            let call = Call::post(Step::Checkout, &path, body.clone(), &key)
                .token(self.token)
                .proving(self.key);
            let a = self.ctx.api.send(self.base, call).await?;
            match a.status {
                201 => return Ok((Outcome::Bought, seats_of(&a.body))),
                202 => return self.settle(&a).await,
                _ => note(&self.ctx.api, Step::Checkout, &a),
            }
            match a.code() {
                "payment_declined" => return Ok((Outcome::Declined, 0)),
                // The wait a velocity limit asks is the rest of its window: longer than
                // a run, so the buyer stops here.
                "payment_velocity" => return Ok((Outcome::Lost, 0)),
                _ if retryable(&a) => backoff(&self.ctx.api, &a, self.profile, attempt).await?,
                _ => return Ok((Outcome::Lost, 0)),
            }
        }
        Ok((Outcome::Lost, 0))
    }

    /// A payment that has not settled: approve it at the bank when it asks, then
    /// follow the order until it does (or the run's settle time is over).
    async fn settle(&self, a: &Answer) -> Result<(Outcome, u32), Stop> {
        let order = a.body["order"]["order_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // A bank page waits for the buyer; any other next action ("poll") is the order.
        let next = &a.body["next_action"];
        if let (Some("redirect_to_url"), Some(url)) = (next["type"].as_str(), next["url"].as_str())
        {
            self.approve(url).await?;
        }
        let path = format!("/v1/orders/{order}");
        let until = Instant::now() + self.ctx.settle;
        let mut last = a.body["order"].clone();
        let mut refused = 0;
        while Instant::now() < until {
            self.ctx.api.pause(Duration::from_millis(500)).await?;
            let o = (self.ctx.api)
                .send(self.base, Call::get(Step::Order, &path).token(self.token))
                .await?;
            if !o.ok() {
                note(&self.ctx.api, Step::Order, &o);
                if retryable(&o) {
                    refused += 1;
                    backoff(&self.ctx.api, &o, self.profile, refused).await?;
                }
                continue;
            }
            last = o.body;
            if state(&last).is_some_and(OrderState::is_final) {
                break;
            }
        }
        Ok(match state(&last) {
            Some(s) if s.holds_seats() => (Outcome::Bought, seats_of(&last)),
            Some(s) if s.is_final() => (Outcome::Declined, 0),
            _ => (Outcome::Unsettled, 0),
        })
    }

    /// Presses "approve" on the bank's page, if that page is on this buyer's target; a
    /// page that says it is busy (the stand-in bank answers 50 requests a second, the
    /// rest 429 with Retry-After) is pressed again when it asks, as a person would, up
    /// to `BANK_TRIES` times.
    async fn approve(&self, url: &str) -> Result<(), Stop> {
        let path = match url.strip_prefix(self.base) {
            Some(p) => p,
            None if url.starts_with('/') => url,
            None => return Ok(()),
        };
        let approve = format!("{path}/approve");
        for attempt in 1..=BANK_TRIES {
            let call = Call {
                method: Method::POST,
                ..Call::get(Step::Bank, &approve)
            };
            let a = self.ctx.api.send(self.base, call).await?;
            if a.ok() || (300..400).contains(&a.status) {
                break;
            }
            note(&self.ctx.api, Step::Bank, &a);
            if !retryable(&a) || attempt == BANK_TRIES {
                break;
            }
            backoff(&self.ctx.api, &a, self.profile, attempt).await?;
        }
        Ok(())
    }
}

/// How often a buyer presses "approve" on a bank page that keeps saying it is busy.
const BANK_TRIES: u32 = 10;

fn best(section: &str, quantity: u32) -> Value {
    json!({ "best_available": { "section": section, "quantity": quantity } })
}

fn state(order: &Value) -> Option<OrderState> {
    serde_json::from_value(order["status"].clone()).ok()
}

fn seats_of(order: &Value) -> u32 {
    order["seat_ids"].as_array().map_or(0, |s| s.len() as u32)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// Two seated sections of 2 rows × 4 seats (indices 0-7 and 8-15) and a standing one
    /// of 6 units (16-21), as the seat map lists them.
    fn layout() -> Layout {
        let seated = |key: &str, first: u32| {
            let rows: Vec<Value> = (0..2)
                .map(|r| {
                    let seats: Vec<Value> = (0..4)
                        .map(|n| json!({"index": first + r * 4 + n, "seat_id": format!("{key}-{r}-{n}")}))
                        .collect();
                    json!({"label": r.to_string(), "seats": seats})
                })
                .collect();
            json!({"key": key, "kind": "seated", "rows": rows})
        };
        let units: Vec<Value> = (16..22)
            .map(|i| json!({"index": i, "seat_id": format!("GA-{i}")}))
            .collect();
        let ga = json!({"key": "GA", "kind": "general_admission", "rows": [{"label": "", "seats": units}]});
        Layout::from_seatmap(&json!({"sections": [seated("A", 0), ga, seated("B", 8)]}))
    }

    #[test]
    fn a_refused_buyer_reads_which_sections_still_have_enough_seats() {
        let layout = layout();
        let bits: Vec<(&str, Vec<(u32, u32)>)> = (layout.bits.iter())
            .map(|(k, r)| (k.as_str(), r.iter().map(|r| (r.start, r.end)).collect()))
            .collect();
        let ends = |s, e| vec![(s, e)];
        assert_eq!(
            bits,
            [("A", ends(0, 8)), ("B", ends(8, 16)), ("GA", ends(16, 22))]
        );
        // A: seats 0 and 7 free; B: none; GA: units 16-19 free (bits msb first).
        let bitmap = [0b1000_0001, 0b0000_0000, 0b1111_0000];
        assert_eq!(layout.sections_with(&bitmap, 1), vec!["A", "GA"]);
        assert_eq!(layout.sections_with(&bitmap, 2), vec!["A", "GA"]);
        assert_eq!(layout.sections_with(&bitmap, 3), vec!["GA"]);
        assert!(layout.sections_with(&bitmap, 5).is_empty());
        assert!(
            layout.sections_with(&[], 1).is_empty(),
            "a short bitmap frees nothing"
        );
    }

    #[test]
    fn free_seats_are_counted_a_byte_at_a_time_as_bit_by_bit() {
        let mut rng = StdRng::seed_from_u64(7);
        let bitmap: Vec<u8> = (0..40).map(|_| rng.random()).collect();
        let one_by_one = |r: std::ops::Range<u32>| {
            r.filter(|&i| {
                let byte = bitmap.get((i >> 3) as usize).copied().unwrap_or(0);
                (byte >> (7 - (i & 7))) & 1 == 1
            })
            .count() as u32
        };
        // Ranges inside one byte, across bytes, on byte edges, and past the end.
        for start in 0..90 {
            for end in start..(start + 200).min(400) {
                assert_eq!(
                    free_in(&bitmap, start..end),
                    one_by_one(start..end),
                    "{start}..{end}"
                );
            }
        }
    }

    #[test]
    fn indices_fold_into_ranges() {
        assert_eq!(
            ranges([5, 1, 2, 3, 9, 10].into_iter()),
            vec![1..4, 5..6, 9..11]
        );
        assert!(ranges(std::iter::empty()).is_empty());
    }
}

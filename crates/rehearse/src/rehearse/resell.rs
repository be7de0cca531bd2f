//! A reselling scalper after its purchase: it tries each way a ticket bought to sell on
//! could change hands at a profit. It moves the ticket to another identity it controls
//! (a transfer offered and accepted, as a sale off the platform would hand it over),
//! changes the name on it (the buyer's name on a sold ticket), and lists it on the
//! exchange above face value, then at face value when the cap refuses. What it managed
//! and what refused it (by code) go into the report, so a run says what the names on
//! tickets, the transfer policy and the exchange's face-value cap leave a scalper.

use std::collections::BTreeMap;

use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};

use super::api::{Answer, Call, Stop};
use super::buyer::{Ctx, backoff, grant_identity, note, retryable};
use super::crowd::Profile;
use super::record::Step;

/// The markup a scalper asks over face value, in percent.
pub const MARKUP_PCT: i64 = 100;

/// What one scalper (or, summed, every scalper of a run) got out of reselling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resale {
    /// Tickets it had bought to sell on.
    pub tickets: u32,
    /// Moved to its other identity by a transfer offered and accepted.
    pub transferred: u32,
    /// Given another attendee's name.
    pub renamed: u32,
    /// Listed on the exchange above face value (at `MARKUP_PCT` over it).
    pub listed_above_face: u32,
    /// Listed at face value, the most the exchange allows, once above was refused.
    pub listed_at_face: u32,
    /// The markup over face value the scalper's open listings ask, in the currency's
    /// minor units: what it stands to gain from the exchange.
    pub markup: i64,
    /// Each refusal met, by step and code (`transfer transfers_not_allowed`).
    pub refused: BTreeMap<String, u32>,
}

impl Resale {
    pub fn add(&mut self, other: &Resale) {
        self.tickets += other.tickets;
        self.transferred += other.transferred;
        self.renamed += other.renamed;
        self.listed_above_face += other.listed_above_face;
        self.listed_at_face += other.listed_at_face;
        self.markup += other.markup;
        for (k, v) in &other.refused {
            *self.refused.entry(k.clone()).or_default() += v;
        }
    }

    fn refusal(&mut self, what: &str, a: &Answer) {
        *self
            .refused
            .entry(format!("{what} {}", a.code()))
            .or_default() += 1;
    }
}

/// A buyer identity from the operator, as the scalper's other account: (buyer id, token).
async fn other_identity(ctx: &Ctx, base: &str) -> Result<Option<(String, String)>, Stop> {
    let a = grant_identity(&ctx.api, base, &ctx.operator_key).await?;
    let (id, token) = (a.body["buyer_id"].as_str(), a.body["token"].as_str());
    Ok(id.zip(token).map(|(id, t)| (id.to_owned(), t.to_owned())))
}

/// The ticket ids the buyer of `token` holds for the run's event, and the face value
/// of one (what their order paid per seat).
async fn holdings(ctx: &Ctx, base: &str, token: &str) -> Result<(Vec<String>, i64), Stop> {
    let call = Call::get(Step::Resell, "/v1/me/tickets").token(token);
    let a = ctx.api.send(base, call).await?;
    let of_event = |t: &&Value| t["event_id"].as_i64() == Some(ctx.event);
    let tickets: Vec<String> = (a.body["tickets"].as_array().into_iter().flatten())
        .filter(of_event)
        .filter_map(|t| t["ticket_id"].as_str().map(str::to_owned))
        .collect();
    let call = Call::get(Step::Resell, "/v1/me/orders").token(token);
    let a = ctx.api.send(base, call).await?;
    let face = (a.body["orders"].as_array().into_iter().flatten())
        .filter(of_event)
        .filter_map(|o| {
            let seats = o["seat_ids"].as_array()?.len() as i64;
            (seats > 0).then(|| o["total"].as_i64().unwrap_or(0) / seats)
        })
        .max()
        .unwrap_or(0);
    Ok((tickets, face))
}

/// One write of the scalper's, tried again (with the same Idempotency-Key) while the
/// server asks it to wait: transfer writes are rate-limited per buyer.
async fn write(
    ctx: &Ctx,
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Value,
) -> Result<Answer, Stop> {
    let key = uuid::Uuid::new_v4().to_string();
    let mut a = None;
    for attempt in 0..8 {
        let call = Call {
            method: method.clone(),
            ..Call::post(Step::Resell, path, body.clone(), &key).token(token)
        };
        let answer = ctx.api.send(base, call).await?;
        if answer.ok() {
            return Ok(answer);
        }
        note(&ctx.api, Step::Resell, &answer);
        if !retryable(&answer) {
            return Ok(answer);
        }
        backoff(&ctx.api, &answer, Profile::Scalper, attempt).await?;
        a = Some(answer);
    }
    Ok(a.expect("at least one attempt"))
}

async fn post(ctx: &Ctx, base: &str, token: &str, path: &str, body: Value) -> Result<Answer, Stop> {
    write(ctx, base, token, Method::POST, path, body).await
}

/// Tries to resell every ticket the scalper of `token` bought.
pub async fn resell(ctx: &Ctx, base: &str, token: &str) -> Result<Resale, Stop> {
    let mut r = Resale::default();
    let (tickets, face) = holdings(ctx, base, token).await?;
    r.tickets = tickets.len() as u32;
    if tickets.is_empty() {
        return Ok(r);
    }
    let other = other_identity(ctx, base).await?;
    for (n, ticket) in tickets.iter().enumerate() {
        // Handed to the other identity, which then holds it.
        let mut holder = token;
        if let Some((id, other_token)) = &other {
            let path = format!("/v1/tickets/{ticket}/transfers");
            let a = post(ctx, base, token, &path, json!({ "to_buyer_id": id })).await?;
            if a.ok() {
                let offer = a.body["transfer_id"].as_str().unwrap_or_default();
                let path = format!("/v1/transfers/{offer}/accept");
                let b = post(ctx, base, other_token, &path, json!({})).await?;
                if b.ok() {
                    r.transferred += 1;
                    holder = other_token.as_str();
                } else {
                    r.refusal("accept", &b);
                }
            } else {
                r.refusal("transfer", &a);
            }
        }
        // The name of whoever bought it off the platform.
        let path = format!("/v1/tickets/{ticket}/attendee");
        let name = json!({ "name": format!("Resold Fan {}", letters(n)) });
        let a = write(ctx, base, holder, Method::PUT, &path, name).await?;
        if a.ok() {
            r.renamed += 1;
        } else {
            r.refusal("rename", &a);
        }
        // Above face value, then at face value.
        let path = format!("/v1/tickets/{ticket}/listings");
        let above = face + face * MARKUP_PCT / 100;
        let a = post(ctx, base, holder, &path, json!({ "price": above })).await?;
        if a.ok() {
            r.listed_above_face += 1;
            r.markup += above - face;
            continue;
        }
        r.refusal("list above face", &a);
        if a.code() == "listing_above_face_value" {
            let b = post(ctx, base, holder, &path, json!({ "price": face })).await?;
            if b.ok() {
                r.listed_at_face += 1;
            } else {
                r.refusal("list at face", &b);
            }
        }
    }
    Ok(r)
}

/// A name's letters for `n` (names on tickets take letters, not digits).
pub fn letters(mut n: usize) -> String {
    let mut s = String::new();
    loop {
        s.insert(0, char::from(b'A' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            return s;
        }
        n -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_letters_only_and_differ() {
        assert_eq!(letters(0), "A");
        assert_eq!(letters(25), "Z");
        assert_eq!(letters(26), "AA");
        let all: std::collections::HashSet<String> = (0..1_000).map(letters).collect();
        assert_eq!(all.len(), 1_000);
    }

    #[test]
    fn resales_add_up() {
        let mut a = Resale {
            tickets: 4,
            transferred: 4,
            ..Resale::default()
        };
        a.refused.insert("list above face x".into(), 2);
        let mut b = Resale {
            tickets: 2,
            listed_at_face: 2,
            ..Resale::default()
        };
        b.refused.insert("list above face x".into(), 1);
        a.add(&b);
        assert_eq!((a.tickets, a.transferred, a.listed_at_face), (6, 4, 2));
        assert_eq!(a.refused["list above face x"], 3);
    }
}

//! The waiting room end to end: the verifiable pre-opening pool, sold-out broadcast and
//! resume, eligibility, proof of work, rate limits, session-bound tokens, the operator
//! override, and the cacheable public document.

use crate::common::*;
use boxoffice_domain::fairness::{Seed, position_in_pool};
use boxoffice_domain::{BuyerId, EventId, Millis, pow};
use boxoffice_engine::ports::Clock;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn scheduled_event(app: &TestApp, seats: u32) -> EventId {
    let spec = serde_json::to_value(spec(1, seats, 0, 4)).unwrap();
    let res = app
        .post("/v1/events", &app.operator_key, &uuid(), spec)
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    EventId(
        res.json::<Value>().await.unwrap()["event_id"]
            .as_i64()
            .unwrap(),
    )
}

async fn open(app: &TestApp, event: EventId) {
    let path = format!("/v1/events/{event}/open");
    let res = app.post(&path, &app.operator_key, &uuid(), json!({})).await;
    assert_eq!(res.status(), StatusCode::OK);
}

async fn join(app: &TestApp, event: EventId, token: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/v1/events/{event}/queue"), token, &uuid(), body)
        .await
}

async fn put(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.client
        .put(app.url(path))
        .bearer_auth(&app.operator_key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Moves the test clock on by `ms`.
fn later(app: &TestApp, ms: i64) {
    app.clock.set(Millis(app.clock.now().0 + ms));
}

async fn status(app: &TestApp, ticket: &str) -> Value {
    app.get("/v1/queue/status", ticket)
        .await
        .json()
        .await
        .unwrap()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pre_opening_order_is_what_the_published_seed_recomputes() {
    let app = spawn().await;
    let event = scheduled_event(&app, 10).await;
    let fair: Value = app
        .get(&format!("/v1/events/{event}/queue/fairness"), "")
        .await
        .json()
        .await
        .unwrap();
    let commitment = fair["commitment"].as_str().unwrap().to_string();
    assert!(
        fair["seed"].is_null(),
        "the seed stays secret before opening"
    );
    let mut tickets = Vec::new();
    for _ in 0..40 {
        let (id, token) = app.buyer().await;
        let j: Value = join(&app, event, &token, json!({}))
            .await
            .json()
            .await
            .unwrap();
        assert!(j["position"].is_null(), "no position before the draw: {j}");
        tickets.push((id, j["queue_ticket"].as_str().unwrap().to_string()));
    }
    open(&app, event).await;
    let (_, late) = app.buyer().await;
    let j: Value = join(&app, event, &late, json!({}))
        .await
        .json()
        .await
        .unwrap();
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(j["position"], 41, "a later arrival appends behind the pool");

    let fair: Value = app
        .get(&format!("/v1/events/{event}/queue/fairness"), "")
        .await
        .json()
        .await
        .unwrap();
    let seed = Seed::from_hex(fair["seed"].as_str().unwrap()).unwrap();
    assert!(
        seed.matches(&commitment),
        "the revealed seed is the committed one"
    );
    let pool: Vec<BuyerId> = fair["pool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(pool.len(), 40);
    let mut seen = std::collections::HashSet::new();
    for (id, ticket) in tickets {
        let s = status(&app, &ticket).await;
        let position = s["position"].as_u64().expect("drawn at opening");
        let buyer: BuyerId = id.parse().unwrap();
        assert_eq!(position_in_pool(&seed, &pool, buyer), Some(position));
        assert!(seen.insert(position));
        assert!(
            s["queue_ticket"].is_string(),
            "a ticket carrying the position"
        );
    }
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_line_hears_sold_out_at_once_and_admission_resumes_when_holds_expire() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 100, 0, 4)).await;
    // Batches of at most 25 active shoppers, whatever the (test-long) interval.
    let rules = json!({"max_active_shoppers": 25});
    put(&app, &format!("/v1/events/{event}/waiting-room"), rules).await;
    let tickets = line_of(&app, event, 10_000).await;
    // 25 admitted buyers hold 4 seats each: the 100 seats are all held.
    app.engine.admit_batch(event).await.unwrap();
    hold_best(&app, event, &tickets[..25], 4).await;
    app.engine.admit_batch(event).await.unwrap();
    for ticket in tickets.iter().skip(25).step_by(97) {
        let s = status(&app, ticket).await;
        assert_eq!(s["status"], "sold_out");
        // Only held seats coming back can move a sold-out line, and the public stream
        // tells its front at once: nobody is asked to poll it every few seconds.
        let ms = s["poll_after_ms"].as_u64().unwrap();
        assert!((24_000..=36_000).contains(&ms), "{s}");
    }
    let public = public_queue(&app, event).await;
    assert_eq!(
        (public["sold_out"].clone(), public["rate_reason"].clone()),
        (json!(true), json!("sold_out"))
    );

    // The holds expire (and with them the admitted shoppers' turn): seats return, the
    // line is told again and moves on.
    later(&app, 901_000);
    app.engine.expiry_step().await.unwrap();
    assert!(
        app.engine.admit_batch(event).await.unwrap(),
        "admission resumes"
    );
    let s = status(&app, &tickets[30]).await;
    assert_eq!(s["status"], "admitted", "{s}");
    assert_eq!(status(&app, &tickets[9_999]).await["status"], "waiting");
    app.stop().await;
}

/// The event's public queue document, as any client reads it.
pub(crate) async fn public_queue(app: &TestApp, event: EventId) -> Value {
    app.get(&format!("/v1/events/{event}/queue"), "")
        .await
        .json()
        .await
        .unwrap()
}

/// `n` buyers in the line of `event`, in joining order: their queue tickets.
async fn line_of(app: &TestApp, event: EventId, n: usize) -> Vec<String> {
    let mut tickets = Vec::with_capacity(n);
    for _ in 0..n {
        let token = app
            .engine
            .grant_buyer_token(&boxoffice_engine::waiting::BuyerGrant {
                buyer_id: BuyerId::random(),
                verified: true,
                account_created_at: Millis(0),
            })
            .token;
        let who = app.engine.identify(&token).await.unwrap();
        let joiner = boxoffice_engine::Joiner {
            who: &who,
            ip: None,
            pow: None,
            proof: None,
            human_token: None,
        };
        tickets.push(
            app.engine
                .join_queue(event, joiner)
                .await
                .unwrap()
                .queue_ticket,
        );
    }
    tickets
}

/// Each admitted ticket holder holds the best `quantity` seats of section A.
async fn hold_best(app: &TestApp, event: EventId, tickets: &[String], quantity: u32) {
    for ticket in tickets {
        let admission = status(app, ticket).await["admission_token"]
            .as_str()
            .unwrap()
            .to_string();
        let body = json!({"best_available": {"section": "A", "quantity": quantity}});
        assert_eq!(
            app.hold(event, &admission, body).await.status(),
            StatusCode::CREATED
        );
    }
}

/// A 10-seat event whose admission follows the seats left (`per_seat` buyers for each),
/// `n` buyers in its line, and its first batch let in.
async fn few_seats_line(per_seat: u32, n: usize) -> (TestApp, EventId, Vec<String>) {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let rules = json!({"buyers_per_free_seat": per_seat});
    let res = put(&app, &format!("/v1/events/{event}/waiting-room"), rules).await;
    assert_eq!(res.status(), StatusCode::OK);
    let tickets = line_of(&app, event, n).await;
    app.engine.admit_batch(event).await.unwrap();
    (app, event, tickets)
}

/// How far the line is served after `ms` more on the clock and one admission batch.
async fn admitted_after(app: &TestApp, event: EventId, tickets: &[String], ms: i64) -> usize {
    later(app, ms);
    app.engine.admit_batch(event).await.unwrap();
    served(app, tickets).await
}

/// How far the line is served: the index of the first ticket still waiting.
async fn served(app: &TestApp, tickets: &[String]) -> usize {
    let mut waiting = Vec::new();
    for t in tickets {
        waiting.push(status(app, t).await["status"] == "waiting");
    }
    let first = waiting.iter().position(|w| *w).unwrap_or(tickets.len());
    assert!(
        waiting[first..].iter().all(|w| *w),
        "admission is in line order: {waiting:?}"
    );
    first
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_lets_in_no_more_buyers_than_the_seats_left_allow() {
    // 10 seats, a rate that would let the whole line in at once.
    let (app, event, tickets) = few_seats_line(2, 60).await;
    assert_eq!(
        served(&app, &tickets).await,
        20,
        "two buyers for each of 10 seats"
    );
    let public = public_queue(&app, event).await;
    assert_eq!(public["rate_reason"], "few_seats_left", "{public}");

    // Four of them hold two seats each: 2 seats left, so 4 more buyers.
    hold_best(&app, event, &tickets[..4], 2).await;
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(served(&app, &tickets).await, 24);

    // Without the rule the rate alone decides: everyone is let in.
    let res = put(&app, &format!("/v1/events/{event}/waiting-room"), json!({})).await;
    assert_eq!(res.status(), StatusCode::OK);
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(served(&app, &tickets).await, 60);

    let zero = json!({"buyers_per_free_seat": 0});
    let res = put(&app, &format!("/v1/events/{event}/waiting-room"), zero).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    app.stop().await;
}

/// Seats that come back to a line whose front went away (told "sold out", they left):
/// with `buyers_per_free_seat`, the buyers let in for them never take them, so every
/// grace period (twice the 3 s poll pause) of seats left untaken doubles the buyers let
/// in per seat, and it halves again each time half of the seats let in for are taken.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_nobody_takes_let_in_more_buyers_per_seat_and_fewer_again_as_seats_go() {
    let (app, event, tickets) = few_seats_line(1, 300).await;
    assert_eq!(
        served(&app, &tickets).await,
        10,
        "one buyer for each of 10 seats"
    );
    assert_eq!(
        admitted_after(&app, event, &tickets, 1_000).await,
        20,
        "untaken for 1 s: as many again"
    );
    assert_eq!(
        admitted_after(&app, event, &tickets, 6_000).await,
        40,
        "untaken for 7 s: two a seat"
    );
    assert_eq!(
        admitted_after(&app, event, &tickets, 6_000).await,
        80,
        "untaken for 13 s: four a seat"
    );

    // The 80th buyer takes one: 9 seats left. One seat of ten says little of how many
    // of the buyers let in are there: still four a seat (untaken for 14 s).
    hold_best(&app, event, &tickets[79..80], 1).await;
    assert_eq!(admitted_after(&app, event, &tickets, 1_000).await, 80 + 36);
    // Four more take one each: as many taken since (5) as are still free (5), half the
    // seats let in for: one grace period less (untaken for 9 s: two a seat).
    hold_best(&app, event, &tickets[80..84], 1).await;
    assert_eq!(admitted_after(&app, event, &tickets, 1_000).await, 116 + 10);
    // Three more: 2 left, 3 taken since: one buyer each again (untaken for 4 s).
    hold_best(&app, event, &tickets[84..87], 1).await;
    assert_eq!(admitted_after(&app, event, &tickets, 1_000).await, 126 + 2);
    let public = public_queue(&app, event).await;
    assert_eq!(public["rate_reason"], "few_seats_left", "{public}");
    app.stop().await;
}

/// A spell in which nothing is free (every seat held, the line told "sold out") counts
/// as untaken time: the buyers who heard it leave, so the seats that come back when the
/// holds expire find more buyers let in for each of them, not one a seat from scratch.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_back_after_a_sold_out_spell_let_in_more_buyers_per_seat() {
    let app = spawn().await;
    let mut short = spec(1, 10, 0, 4);
    short.sale.hold_ttl_s = 12;
    let event = app.create_event(&short).await;
    let rules = json!({"buyers_per_free_seat": 1});
    let res = put(&app, &format!("/v1/events/{event}/waiting-room"), rules).await;
    assert_eq!(res.status(), StatusCode::OK);
    let tickets = line_of(&app, event, 300).await;
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(served(&app, &tickets).await, 10);

    // The ten take every seat: sold out, and the line stands for 13 s.
    hold_best(&app, event, &tickets[..10], 1).await;
    app.engine.admit_batch(event).await.unwrap();
    let serving = |q: &Value| (q["serving_up_to"].clone(), q["rate_reason"].clone());
    let sold_out = (json!(10), json!("sold_out"));
    assert_eq!(serving(&public_queue(&app, event).await), sold_out);
    later(&app, 6_000);
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(serving(&public_queue(&app, event).await), sold_out);
    later(&app, 7_000);
    // The holds expire: ten seats back after 13 s of nothing free, four buyers a seat
    // (a count started again at the spell's last batch would give two a seat: 30).
    app.engine.expiry_step().await.unwrap();
    app.engine.admit_batch(event).await.unwrap();
    assert_eq!(served(&app, &tickets).await, 50);
    let public = public_queue(&app, event).await;
    assert_eq!(public["rate_reason"], "few_seats_left", "{public}");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_far_back_in_line_is_asked_to_poll_less_often() {
    // Batches every 2 s of the node's ticker; the test's clock stands still, so after the
    // batch below the line does not move.
    let app = spawn_with(|c| c.engine.admission_interval_ms = 2_000).await;
    let mut slow = spec(1, 10, 0, 4);
    slow.sale.admission_rate_per_s = 10;
    let event = app.create_event(&slow).await;
    let tickets = line_of(&app, event, 1_000).await;
    app.engine.admit_batch(event).await.unwrap();
    let served = public_queue(&app, event).await["serving_up_to"]
        .as_u64()
        .unwrap();
    assert!((1..=40).contains(&served), "a batch or two of 20: {served}");
    let front = status(&app, &tickets[0]).await;
    let middle = status(&app, &tickets[299]).await;
    let back = status(&app, &tickets[999]).await;
    assert_eq!(
        back["estimated_wait_s"],
        (1_000 - served).div_ceil(10),
        "{back}"
    );
    let ms = |s: &Value| s["poll_after_ms"].as_u64().unwrap();
    // 3 s near the front. Farther back, two thirds of the earliest the gate (10 a second)
    // can reach the buyer, less a batch interval (2 s) and the line's view (0.5 s): with
    // 40 served, 260 ahead, 23.5 s, so 15.7 s; at the back, the 30 s most. Each ±20 %.
    let hint = ((300 - served) * 100 - 2_500) / 3 * 2;
    assert!((2_400..=3_600).contains(&ms(&front)), "{front}");
    assert!(
        (hint * 4 / 5..=hint * 6 / 5).contains(&ms(&middle)),
        "{hint}: {middle}"
    );
    assert!((24_000..=36_000).contains(&ms(&back)), "{back}");
    assert_eq!(
        public_queue(&app, event).await["serving_up_to"],
        served,
        "the line stood still"
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn eligibility_rules_refuse_unverified_and_new_accounts_with_clear_codes() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let cutoff = app.clock.now().0 - 86_400_000;
    let rules = json!({"require_verified": true, "accounts_created_before": cutoff});
    let res = put(&app, &format!("/v1/events/{event}/waiting-room"), rules).await;
    assert_eq!(res.status(), StatusCode::OK);
    let (_, fresh) = app.buyer().await;
    let res = join(&app, event, &fresh, json!({})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "buyer_not_verified"
    );
    let grant = |created: i64| json!({"buyer_id": BuyerId::random(), "verified": true, "account_created_at": created});
    let res = app
        .post(
            "/v1/buyer-tokens",
            &app.operator_key,
            &uuid(),
            grant(cutoff + 1),
        )
        .await;
    let young = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let res = join(&app, event, &young, json!({})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "account_too_new"
    );
    let res = app
        .post(
            "/v1/buyer-tokens",
            &app.operator_key,
            &uuid(),
            grant(cutoff - 1),
        )
        .await;
    let old = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        join(&app, event, &old, json!({})).await.status(),
        StatusCode::OK
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_needs_a_solved_challenge_and_a_wrong_nonce_is_refused() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    put(
        &app,
        &format!("/v1/events/{event}/waiting-room"),
        json!({"pow_difficulty": 10}),
    )
    .await;
    let (_, token) = app.buyer().await;
    let res = join(&app, event, &token, json!({})).await;
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "pow_required");
    let c: Value = app
        .get(&format!("/v1/events/{event}/queue/challenge"), &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(c["difficulty"], 10);
    let challenge = c["challenge"].as_str().unwrap();
    let nonce = pow::solve(challenge, 10);
    let wrong = (0u64..)
        .map(|n| format!("x{n}"))
        .find(|n| !pow::solves(challenge, n, 10))
        .unwrap();
    let res = join(
        &app,
        event,
        &token,
        json!({"pow": {"challenge": challenge, "nonce": wrong}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "pow_invalid");
    // Another buyer cannot use this buyer's solved challenge.
    let (_, other) = app.buyer().await;
    let body = json!({"pow": {"challenge": challenge, "nonce": nonce}});
    let res = join(&app, event, &other, body.clone()).await;
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "pow_invalid");
    assert_eq!(
        join(&app, event, &token, body).await.status(),
        StatusCode::OK
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_joins_and_polls_gets_429_with_retry_after_and_passes_again_later() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (_, token) = app.buyer().await;
    let mut codes = Vec::new();
    for _ in 0..8 {
        codes.push(join(&app, event, &token, json!({})).await.status());
    }
    let limited = codes
        .iter()
        .filter(|c| **c == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(limited, 3, "burst of 5 per buyer, then 429: {codes:?}");
    let res = join(&app, event, &token, json!({})).await;
    assert_eq!(res.headers()["retry-after"], "1");
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "rate_limited");
    later(&app, 1_000);
    let res = join(&app, event, &token, json!({})).await;
    let ticket = res.json::<Value>().await.unwrap()["queue_ticket"]
        .as_str()
        .unwrap()
        .to_string();
    let polls: Vec<_> =
        futures::future::join_all((0..30).map(|_| app.get("/v1/queue/status", &ticket))).await;
    let ok = polls
        .iter()
        .filter(|r| r.status() == StatusCode::OK)
        .count();
    assert_eq!(ok, 10, "the status burst holds under concurrency");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_expired_other_event_and_other_session_tokens_are_refused_on_hold() {
    let app = spawn_with(|c| c.engine.waiting.require_session_on_hold = true).await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let other_event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let body = json!({"seat_ids": ["A-1-1"]});
    let hold = |admission: String, session: Option<String>| {
        let req = app
            .client
            .post(app.url(&format!("/v1/events/{event}/holds")))
            .bearer_auth(admission)
            .header("Idempotency-Key", uuid())
            .json(&body);
        let req = match session {
            Some(s) => req.header("X-Buyer-Session", s),
            None => req,
        };
        async move {
            let res = req.send().await.unwrap();
            (
                res.status(),
                res.json::<Value>().await.unwrap()["error"].clone(),
            )
        }
    };
    let (_, other_session) = app.buyer().await;
    assert_eq!(hold(admission.clone(), None).await.1, "session_mismatch");
    assert_eq!(
        hold(admission.clone(), Some(other_session)).await.1,
        "session_mismatch"
    );
    let (signed, _) = admission.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{}", "A".repeat(43));
    assert_eq!(hold(forged, Some(token.clone())).await.1, "invalid_token");
    let (other_token, other_admission) = app.admitted_buyer(other_event).await;
    assert_eq!(
        hold(other_admission, Some(other_token)).await.1,
        "token_wrong_event"
    );
    assert_eq!(
        hold(admission.clone(), Some(token.clone())).await.0,
        StatusCode::CREATED
    );
    later(&app, 901_000);
    assert_eq!(hold(admission, Some(token)).await.1, "token_expired");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_override_and_the_adaptive_mode_show_their_reason_in_stats() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let path = format!("/v1/events/{event}/admission");
    let v: Value = put(&app, &path, json!({"rate_per_s": 40}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["rate"],
        json!({"rate_per_s": 40, "reason": "operator_override"})
    );
    put(&app, &path, json!({"mode": "adaptive", "rate_per_s": 40})).await;
    for _ in 0..50 {
        app.engine
            .record_health(boxoffice_engine::waiting::Signal::Hold { ms: 2_000.0 });
    }
    app.engine.admit_batch(event).await.unwrap();
    let stats: Value = app
        .get(&format!("/v1/events/{event}/stats"), &app.operator_key)
        .await
        .json()
        .await
        .unwrap();
    let rate = &stats["waiting_room"]["rate"];
    assert_eq!(
        *rate,
        json!({"rate_per_s": 20, "reason": "hold_latency_high"})
    );
    // The slow samples age out of the window: the rate widens back, a step an
    // admission interval (an hour in these tests).
    later(&app, 3_600_000);
    app.engine.admit_batch(event).await.unwrap();
    let doc = public_queue(&app, event).await;
    assert_eq!(
        (
            doc["admission_rate_per_s"].clone(),
            doc["rate_reason"].clone()
        ),
        (json!(25), json!("recovering"))
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_public_document_is_cacheable_and_revalidates_with_its_etag() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let path = format!("/v1/events/{event}/queue");
    let res = app.get(&path, "").await;
    assert_eq!(res.headers()["cache-control"], "public, max-age=1");
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    later(&app, 1_000);
    let res = app
        .client
        .get(app.url(&path))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED, "nothing moved");
    app.admitted_buyer(event).await;
    let res = app
        .client
        .get(app.url(&path))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the line moved");
    app.stop().await;
}

//! One person of the crowd through the public API, as the buyer app walks it: sign
//! in, join (solving the proof of work when asked), wait for their turn polling at the
//! pace the server suggests with jitter (at once when the line reaches them), then
//! shop (see `shop`). A line-sitter hands its admission to other clients once let in;
//! an account farm waits and shops with every account it has.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::possession::ProofKey;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::json;

use super::api::{Answer, Api, Call, Stop};
use super::crowd::{Mix, Planned, Profile};
use super::record::{Recorder, Step};
use super::resell::{Resale, resell};
use super::shop;
use super::turns::Turns;

/// What a run shares with every buyer.
pub struct Ctx {
    pub api: Api,
    pub event: i64,
    pub operator_key: String,
    pub mix: Mix,
    pub layout: shop::Layout,
    pub max_per_buyer: u32,
    /// "Serving up to" as the observer last saw it, and the buyers waiting for it.
    pub serving: Arc<Turns>,
    pub sessions_each: u32,
    /// Clients a line-sitter hands its admission to.
    pub clients_each: u32,
    /// How long a buyer follows a payment that has not settled.
    pub settle: Duration,
    /// How long a buyer told "sold out" keeps an eye on the line (seats may come back
    /// from expired or released holds), asking every two seconds.
    pub linger: Duration,
    /// The event takes attendee names at checkout: every buyer gives one per seat.
    pub names: bool,
    /// The event asks for proofs of possession: buyers make keys and prove them.
    pub proofs: bool,
    /// Buyer tokens granted before the run (`Settings::signed_in`), taken one an
    /// identity; when none is left, a person signs in on arrival.
    pub signed_in: parking_lot::Mutex<Vec<String>>,
}

/// Grants `n` buyer tokens before the run, on a client of their own whose requests are
/// not the run's; fails when the operator's grant is refused.
pub async fn sign_in_ahead(
    targets: &[String],
    bounds: &super::api::Bounds,
    operator_key: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    use futures::StreamExt as _;
    let rec = Arc::new(Recorder::new());
    let cancel = tokio_util::sync::CancellationToken::new();
    let api = Api::new(targets.to_vec(), rec, bounds, cancel)?;
    let concurrency = (bounds.max_connections as usize).clamp(1, 512);
    let granted: Vec<Option<String>> = futures::stream::iter(0..n)
        .map(|i| {
            let (api, base) = (&api, &targets[i % targets.len()]);
            async move {
                let a = grant_identity(api, base, operator_key).await.ok()?;
                a.body["token"].as_str().map(str::to_owned)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let tokens: Vec<String> = granted.into_iter().flatten().collect();
    if tokens.len() < n {
        anyhow::bail!(
            "signing the crowd in ahead: {} of {n} buyer tokens granted",
            tokens.len()
        );
    }
    Ok(tokens)
}

/// The operator's grant of a fresh, verified buyer identity: the answer, whose body
/// carries `buyer_id` and `token`.
pub(super) async fn grant_identity(
    api: &Api,
    base: &str,
    operator_key: &str,
) -> Result<Answer, Stop> {
    let grant = json!({
        "buyer_id": uuid::Uuid::new_v4(),
        "verified": true,
        // A year old: any account-age rule lets them in.
        "account_created_at": 1_700_000_000_000i64,
    });
    let key = uuid::Uuid::new_v4().to_string();
    let call = Call::post(Step::SignIn, "/v1/buyer-tokens", grant, &key).token(operator_key);
    api.send(base, call).await
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Could not get into the line (refused, or the server failed).
    NotJoined,
    /// Told the event was sold out while waiting.
    SoldOut,
    /// Let in, but no hold (nothing left, refused).
    NoHold,
    Abandoned,
    Released,
    Declined,
    /// Lost at checkout (the hold expired, a seat sold under them).
    Lost,
    Bought,
    /// A payment still unsettled when the buyer stopped following it.
    Unsettled,
    /// The run ended first.
    Stopped,
}

/// One person's journey as it went.
#[derive(Clone, Debug, Serialize)]
pub struct BuyerResult {
    pub index: usize,
    pub profile: Profile,
    /// Seconds from the start when the (first) join was taken.
    pub joined_s: Option<f64>,
    pub admitted_s: Option<f64>,
    /// Place in line (drawn at opening for the pre-opening pool).
    pub position: Option<u64>,
    /// Whether they joined before the sale opened.
    pub pooled: bool,
    pub tickets: u32,
    pub outcome: Outcome,
    /// Requests this person sent (every identity and client of theirs).
    pub requests: u64,
    /// CPU seconds this person spent solving proofs of work.
    pub solve_cpu_s: f64,
    /// A reselling scalper's attempts to sell on what it bought.
    pub resale: Option<Resale>,
}

/// What one person of the crowd spends, counted by `Api::send` and the solver within
/// the person's task.
#[derive(Default)]
pub struct Spent {
    pub requests: Cell<u64>,
    pub solve_cpu_s: Cell<f64>,
}

tokio::task_local! {
    pub static SPENT: Spent;
}

/// One identity in the line.
pub struct Session {
    pub token: String,
    /// The key this session's admission is bound to (proof of possession), when the
    /// event asks for proofs.
    pub key: Option<ProofKey>,
    ticket: String,
    position: Option<u64>,
}

/// One person's journey, from the moment they arrive.
pub async fn journey(ctx: Arc<Ctx>, p: Planned) -> BuyerResult {
    let mut r = empty(p.index, p.profile);
    Recorder::add(&ctx.api.rec.arrived, 1);
    let mut rng = StdRng::seed_from_u64(p.seed);
    let walked = SPENT.scope(Spent::default(), async {
        let o = walk(&ctx, &p, &mut rng, &mut r).await;
        SPENT.with(|s| (o, s.requests.get(), s.solve_cpu_s.get()))
    });
    let (outcome, requests, solve_cpu_s) = walked.await;
    r.outcome = match outcome {
        Ok(o) | Err(o) => o,
    };
    (r.requests, r.solve_cpu_s) = (requests, solve_cpu_s);
    r
}

/// The journey; `Err` carries how it ended early.
///
/// Each step of it (joining, waiting, shopping, what follows) is boxed, so that the
/// buyer's task holds only the step it is in: a task is as large as its largest step,
/// and a crowd of hundreds of thousands, most of whom only ever wait, would otherwise
/// each carry a shopping trip's worth of memory (fresh memory the generator pays for in
/// page faults while it shares the machine with the server).
async fn walk(
    ctx: &Ctx,
    p: &Planned,
    rng: &mut StdRng,
    r: &mut BuyerResult,
) -> Result<Outcome, Outcome> {
    let rec = &ctx.api.rec;
    let base = ctx.api.base(p.index).to_owned();
    let ip = client_ip(p.index);
    if p.profile == Profile::Farm {
        // A farm's accounts live on one device (one key proves possession for all) and
        // join at once, as a script does.
        let device = new_key(ctx);
        let accounts = (0..ctx.sessions_each.max(1))
            .map(|_| enter(ctx, &base, &ip, p.profile, device.clone()));
        let mut line = Vec::with_capacity(accounts.len());
        for entered in futures::future::join_all(accounts).await {
            line.extend(entered.map_err(stopped)?);
        }
        return Box::pin(farm(ctx, &base, p, line, r))
            .await
            .map_err(stopped);
    }
    let sessions = match p.profile {
        Profile::ManySessions => ctx.sessions_each.max(1),
        _ => 1,
    };
    let mut line = Vec::with_capacity(sessions as usize);
    for _ in 0..sessions {
        if let Some(s) = Box::pin(enter(ctx, &base, &ip, p.profile, None))
            .await
            .map_err(stopped)?
        {
            line.push(s);
        }
    }
    let Some(first) = line.first() else {
        return Ok(Outcome::NotJoined);
    };
    r.joined_s = Some(rec.now_s());
    r.pooled = first.position.is_none();
    Recorder::add(&rec.in_line, 1);
    let waited = Box::pin(wait(ctx, &base, &mut line, p.profile, rng)).await;
    Recorder::add(&rec.in_line, -1);
    let (session, admission, position) = match waited.map_err(stopped)? {
        Some(admitted) => admitted,
        None => return Ok(Outcome::SoldOut),
    };
    r.admitted_s = Some(rec.now_s());
    r.position = position;
    Recorder::add(&rec.admitted, 1);
    if p.profile == Profile::TokenSharer {
        let (token, admission) = (&line[session].token, admission.as_str());
        return Box::pin(share(ctx, &base, p, token, admission, r))
            .await
            .map_err(stopped);
    }
    let shopper = shop::Shopper {
        ctx,
        base: &base,
        token: &line[session].token,
        key: line[session].key.as_ref(),
        admission: &admission,
        profile: p.profile,
        card: None,
    };
    let outcome = Box::pin(shopper.shop(rng, r)).await.map_err(stopped)?;
    if p.profile == Profile::Scalper && r.tickets > 0 {
        let token = &line[session].token;
        r.resale = Some(Box::pin(resell(ctx, &base, token)).await.map_err(stopped)?);
    }
    Ok(outcome)
}

/// A line-sitter let in hands its buyer token and admission token to its clients,
/// who hold and pay with them at once, each client proving a key of its own (the
/// sitter's key stays with the sitter, as a browser's non-extractable key would).
async fn share(
    ctx: &Ctx,
    base: &str,
    p: &Planned,
    token: &str,
    admission: &str,
    r: &mut BuyerResult,
) -> Result<Outcome, Stop> {
    let clients = (0..ctx.clients_each.max(1)).map(|c| {
        let index = p.index;
        async move {
            let key = new_key(ctx);
            let card = format!("pm_card_visa_{index}_{c}");
            let mut rng = StdRng::seed_from_u64(p.seed ^ u64::from(c + 1));
            let mut mine = empty(index, p.profile);
            let shopper = shop::Shopper {
                ctx,
                base,
                token,
                key: key.as_ref(),
                admission,
                profile: p.profile,
                card: Some(&card),
            };
            let outcome = shopper.shop(&mut rng, &mut mine).await?;
            Ok::<_, Stop>((outcome, mine.tickets))
        }
    });
    best_of(futures::future::join_all(clients).await, r)
}

/// An account farm waits with every account, and every account let in shops with the
/// farm's one card and one key.
async fn farm(
    ctx: &Ctx,
    base: &str,
    p: &Planned,
    line: Vec<Session>,
    r: &mut BuyerResult,
) -> Result<Outcome, Stop> {
    let Some(first) = line.first() else {
        return Ok(Outcome::NotJoined);
    };
    let rec = &ctx.api.rec;
    r.joined_s = Some(rec.now_s());
    r.pooled = first.position.is_none();
    let card = format!("pm_card_visa_farm_{}", p.index);
    let admitted_at = parking_lot::Mutex::new(None::<(f64, Option<u64>)>);
    let accounts = line.into_iter().enumerate().map(|(a, session)| {
        let (card, admitted_at) = (&card, &admitted_at);
        async move {
            let mut rng = StdRng::seed_from_u64(p.seed ^ (a as u64 + 1));
            let mut one = [session];
            Recorder::add(&rec.in_line, 1);
            let waited = wait(ctx, base, &mut one, p.profile, &mut rng).await;
            Recorder::add(&rec.in_line, -1);
            let Some((_, admission, position)) = waited? else {
                return Ok((Outcome::SoldOut, 0));
            };
            Recorder::add(&rec.admitted, 1);
            admitted_at
                .lock()
                .get_or_insert_with(|| (rec.now_s(), position));
            let mut mine = empty(p.index, p.profile);
            let shopper = shop::Shopper {
                ctx,
                base,
                token: &one[0].token,
                key: one[0].key.as_ref(),
                admission: &admission,
                profile: p.profile,
                card: Some(card),
            };
            let outcome = shopper.shop(&mut rng, &mut mine).await?;
            Ok::<_, Stop>((outcome, mine.tickets))
        }
    });
    let results = futures::future::join_all(accounts).await;
    if let Some((at, position)) = admitted_at.into_inner() {
        r.admitted_s = Some(at);
        r.position = position;
    }
    best_of(results, r)
}

/// The tickets of several clients or accounts of one person, summed, and how the
/// person's journey ended: bought if any bought, else the first client's ending.
fn best_of(
    results: Vec<Result<(Outcome, u32), Stop>>,
    r: &mut BuyerResult,
) -> Result<Outcome, Stop> {
    let mut outcome = None;
    for result in results {
        let (o, tickets) = result?;
        r.tickets += tickets;
        if tickets > 0 {
            outcome = Some(Outcome::Bought);
        }
        outcome.get_or_insert(o);
    }
    Ok(outcome.unwrap_or(Outcome::NoHold))
}

/// A buyer who has done nothing yet.
fn empty(index: usize, profile: Profile) -> BuyerResult {
    BuyerResult {
        index,
        profile,
        joined_s: None,
        admitted_s: None,
        position: None,
        pooled: false,
        tickets: 0,
        outcome: Outcome::Stopped,
        requests: 0,
        solve_cpu_s: 0.0,
        resale: None,
    }
}

fn stopped(_: Stop) -> Outcome {
    Outcome::Stopped
}

/// A client address of the buyer's own (10.0.0.0/8), sent as X-Forwarded-For: each of
/// the first 65,535 buyers in a /24 network of their own, as buyers at home are (a
/// velocity rule counts per network).
pub fn client_ip(index: usize) -> String {
    let i = index as u32 + 1;
    format!(
        "10.{}.{}.{}",
        (i >> 8) & 255,
        i & 255,
        1 + ((i >> 16) & 127)
    )
}

/// A buyer identity from the operator (as an identity provider would mint it), then
/// a join proving `device` (a key of its own when none); `None` when the line would
/// not take them.
async fn enter(
    ctx: &Ctx,
    base: &str,
    ip: &str,
    profile: Profile,
    device: Option<ProofKey>,
) -> Result<Option<Session>, Stop> {
    let ahead = ctx.signed_in.lock().pop();
    if let Some(token) = ahead {
        return join(ctx, base, ip, token, profile, device).await;
    }
    let a = grant_identity(&ctx.api, base, &ctx.operator_key).await?;
    let Some(token) = a.body["token"].as_str().map(str::to_owned) else {
        note(&ctx.api, Step::SignIn, &a);
        return Ok(None);
    };
    join(ctx, base, ip, token, profile, device).await
}

async fn join(
    ctx: &Ctx,
    base: &str,
    ip: &str,
    token: String,
    profile: Profile,
    device: Option<ProofKey>,
) -> Result<Option<Session>, Stop> {
    let path = format!("/v1/events/{}/queue", ctx.event);
    let key = uuid::Uuid::new_v4().to_string();
    // A device's key when it has one; otherwise a key of the session's own.
    let proof_key = device.or_else(|| new_key(ctx));
    let mut body = json!({});
    for attempt in 0..6 {
        let call = Call::post(Step::Join, &path, body.clone(), &key)
            .token(&token)
            .from(ip)
            .proving(proof_key.as_ref());
        let a = ctx.api.send(base, call).await?;
        if a.ok() {
            let ticket = a.body["queue_ticket"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let position = a.body["position"].as_u64();
            return Ok(Some(Session {
                token,
                key: proof_key,
                ticket,
                position,
            }));
        }
        note(&ctx.api, Step::Join, &a);
        match a.code() {
            "pow_required" | "pow_invalid" if attempt < 3 => {
                body = json!({ "pow": solve(ctx, base, ip, &token).await? });
            }
            _ if retryable(&a) => backoff(&ctx.api, &a, profile, attempt).await?,
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// A key of the session's own, as the buyer app makes one at its first join when the
/// event asks for proofs (it reads the event's `proof_of_possession`), and none
/// otherwise: Ed25519, as a browser with it in WebCrypto does (the cheaper proof for the
/// server to check).
fn new_key(ctx: &Ctx) -> Option<ProofKey> {
    ctx.proofs
        .then(|| ProofKey::ed25519_from_seed(&rand::rng().random()))
}

/// Fetches a challenge and solves it (on a blocking thread: it is CPU work).
async fn solve(ctx: &Ctx, base: &str, ip: &str, token: &str) -> Result<serde_json::Value, Stop> {
    let path = format!("/v1/events/{}/queue/challenge", ctx.event);
    let a = ctx
        .api
        .send(
            base,
            Call::get(Step::Challenge, &path).token(token).from(ip),
        )
        .await?;
    let challenge = a.body["challenge"].as_str().unwrap_or_default().to_owned();
    let difficulty = a.body["difficulty"].as_u64().unwrap_or(0) as u8;
    let c = challenge.clone();
    let solved = tokio::task::spawn_blocking(move || {
        let before = thread_cpu_s();
        let nonce = boxoffice_domain::pow::solve(&c, difficulty);
        (nonce, thread_cpu_s() - before)
    });
    let (nonce, cpu_s) = solved.await.unwrap_or_default();
    let _ = SPENT.try_with(|s| s.solve_cpu_s.set(s.solve_cpu_s.get() + cpu_s));
    Ok(json!({ "challenge": challenge, "nonce": nonce }))
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given; the clock id is valid.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Waits for a turn: (which session was let in, its admission token, its place), or
/// `None` when the line is told sold out (or the tickets stop working).
async fn wait(
    ctx: &Ctx,
    base: &str,
    line: &mut [Session],
    profile: Profile,
    rng: &mut StdRng,
) -> Result<Option<(usize, String, Option<u64>)>, Stop> {
    let mut failures = 0;
    let mut sold_out_since: Option<std::time::Instant> = None;
    loop {
        let mut next_ms = 3_000.0;
        for (i, s) in line.iter_mut().enumerate() {
            let call = Call::get(Step::Status, "/v1/queue/status").token(&s.ticket);
            let a = ctx.api.send(base, call).await?;
            if !a.ok() {
                note(&ctx.api, Step::Status, &a);
                if !retryable(&a) || failures > 20 {
                    return Ok(None);
                }
                failures += 1;
                backoff(&ctx.api, &a, profile, failures).await?;
                continue;
            }
            if let Some(t) = a.body["queue_ticket"].as_str() {
                s.ticket = t.to_owned();
            }
            s.position = a.body["position"].as_u64().or(s.position);
            if let Some(admission) = a.body["admission_token"].as_str() {
                return Ok(Some((i, admission.to_owned(), s.position)));
            }
            next_ms = a.body["poll_after_ms"].as_f64().unwrap_or(next_ms);
            if a.body["status"] == "sold_out" {
                let since = *sold_out_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= ctx.linger {
                    return Ok(None);
                }
                next_ms = next_ms.max(2_000.0);
            }
        }
        let pause = match profile {
            Profile::AggressivePoller => Duration::from_millis(100),
            _ => Duration::from_secs_f64(next_ms * rng.random_range(0.75..1.25) / 1e3),
        };
        let position = line.iter().filter_map(|s| s.position).min();
        until_turn_or(&ctx.api, &ctx.serving, position, pause).await?;
    }
}

/// Sleeps `pause`, or less when the line reaches `position` (the public stream tells
/// the app the same way).
async fn until_turn_or(
    api: &Api,
    serving: &Turns,
    position: Option<u64>,
    pause: Duration,
) -> Result<(), Stop> {
    let reached = async {
        match position {
            Some(p) => serving.reached(p).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = api.pause(pause) => r,
        () = reached => Ok(()),
    }
}

/// Whether asking again may help: refused for the rate, overloaded, no answer, or the
/// same request (same Idempotency-Key) still running on the server, whose answer the
/// retry gets once it is done (giving up there would lose a join or a payment that
/// went through).
pub fn retryable(a: &Answer) -> bool {
    let running = matches!(a.code(), "request_in_progress" | "idempotency_store_full");
    a.status == 0 || a.status == 429 || a.status >= 500 || running
}

/// Waits before a retry (see `retry_after_s`), or not at all for a client that does
/// not back off.
pub async fn backoff(api: &Api, a: &Answer, profile: Profile, attempt: u32) -> Result<(), Stop> {
    if profile == Profile::NoBackoff {
        return Ok(());
    }
    let s = retry_after_s(a.retry_after_s, attempt, &mut rand::rng());
    api.pause(Duration::from_secs_f64(s)).await
}

/// A growing backoff with jitter, never shorter than the server's Retry-After: the
/// jitter spreads a refused crowd's retries over the half second after the time the
/// server asked for, never before it (a crowd shed for overload that came back early
/// would be shed again).
pub fn retry_after_s(asked_s: Option<f64>, attempt: u32, rng: &mut impl Rng) -> f64 {
    let exp = 0.2 * 2f64.powi(attempt.min(5) as i32) * rng.random_range(0.5..1.0);
    match asked_s {
        Some(asked) => (asked + rng.random_range(0.0..0.5)).max(exp),
        None => exp,
    }
}

/// Records an answer that was not what the journey hoped for.
pub fn note(api: &Api, step: Step, a: &Answer) {
    api.rec.error(step, a.status, a.code(), a.failed());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_never_comes_before_the_servers_retry_after() {
        let mut rng = StdRng::seed_from_u64(3);
        for attempt in 0..6 {
            let s = retry_after_s(Some(1.0), attempt, &mut rng);
            assert!((1.0..=6.4).contains(&s), "attempt {attempt}: {s}");
        }
        let unasked = retry_after_s(None, 0, &mut rng);
        assert!((0.1..0.2).contains(&unasked), "{unasked}");
    }

    #[test]
    fn a_request_still_running_on_the_server_is_asked_again() {
        let answer = |status, code: &str| Answer {
            status,
            body: json!({ "error": code }),
            retry_after_s: None,
        };
        assert!(retryable(&answer(409, "request_in_progress")));
        assert!(retryable(&answer(503, "overloaded")));
        assert!(!retryable(&answer(409, "seat_unavailable")));
    }
}

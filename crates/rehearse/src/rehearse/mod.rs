//! `boxoffice rehearse`: an on-sale driven through the public API of a running
//! deployment (one node or several) by a realistic crowd, bounded in requests and
//! time, stopped cleanly by Ctrl-C with a partial report. The report is written as
//! one HTML page with charts and as JSON (see `report`); `find_rate` repeats runs at
//! rising admission rates to find the one to set.

pub mod api;
pub mod buyer;
pub mod client;
pub mod crowd;
pub mod find_rate;
pub mod html;
pub mod observe;
pub mod progress;
pub mod record;
pub mod report;
pub mod resell;
pub mod setup;
pub mod shop;
pub mod svg;
pub mod target;
pub mod turns;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use serde::Serialize;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use api::Api;
use buyer::{BuyerResult, Ctx};
use crowd::{Adversaries, Arrivals, Mix, Planned};
use record::Recorder;
use report::{Audit, Report};

/// How long a request may take once it has its connection: longer than the server's
/// own request deadline (`http.request_timeout_ms`, 30 s by default), so a request the
/// server gives up on ends with its answer (503 `request_timeout`), not with none.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(35);

/// Everything a run is told.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub targets: Vec<String>,
    pub allow_remote: bool,
    #[serde(skip)]
    pub operator_key: String,
    /// Sell this existing (open) event instead of making one.
    pub event: Option<i64>,
    /// Units of the event the run makes.
    pub seats: u32,
    pub hold_ttl_s: u32,
    pub max_per_buyer: u32,
    /// The made event's own admission rate.
    pub event_rate_per_s: u32,
    /// The operator's override, set before the run.
    pub admission_rate: Option<u32>,
    /// Proof of work asked at join (0: none).
    pub pow_difficulty: u8,
    /// The waiting room's cap on admitted shoppers still active (`None`: no cap).
    pub max_active_shoppers: Option<u32>,
    /// The waiting room's buyers let in for each seat left (`None`: no such bound).
    pub buyers_per_free_seat: Option<u32>,
    /// Proofs of possession the made event asks for. Every buyer proves a key of its
    /// own whatever the event asks (as the buyer app does).
    pub proofs: boxoffice_domain::possession::PopMode,
    /// Velocity limits and buyer signals of the made event (`None`: off).
    pub velocity: Option<boxoffice_domain::velocity::VelocityRules>,
    /// Names on the made event's tickets; when taken at checkout, every buyer gives
    /// one per seat.
    pub names: boxoffice_domain::attendees::AttendeeNames,
    /// The made event's transfer policy (`None`: not transferable).
    pub transfers: Option<boxoffice_domain::transfers::TransferPolicy>,
    /// Whether the made event has a face-value exchange (no fee).
    pub exchange: bool,
    pub arrivals: Arrivals,
    pub mix: Mix,
    pub adversaries: Adversaries,
    pub max_duration: Duration,
    pub max_requests: u64,
    /// Connections the crowd opens at once, which bounds its requests in flight too
    /// (lowered to what the process may open; see `client`).
    pub max_connections: u32,
    pub request_timeout: Duration,
    /// How long a buyer follows an unsettled payment.
    pub settle: Duration,
    /// How long a buyer told "sold out" keeps watching for seats to come back.
    pub linger: Duration,
    pub seed: u64,
    /// Live progress on a terminal.
    pub progress: bool,
    /// The crowd arrives signed in: its buyer tokens are granted before the run's
    /// clock starts (fans whose sessions last a month), so the sale is not also a
    /// sign-in storm. Off: each person signs in when they arrive.
    pub signed_in: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            targets: vec!["http://127.0.0.1:8080".into()],
            allow_remote: false,
            operator_key: String::new(),
            event: None,
            seats: 1_000,
            hold_ttl_s: 60,
            max_per_buyer: 4,
            event_rate_per_s: 200,
            admission_rate: None,
            pow_difficulty: 0,
            max_active_shoppers: None,
            buyers_per_free_seat: None,
            proofs: boxoffice_domain::possession::PopMode::Off,
            velocity: None,
            names: boxoffice_domain::attendees::AttendeeNames::Off,
            transfers: None,
            exchange: false,
            arrivals: Arrivals {
                buyers: 10_000,
                rush_share: 0.5,
                rush_s: 5.0,
                tail_tau_s: 10.0,
                tail_s: 60.0,
            },
            mix: Mix::default(),
            adversaries: Adversaries {
                aggressive_pollers: 0.02,
                many_sessions: 0.02,
                sessions_each: 5,
                no_backoff: 0.02,
                pow_bots: 0.02,
                token_sharers: 0.0,
                clients_each: 3,
                farms: 0.0,
                scalpers: 0.0,
            },
            max_duration: Duration::from_secs(600),
            max_requests: 5_000_000,
            max_connections: client::DEFAULT_MAX_CONNECTIONS,
            request_timeout: REQUEST_TIMEOUT,
            settle: Duration::from_secs(60),
            linger: Duration::from_secs(30),
            seed: 1,
            progress: true,
            signed_in: false,
        }
    }
}

/// What checks the ledger once the crowd is done (`boxoffice audit --json`'s report).
pub type AuditHook =
    Box<dyn FnOnce() -> LocalBoxFuture<'static, anyhow::Result<serde_json::Value>> + Send>;

/// Runs a rehearsal; `interrupt` ends it early (Ctrl-C) with a partial report.
pub async fn run(
    s: &Settings,
    audit: Option<AuditHook>,
    interrupt: impl Future<Output = ()>,
) -> anyhow::Result<Report> {
    let targets = target::check(&s.targets, s.allow_remote)?;
    let bounds = bounds(s);
    let tokens = if s.signed_in {
        buyer::sign_in_ahead(&targets, &bounds, &s.operator_key, signed_in_count(s)).await?
    } else {
        Vec::new()
    };
    let rec = Arc::new(Recorder::new());
    let cancel = CancellationToken::new();
    let api = Api::new(targets.clone(), rec.clone(), &bounds, cancel.clone())?;
    let key = s.operator_key.clone();
    let prepared = setup::prepare(&api, &key, s).await?;
    let event = prepared.event;
    let serving = Arc::new(turns::Turns::default());
    let watchers = CancellationToken::new();
    let observer = tokio::spawn(observe::observe(
        api.clone(),
        key.clone(),
        event,
        serving.clone(),
        watchers.clone(),
    ));
    let buyers = u64::from(s.arrivals.buyers);
    let progress = progress::spawn(
        rec.clone(),
        buyers,
        prepared.capacity,
        s.progress,
        watchers.clone(),
    );
    if prepared.to_open {
        let (api, key, at) = (api.clone(), key.clone(), s.arrivals.rush_s);
        tokio::spawn(async move {
            if api.pause(Duration::from_secs_f64(at)).await.is_ok()
                && let Err(e) = setup::open(&api, &key, event).await
            {
                // The crowd waits in the pool until the time limit: say why.
                eprintln!("the sale could not be opened: {e:#}");
            }
        });
    }
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        event,
        operator_key: key.clone(),
        mix: s.mix.clone(),
        layout: prepared.layout.clone(),
        max_per_buyer: prepared.max_per_buyer,
        serving,
        sessions_each: s.adversaries.sessions_each,
        clients_each: s.adversaries.clients_each,
        settle: s.settle,
        linger: s.linger,
        names: s.names == boxoffice_domain::attendees::AttendeeNames::AtCheckout,
        proofs: prepared.proofs,
        signed_in: parking_lot::Mutex::new(tokens),
    });
    let cpu_before = cpu_seconds();
    let mut crowd = tokio::spawn(dispatch(
        ctx,
        crowd::crowd(&s.arrivals, &s.adversaries, s.seed),
    ));
    let mut finished = None;
    let mut stopped = tokio::select! {
        r = &mut crowd => {
            finished = Some(r);
            None
        }
        () = tokio::time::sleep(s.max_duration) => Some("time limit"),
        () = interrupt => Some("interrupted"),
    };
    cancel.cancel();
    let results = match finished {
        Some(r) => r?,
        None => crowd.await?,
    };
    let cpu = cpu_seconds() - cpu_before;
    if stopped.is_none() && Recorder::get(&rec.requests) > s.max_requests {
        stopped = Some("request limit");
    }
    let duration_s = rec.now_s();
    let last = observe::read(
        &api,
        &targets[0],
        &format!("/v1/events/{event}/stats"),
        &key,
    )
    .await;
    watchers.cancel();
    let mut timeline = observer.await?;
    timeline.extend(last);
    let _ = progress.await;
    let audit = match audit {
        Some(hook) => Some(Audit::of(hook().await?)),
        None => None,
    };
    let mut report = assemble(s, event, &targets, &rec, results, timeline, duration_s, cpu);
    report.generator_slots.max_connections = bounds.max_connections;
    report.stopped = stopped.map(str::to_owned);
    report.sold.ledger = audit.as_ref().and_then(|a| a.seats_sold);
    report.audit = audit;
    Ok(report)
}

/// Identities the crowd signs in with: one a person, and a session each for the many
/// sessions of those who open several; more are signed in on arrival.
fn signed_in_count(s: &Settings) -> usize {
    let buyers = f64::from(s.arrivals.buyers);
    let extra = buyers * s.adversaries.many_sessions * f64::from(s.adversaries.sessions_each);
    (buyers + extra).ceil() as usize
}

/// The run's bounds, its connections lowered to what the process may open.
fn bounds(s: &Settings) -> api::Bounds {
    let max_connections = client::bound(s.max_connections);
    if max_connections < s.max_connections {
        eprintln!(
            "--max-connections {} lowered to {max_connections}: the process may open {} \
             files (ulimit -n) and keeps {} for its own",
            s.max_connections,
            u64::from(max_connections) + client::FD_MARGIN,
            client::FD_MARGIN
        );
    }
    api::Bounds {
        max_requests: s.max_requests,
        max_connections,
        timeout: s.request_timeout,
    }
}

/// Sends each person in at their arrival; returns how each journey went.
async fn dispatch(ctx: Arc<Ctx>, crowd: Vec<Planned>) -> Vec<BuyerResult> {
    let mut set = JoinSet::new();
    for p in crowd {
        let wait = p.arrive_s - ctx.api.rec.now_s();
        if wait > 0.0 && ctx.api.pause(Duration::from_secs_f64(wait)).await.is_err() {
            break;
        }
        set.spawn(buyer::journey(ctx.clone(), p));
    }
    set.join_all().await
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    s: &Settings,
    event: i64,
    targets: &[String],
    rec: &Recorder,
    results: Vec<BuyerResult>,
    timeline: Vec<observe::Point>,
    duration_s: f64,
    cpu_s: f64,
) -> Report {
    let samples = rec.samples();
    let (steps, node_figures) = report::steps(&samples, duration_s, targets.len());
    let requests = samples.len() as u64;
    Report {
        event,
        targets: targets.to_vec(),
        settings: serde_json::to_value(s).unwrap_or_default(),
        duration_s,
        stopped: None,
        requests,
        generator_requests_per_s: requests as f64 / duration_s.max(1e-3),
        generator_cpu_s: cpu_s,
        generator_requests_per_cpu_s: (cpu_s > 0.0).then(|| requests as f64 / cpu_s),
        generator_slots: report::Slots::of(&samples, s.max_connections),
        buyers: report::buyer_counts(u64::from(s.arrivals.buyers), &results),
        sold: report::sold(&timeline, &results),
        steps,
        admitted_per_s: report::admitted_per_s(&timeline),
        timeline,
        errors: rec.errors(),
        fairness: report::fairness(&results),
        audit: None,
        node_figures,
    }
}

/// CPU time this process has used (user and system), in seconds.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    if !ok {
        return 0.0;
    }
    // SAFETY: initialized by the successful call above.
    let u = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// Writes `report.html` and `report.json` into `dir`; returns their paths.
pub fn write(report: &Report, dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let html = dir.join("report.html");
    let json = dir.join("report.json");
    std::fs::write(&html, html::page(report))?;
    std::fs::write(&json, serde_json::to_vec_pretty(report)?)?;
    Ok((html, json))
}

//! The subcommands' flags and what each does with them; the binary only dispatches.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::experiment::{self, Variant};
use crate::plan::{self, Inputs, NodeFigures};

/// `boxoffice plan`.
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// Fans who want tickets.
    #[arg(long, default_value_t = 2_000_000.0)]
    pub fans: f64,
    /// Tickets on sale.
    #[arg(long, default_value_t = 50_000.0)]
    pub tickets: f64,
    /// Tickets in an average order.
    #[arg(long, default_value_t = 2.0)]
    pub tickets_per_order: f64,
    /// Seconds over which the fans arrive.
    #[arg(long, default_value_t = 600.0)]
    pub arrival_window_s: f64,
    /// Seconds between two status calls of a waiting fan (the server's poll_after_ms).
    #[arg(long, default_value_t = 3.0)]
    pub poll_interval_s: f64,
    /// Buyers admitted per second.
    #[arg(long, default_value_t = 500.0)]
    pub admission_per_s: f64,
    /// Share of admitted buyers who pay.
    #[arg(long, default_value_t = 0.8)]
    pub conversion: f64,
    /// Hold attempts per admitted buyer.
    #[arg(long, default_value_t = 1.25)]
    pub holds_per_buyer: f64,
    /// How busy a node may run at the peak.
    #[arg(long, default_value_t = 0.7)]
    pub utilisation: f64,
    /// A rehearsal report (JSON) whose `node_figures` replace the defaults.
    #[arg(long)]
    pub figures: Option<PathBuf>,
    /// Print the plan as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl PlanArgs {
    pub fn inputs(&self) -> anyhow::Result<Inputs> {
        let figures = match &self.figures {
            Some(path) => figures_from_report(path)?,
            None => NodeFigures::default(),
        };
        Ok(Inputs {
            fans: self.fans,
            tickets: self.tickets,
            tickets_per_order: self.tickets_per_order,
            arrival_window_s: self.arrival_window_s,
            poll_interval_s: self.poll_interval_s,
            admission_per_s: self.admission_per_s,
            conversion: self.conversion,
            holds_per_buyer: self.holds_per_buyer,
            utilisation: self.utilisation,
            figures,
        })
    }
}

/// The `node_figures` of a rehearsal report; figures it lacks keep their defaults.
pub fn figures_from_report(path: &std::path::Path) -> anyhow::Result<NodeFigures> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let report: serde_json::Value =
        serde_json::from_str(&text).context("the report is not JSON")?;
    let figures = report
        .get("node_figures")
        .cloned()
        .context("the report has no node_figures")?;
    let mut figures: NodeFigures = serde_json::from_value(figures)?;
    figures.source = format!("measured ({})", path.display());
    Ok(figures)
}

pub fn run_plan(args: &PlanArgs) -> anyhow::Result<()> {
    let p = plan::plan(args.inputs()?);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        print!("{}", plan::table(&p));
    }
    Ok(())
}

/// `boxoffice experiment`.
#[derive(Args, Debug, Clone)]
pub struct ExperimentArgs {
    /// A PostgreSQL where this user may CREATE DATABASE; the experiment makes its own
    /// database there and drops it afterwards.
    #[arg(
        long,
        env = "BOXOFFICE_EXPERIMENT_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: String,
    #[arg(long, default_value_t = 100)]
    pub units: u32,
    #[arg(long, default_value_t = 2_000)]
    pub buyers: u32,
    /// Connections the buyers share (PostgreSQL's max_connections bounds it).
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Only these variants (all by default).
    #[arg(long = "variant", value_enum)]
    pub variants: Vec<Variant>,
    #[arg(long)]
    pub json: bool,
}

pub async fn run_experiment(args: &ExperimentArgs) -> anyhow::Result<()> {
    let settings = experiment::Settings {
        units: args.units,
        buyers: args.buyers,
        connections: args.connections,
        variants: if args.variants.is_empty() {
            Variant::ALL.to_vec()
        } else {
            args.variants.clone()
        },
    };
    let rows = experiment::run(&args.database_url, &settings).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", experiment::table(&rows));
    }
    Ok(())
}

/// `boxoffice rehearse`.
#[derive(Args, Debug, Clone)]
pub struct RehearseArgs {
    /// A node's base URL (repeat for several nodes; buyers are spread over them).
    /// Loopback only, unless --allow-remote.
    #[arg(long = "target", required = true)]
    pub targets: Vec<String>,
    /// Allow targets off this machine (only deployments you run: this is a load test).
    #[arg(long)]
    pub allow_remote: bool,
    /// The operator key of the target (to make the event, mint buyer identities, set
    /// the admission rate and read the stats).
    #[arg(long, env = "BOXOFFICE_OPERATOR_KEY", hide_env_values = true)]
    pub operator_key: String,
    /// Sell this open event instead of making a fresh one.
    #[arg(long)]
    pub event: Option<i64>,
    /// Units of the fresh event (six tenths seated in rows of ten, the rest standing).
    #[arg(long, default_value_t = 1_000)]
    pub seats: u32,
    /// People in the crowd.
    #[arg(long, default_value_t = 10_000)]
    pub buyers: u32,
    /// Share arriving before the sale opens.
    #[arg(long, default_value_t = 0.5)]
    pub rush_share: f64,
    /// Seconds of rush; the fresh event opens at its end.
    #[arg(long, default_value_t = 5.0)]
    pub rush_s: f64,
    /// Time constant of the arrivals' decay after opening.
    #[arg(long, default_value_t = 10.0)]
    pub tail_tau_s: f64,
    /// Arrivals stop this long after the opening.
    #[arg(long, default_value_t = 60.0)]
    pub tail_s: f64,
    #[arg(long, default_value_t = 60)]
    pub hold_ttl_s: u32,
    #[arg(long, default_value_t = 4)]
    pub max_per_buyer: u32,
    /// The fresh event's own admission rate (buyers/s).
    #[arg(long, default_value_t = 200)]
    pub event_rate: u32,
    /// Set the operator's admission override to this rate before the run.
    #[arg(long)]
    pub admission_rate: Option<u32>,
    /// Proof-of-work difficulty asked at join (leading zero bits; 0: none).
    #[arg(long, default_value_t = 0)]
    pub pow_difficulty: u8,
    /// Admission waits while this many admitted shoppers are still active (the
    /// waiting room's `max_active_shoppers`; none by default).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_active_shoppers: Option<u32>,
    /// A batch lets in at most this many buyers for each seat neither sold nor held
    /// (the waiting room's `buyers_per_free_seat`; no such bound by default).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub buyers_per_free_seat: Option<u32>,
    /// Proofs of possession the made event asks for: off, optional or required.
    #[arg(long, default_value = "off", value_parser = pop_mode)]
    pub proofs: boxoffice_domain::possession::PopMode,
    #[arg(long, default_value_t = 0.02)]
    pub aggressive_pollers: f64,
    #[arg(long, default_value_t = 0.02)]
    pub many_sessions: f64,
    #[arg(long, default_value_t = 5)]
    pub sessions_each: u32,
    #[arg(long, default_value_t = 0.02)]
    pub no_backoff: f64,
    #[arg(long, default_value_t = 0.02)]
    pub pow_bots: f64,
    /// Share of line-sitters who hand their admission to other clients once let in.
    #[arg(long, default_value_t = 0.0)]
    pub token_sharers: f64,
    /// Clients each line-sitter hands its admission to.
    #[arg(long, default_value_t = 3)]
    pub clients_each: u32,
    /// Share of account farms: --sessions-each accounts on one device and one card.
    #[arg(long, default_value_t = 0.0)]
    pub farms: f64,
    /// Share of reselling scalpers: they take the most tickets allowed, then move them
    /// to another identity, rename them and list them above face value.
    #[arg(long, default_value_t = 0.0)]
    pub scalpers: f64,
    /// Names on the made event's tickets: off, at_checkout (every buyer names each
    /// seat) or before_doors.
    #[arg(long, default_value = "off", value_parser = attendee_names)]
    pub names: boxoffice_domain::attendees::AttendeeNames,
    /// The made event's transfer policy: free, name_change_only, none or exchange_only.
    /// Not transferable when not given.
    #[arg(long, value_parser = transfer_policy)]
    pub transfers: Option<boxoffice_domain::transfers::TransferPolicy>,
    /// The made event has a face-value exchange (no fee).
    #[arg(long)]
    pub exchange: bool,
    /// Velocity limits and buyer signals of the made event, as the event's
    /// `sale.velocity` JSON (`{}`: every limit at its default). Off when not given.
    #[arg(long, value_parser = velocity_rules)]
    pub velocity: Option<boxoffice_domain::velocity::VelocityRules>,
    /// Each honest buyer pays with a card of their own (the stand-in provider approves
    /// any method it has no script for), so card signals see distinct cards.
    #[arg(long)]
    pub own_cards: bool,
    /// Weights of cards that approve, decline, ask for 3-D Secure, time out.
    #[arg(long, value_delimiter = ',', default_values_t = [0.8, 0.08, 0.07, 0.05])]
    pub cards: Vec<f64>,
    #[arg(long, default_value_t = 0.05)]
    pub abandon: f64,
    #[arg(long, default_value_t = 0.05)]
    pub release: f64,
    #[arg(long, default_value_t = 200)]
    pub think_min_ms: u64,
    #[arg(long, default_value_t = 1_500)]
    pub think_max_ms: u64,
    /// The run stops after this long, with a partial report.
    #[arg(long, default_value_t = 600)]
    pub max_duration_s: u64,
    /// The run stops after this many requests.
    #[arg(long, default_value_t = 5_000_000)]
    pub max_requests: u64,
    /// Connections the crowd opens at once, kept alive and reused; requests beyond
    /// them wait for a free one (the wait is reported apart from the latencies). Never
    /// above the open-files limit (ulimit -n) less 256.
    #[arg(long, default_value_t = crate::rehearse::client::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: u32,
    /// The crowd arrives signed in: its buyer tokens are granted before the run's
    /// clock starts (outside its report), as for fans signed in days before; without
    /// it each person signs in on arrival.
    #[arg(long)]
    pub signed_in: bool,
    /// How long a buyer follows a payment that has not settled.
    #[arg(long, default_value_t = 60)]
    pub settle_s: u64,
    /// How long a buyer told "sold out" keeps watching for seats to come back.
    #[arg(long, default_value_t = 30)]
    pub linger_s: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where report.html and report.json go.
    #[arg(long, default_value = "rehearsal")]
    pub out: PathBuf,
    /// No live progress.
    #[arg(long)]
    pub quiet: bool,
    /// Audit the ledger afterwards (`boxoffice audit` on the configured ledger).
    #[arg(long)]
    pub audit: bool,
    /// Step the admission rate up between runs and report the highest that meets the
    /// objectives below.
    #[arg(long)]
    pub find_rate: bool,
    #[arg(long, default_value_t = 50)]
    pub rate_start: u32,
    #[arg(long, default_value_t = 10_000)]
    pub rate_max: u32,
    #[arg(long, default_value_t = 10.0)]
    pub seconds_per_run: f64,
    #[arg(long, default_value_t = 500.0)]
    pub slo_hold_p99_ms: f64,
    #[arg(long, default_value_t = 2_000.0)]
    pub slo_checkout_p99_ms: f64,
    #[arg(long, default_value_t = 0.01)]
    pub max_failure_rate: f64,
}

impl RehearseArgs {
    pub fn settings(&self) -> anyhow::Result<crate::rehearse::Settings> {
        use crate::rehearse::crowd::{Adversaries, Arrivals, Mix};
        use std::time::Duration;
        anyhow::ensure!(self.cards.len() == 4, "--cards takes four weights");
        Ok(crate::rehearse::Settings {
            targets: self.targets.clone(),
            allow_remote: self.allow_remote,
            operator_key: self.operator_key.clone(),
            event: self.event,
            seats: self.seats,
            hold_ttl_s: self.hold_ttl_s,
            max_per_buyer: self.max_per_buyer,
            event_rate_per_s: self.event_rate,
            admission_rate: self.admission_rate,
            pow_difficulty: self.pow_difficulty,
            max_active_shoppers: self.max_active_shoppers,
            buyers_per_free_seat: self.buyers_per_free_seat,
            proofs: self.proofs,
            velocity: self.velocity.clone(),
            names: self.names,
            transfers: self.transfers,
            exchange: self.exchange,
            arrivals: Arrivals {
                buyers: self.buyers,
                rush_share: self.rush_share,
                rush_s: self.rush_s,
                tail_tau_s: self.tail_tau_s,
                tail_s: self.tail_s,
            },
            mix: Mix {
                abandon: self.abandon,
                release: self.release,
                think_min_ms: self.think_min_ms,
                think_max_ms: self.think_max_ms,
                approve: self.cards[0],
                decline: self.cards[1],
                three_ds: self.cards[2],
                timeout: self.cards[3],
                own_cards: self.own_cards,
                ..Mix::default()
            },
            adversaries: Adversaries {
                aggressive_pollers: self.aggressive_pollers,
                many_sessions: self.many_sessions,
                sessions_each: self.sessions_each,
                no_backoff: self.no_backoff,
                pow_bots: self.pow_bots,
                token_sharers: self.token_sharers,
                clients_each: self.clients_each,
                farms: self.farms,
                scalpers: self.scalpers,
            },
            max_duration: Duration::from_secs(self.max_duration_s),
            max_requests: self.max_requests,
            max_connections: self.max_connections,
            request_timeout: crate::rehearse::REQUEST_TIMEOUT,
            settle: Duration::from_secs(self.settle_s),
            linger: Duration::from_secs(self.linger_s),
            seed: self.seed,
            progress: !self.quiet,
            signed_in: self.signed_in,
        })
    }

    pub fn search(&self) -> crate::rehearse::find_rate::Search {
        crate::rehearse::find_rate::Search {
            start: self.rate_start,
            max: self.rate_max,
            seconds_per_run: self.seconds_per_run,
            hold_p99_ms: self.slo_hold_p99_ms,
            checkout_p99_ms: self.slo_checkout_p99_ms,
            max_failure_rate: self.max_failure_rate,
            ..crate::rehearse::find_rate::Search::default()
        }
    }
}

/// Runs `boxoffice rehearse`: one rehearsal with its report, or the rate search.
pub async fn run_rehearse(
    args: &RehearseArgs,
    audit: Option<crate::rehearse::AuditHook>,
) -> anyhow::Result<bool> {
    let settings = args.settings()?;
    if args.find_rate {
        return find_rate(args, &settings).await;
    }
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let report = crate::rehearse::run(&settings, audit, ctrl_c).await?;
    let (html, json) = crate::rehearse::write(&report, &args.out)?;
    let s = &report.sold;
    println!(
        "event {}: {} of {} sold in {:.1} s{}; {} requests ({:.0}/s); report {} and {}",
        report.event,
        s.hot_store,
        s.capacity,
        report.duration_s,
        report
            .stopped
            .as_deref()
            .map_or(String::new(), |w| format!(" (stopped: {w})")),
        report.requests,
        report.generator_requests_per_s,
        html.display(),
        json.display()
    );
    let clean = report.audit.as_ref().is_none_or(|a| a.clean);
    if let Some(a) = &report.audit {
        println!(
            "audit: {}",
            if a.clean {
                "clean"
            } else {
                "VIOLATIONS (see the JSON report)"
            }
        );
    }
    Ok(clean)
}

async fn find_rate(
    args: &RehearseArgs,
    settings: &crate::rehearse::Settings,
) -> anyhow::Result<bool> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        flag.store(true, Ordering::SeqCst);
    });
    let found = crate::rehearse::find_rate::search(settings, &args.search(), || {
        stop.load(Ordering::SeqCst)
    })
    .await?;
    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("find-rate.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&found)?)?;
    println!("| rate/s | buyers | hold p99 | checkout p99 | failures | passed |");
    println!("|---|---|---|---|---|---|");
    for t in &found.trials {
        println!(
            "| {} | {} | {:.0} ms | {:.0} ms | {:.2} % | {} |",
            t.rate,
            t.buyers,
            t.hold_p99_ms,
            t.checkout_p99_ms,
            t.failure_rate * 100.0,
            if t.passed {
                "yes".to_owned()
            } else {
                t.why.join("; ")
            }
        );
    }
    match found.rate {
        Some(r) => println!(
            "highest admission rate within the objectives: {r} buyers/s ({})",
            path.display()
        ),
        None => println!("no rate tried met the objectives ({})", path.display()),
    }
    Ok(found.rate.is_some())
}

fn velocity_rules(s: &str) -> Result<boxoffice_domain::velocity::VelocityRules, String> {
    let rules: boxoffice_domain::velocity::VelocityRules =
        serde_json::from_str(s).map_err(|e| format!("not velocity rules: {e}"))?;
    rules.validate()?;
    Ok(rules)
}

fn attendee_names(s: &str) -> Result<boxoffice_domain::attendees::AttendeeNames, String> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|_| format!("{s:?} is not one of off, at_checkout, before_doors"))
}

fn transfer_policy(s: &str) -> Result<boxoffice_domain::transfers::TransferPolicy, String> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|_| format!("{s:?} is not one of free, name_change_only, none, exchange_only"))
}

fn pop_mode(s: &str) -> Result<boxoffice_domain::possession::PopMode, String> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|_| format!("{s:?} is not one of off, optional, required"))
}

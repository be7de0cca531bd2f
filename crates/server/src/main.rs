//! `boxoffice`: parse the command line, load config, run.

use std::path::PathBuf;
use std::process::ExitCode;

use boxoffice_server::config::{HotChoice, LedgerChoice, PaymentsChoice};
use boxoffice_server::{Application, Config, Overrides, commands, telemetry};
use clap::{Parser, Subcommand};

// The request path allocates many small short-lived buffers (JSON in and out); mimalloc
// serves those markedly faster than the system allocator.
#[global_allocator]
static ALLOC: boxoffice_server::allocator::Allocator = boxoffice_server::allocator::Allocator;

/// What every operator needs before the first start; the rest is in the README.
const SETTINGS_HELP: &str = "Settings come from defaults, then --config FILE, then \
BOXOFFICE_* variables (nested keys with __), then flags. The operator key (operator_key, \
or BOXOFFICE_OPERATOR_KEY) must be at least 16 characters; left unset, a random one is \
generated into DATA_DIR/operator.key and printed at the first start. Logs: BOXOFFICE_LOG \
(a filter, default info) and BOXOFFICE_LOG_FORMAT (text or json).";

#[derive(Parser)]
#[command(
    name = "boxoffice",
    version,
    about = "An on-sale engine for tickets that never oversells",
    after_help = SETTINGS_HELP
)]
struct Cli {
    /// A TOML config file (see README for every key and its default).
    #[arg(long, global = true, env = "BOXOFFICE_CONFIG")]
    config: Option<PathBuf>,
    /// Where the ledger and keys live [default: ./boxoffice-data].
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// The ledger: "sqlite" or a postgres:// URL [default: sqlite].
    #[arg(long, global = true, env = "BOXOFFICE_LEDGER", hide_env_values = true,
          value_parser = Redacting::<LedgerChoice>::new())]
    ledger: Option<LedgerChoice>,
    /// The hot store: "memory" or redis:// (rediss:// for TLS) URL(s), comma-separated for a Cluster [default: memory].
    #[arg(long, global = true, env = "BOXOFFICE_HOT", hide_env_values = true,
          value_parser = Redacting::<HotChoice>::new())]
    hot: Option<HotChoice>,
    /// The payment provider: "stripe", or "fake" (the stand-in: approves payments without
    /// taking money). No default outside `serve --demo`.
    #[arg(long, global = true)]
    payments: Option<PaymentsChoice>,
    #[command(subcommand)]
    command: Command,
}

/// Parses a flag whose value may carry a password (a database URL) without repeating it:
/// clap's own message for a refused value quotes the value as typed, while the choice's
/// `FromStr` error names it with the password redacted.
#[derive(Clone)]
struct Redacting<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Redacting<T> {
    fn new() -> Self {
        Redacting(std::marker::PhantomData)
    }
}

impl<T> clap::builder::TypedValueParser for Redacting<T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        use clap::error::ErrorKind;
        let flag = arg.map_or_else(|| "the value".to_owned(), |a| format!("--{}", a.get_id()));
        let text = value.to_str().ok_or_else(|| {
            clap::Error::raw(ErrorKind::InvalidUtf8, format!("{flag} is not UTF-8\n"))
        })?;
        text.parse()
            .map_err(|e| clap::Error::raw(ErrorKind::ValueValidation, format!("{flag}: {e}\n")))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the API and the workers (embedded mode: SQLite + in-process stores).
    Serve {
        /// Address to listen on; port 0 picks a free port [default: 127.0.0.1:8080].
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Create and open a demo stadium (51,000 units) and print how to buy a ticket.
        #[arg(long)]
        demo: bool,
    },
    /// Check the promises (P1, P2, P6) on a ledger; exits 1 on a violation.
    Audit {
        #[arg(long)]
        json: bool,
    },
    /// Create or upgrade the ledger's schema.
    Migrate,
    /// Rebuild an event in the hot store from the ledger (sold stays sold, holds drop).
    Rebuild {
        #[arg(long)]
        event: boxoffice_domain::EventId,
    },
    /// Recompute a buyer's drawn position from the published fairness document (each
    /// page of GET /v1/events/{id}/queue/fairness saved to a file); no server needed.
    VerifyPosition {
        #[arg(long)]
        buyer: boxoffice_domain::BuyerId,
        #[arg(long = "file", required = true)]
        files: Vec<PathBuf>,
    },
    /// Verify a ticket barcode offline against a saved gate bundle (GET
    /// /v1/events/{id}/gate-bundle); exits 0 to admit, 1 to refuse. No network.
    Gate {
        /// The gate bundle file.
        #[arg(long)]
        bundle: PathBuf,
        /// The barcode's text; read from standard input when absent.
        barcode: Option<String>,
    },
    /// Size an on-sale on paper: load at the peak, nodes, Redis and PostgreSQL,
    /// bandwidth, time to sell out. No server needed.
    Plan(boxoffice_rehearse::cli::PlanArgs),
    /// Sell 100 units to 2,000 concurrent buyers five ways on a PostgreSQL (naive,
    /// atomic, optimistic, sharded, boxoffice's hold + commit), in a database it
    /// creates and drops.
    Experiment(boxoffice_rehearse::cli::ExperimentArgs),
    /// Drive a realistic crowd through a running deployment's public API; writes an
    /// HTML report with charts and its JSON. `--find-rate` looks for the admission
    /// rate to set. Exits 1 when the audit afterwards (--audit) finds a violation.
    Rehearse(Box<boxoffice_rehearse::cli::RehearseArgs>),
}

fn main() -> ExitCode {
    match boxoffice_server::allocator::start(serve_cli()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: the async runtime did not start: {e}");
            ExitCode::from(2)
        }
    }
}

async fn serve_cli() -> ExitCode {
    // Every TLS connection (Stripe, PostgreSQL, Redis) uses rustls on ring; installed
    // first so no library has to pick a provider by itself.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::VerifyPosition { buyer, files } = &cli.command {
        let v = boxoffice_server::verify::verify(files, *buyer)?;
        println!(
            "buyer {buyer}: position {} of {} in the pre-opening pool (seed matches the commitment)",
            v.position, v.pool_size
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Gate { bundle, barcode } = &cli.command {
        return gate(bundle, barcode.clone());
    }
    match &cli.command {
        Command::Plan(args) => {
            return boxoffice_rehearse::cli::run_plan(args).map(|_| ExitCode::SUCCESS);
        }
        Command::Experiment(args) => {
            boxoffice_rehearse::cli::run_experiment(args).await?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Rehearse(args) if !args.audit => return rehearse(args, None).await,
        _ => {}
    }
    let listen = match &cli.command {
        Command::Serve { listen, .. } => *listen,
        _ => None,
    };
    let config = Config::load(
        cli.config.as_deref(),
        &Overrides {
            listen,
            data_dir: cli.data_dir.clone(),
            ledger: cli.ledger.clone(),
            hot: cli.hot.clone(),
            payments: cli.payments,
        },
    )?;
    let _telemetry = telemetry::init(&config)?;
    match cli.command {
        Command::Serve { demo, .. } => serve(config.for_demo(demo), demo).await,
        Command::Audit { json } => {
            let report = commands::audit(&config).await?;
            commands::print_audit(&report, json);
            Ok(if report.clean() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Migrate => commands::migrate(&config).await.map(|_| ExitCode::SUCCESS),
        Command::Rebuild { event } => commands::rebuild(&config, event)
            .await
            .map(|_| ExitCode::SUCCESS),
        Command::Rehearse(args) => {
            let hook: boxoffice_rehearse::rehearse::AuditHook = Box::new(move || {
                Box::pin(async move {
                    let report = commands::audit(&config).await?;
                    Ok(serde_json::to_value(&report)?)
                })
            });
            rehearse(&args, Some(hook)).await
        }
        // Answered above, before any config is needed.
        Command::VerifyPosition { .. }
        | Command::Gate { .. }
        | Command::Plan(_)
        | Command::Experiment(_) => Ok(ExitCode::SUCCESS),
    }
}

async fn rehearse(
    args: &boxoffice_rehearse::cli::RehearseArgs,
    audit: Option<boxoffice_rehearse::rehearse::AuditHook>,
) -> anyhow::Result<ExitCode> {
    let clean = boxoffice_rehearse::cli::run_rehearse(args, audit).await?;
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn gate(bundle: &std::path::Path, barcode: Option<String>) -> anyhow::Result<ExitCode> {
    use boxoffice_server::gate::{Verdict, check};
    let now = boxoffice_engine::ports::Clock::now(&boxoffice_engine::ports::SystemClock);
    let verdict = check(bundle, barcode, now)?;
    println!("{}", verdict.line());
    Ok(match verdict {
        Verdict::Admit(_) => ExitCode::SUCCESS,
        Verdict::Refuse(_) => ExitCode::from(1),
    })
}

async fn serve(mut config: Config, demo: bool) -> anyhow::Result<ExitCode> {
    // Every connection and event stream is a file descriptor: take what the system
    // allows rather than a shell's default soft limit.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::info!(open_files = n, "file descriptor limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the file descriptor limit"),
    }
    if demo && config.payments.is_none() {
        config.payments = Some(PaymentsChoice::Fake);
    }
    let app = Application::build(config).await?;
    let addr = app.local_addr();
    let key = app.operator_key.expose();
    if app.operator_key_generated || demo {
        println!("operator key: {key}");
    }
    if demo {
        let event = commands::ensure_demo(&app.engine()).await?;
        print_demo_help(addr, event, key);
    }
    println!("listening on http://{addr}");
    app.run_until_stopped(boxoffice_server::app::shutdown_signal())
        .await?;
    Ok(ExitCode::SUCCESS)
}

fn print_demo_help(addr: std::net::SocketAddr, event: boxoffice_domain::EventId, key: &str) {
    let b = format!("http://{addr}");
    println!("demo event {event} is open: 51,000 units (FLOOR standing, L1-L10 and U1-U10 seated)");
    println!("  in a browser: {b}/");
    println!("  curl -s {b}/v1/events/{event} -H 'Authorization: Bearer {key}'");
    println!(
        "  curl -s -X POST {b}/v1/buyers -H \"Idempotency-Key: $(head -c 24 /dev/urandom | base64)\""
    );
    println!("  (then join the queue, poll /v1/queue/status, hold, check out: see README)");
}

#[cfg(test)]
mod tests {
    use super::*;
    use boxoffice_server::config::MIN_OPERATOR_KEY_LEN;

    #[test]
    fn the_help_states_the_operator_key_minimum() {
        let help = <Cli as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        let minimum = format!("at least {MIN_OPERATOR_KEY_LEN} characters");
        assert!(help.contains(&minimum), "{help}");
    }

    #[test]
    fn a_refused_ledger_or_hot_flag_is_not_echoed_with_its_password() {
        for (flag, value) in [
            ("--ledger", "mysql://app:pg-hunter2@db/boxoffice"),
            ("--hot", "redis://:redis-hunter2@cache,memcache://x"),
        ] {
            let e = match Cli::try_parse_from(["boxoffice", flag, value, "migrate"]) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{flag} {value} was taken"),
            };
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains(flag) && e.contains("[redacted]"), "{e}");
        }
        let cli = Cli::try_parse_from(["boxoffice", "--ledger", "postgres://a:b@h/d", "migrate"]);
        let ledger = cli.map(|c| c.ledger).map_err(|e| e.to_string());
        assert_eq!(
            ledger,
            Ok(Some(LedgerChoice::Postgres("postgres://a:b@h/d".into())))
        );
    }
}

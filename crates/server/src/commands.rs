//! The subcommands besides `serve`: `audit` and `migrate`, plus the demo set-up.

use std::sync::Arc;

use anyhow::Context;
use boxoffice_domain::token::KeyRing;
use boxoffice_engine::ports::SystemClock;
use boxoffice_engine::{AuditReport, Engine};

use crate::app::{self, open_ports};
use crate::config::Config;

/// Checks P1, P2 and P6 on the ledger in `config.data_dir` against the provider's book.
pub async fn audit(config: &Config) -> anyhow::Result<AuditReport> {
    anyhow::ensure!(
        app::has_ledger(&config.data_dir),
        "no ledger in {}",
        config.data_dir.display()
    );
    let (ports, _) = open_ports(config, Arc::new(SystemClock))?;
    // The audit signs nothing; a throwaway key ring keeps the engine whole.
    let keys = KeyRing::new(vec![("audit".into(), vec![0; 32])]).map_err(anyhow::Error::msg)?;
    let engine = Engine::new(ports, keys, config.engine.clone());
    engine.audit().await.context("reading the ledger")
}

pub fn print_audit(report: &AuditReport, as_json: bool) {
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        );
        return;
    }
    println!(
        "audited {} events, {} seats sold, {} orders ({} in flight), {} provider payments",
        report.events,
        report.seats_sold,
        report.orders,
        report.orders_in_flight,
        report.provider_payments
    );
    if report.clean() {
        println!(
            "clean: P1 (no seat sold twice, none over capacity), P2 (no charge without a ticket and none the other way), P6 (per-buyer limits) hold"
        );
    }
    for v in &report.violations {
        println!("VIOLATION {}: {}", v.promise, v.detail);
    }
}

/// Creates the ledger's schema (or brings it up to date) and exits.
pub fn migrate(config: &Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)?;
    let path = config.data_dir.join(app::LEDGER_FILE);
    boxoffice_store_sqlite::SqliteLedger::open(&path, Default::default())
        .context("migrating the ledger")?;
    println!("ledger at {} is up to date", path.display());
    Ok(())
}

/// Creates and opens the demo stadium; returns its event id.
pub async fn create_demo(engine: &Engine) -> anyhow::Result<boxoffice_domain::EventId> {
    let entry = engine
        .create_event(&crate::demo::stadium_spec())
        .await
        .context("creating the demo event")?;
    let id = entry.event.id;
    engine
        .open_sale(id)
        .await
        .context("opening the demo sale")?;
    Ok(id)
}

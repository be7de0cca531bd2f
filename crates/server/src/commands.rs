//! The subcommands besides `serve`: `audit`, `migrate`, `rebuild`, and the demo set-up.

use std::sync::Arc;

use anyhow::Context;
use boxoffice_domain::token::KeyRing;
use boxoffice_domain::{EventId, SaleStatus};
use boxoffice_engine::ports::SystemClock;
use boxoffice_engine::{AuditReport, Engine};

use crate::backends;
use crate::config::Config;

/// An engine over the configured backends for a one-off command. It signs nothing, so a
/// throwaway key ring keeps it whole. It keeps the exchange, whose charges the audit
/// reconciles with the provider's book.
async fn one_off_engine(config: &Config) -> anyhow::Result<(Engine, bool)> {
    let b = backends::open(config, Arc::new(SystemClock)).await?;
    let keys = KeyRing::new(vec![("cli".into(), vec![0; 32])]).map_err(anyhow::Error::msg)?;
    Ok((
        Engine::new(b.ports, keys, config.engine_config()).with_exchange(b.exchange),
        b.hot_is_shared,
    ))
}

/// Checks P1, P2 and P6 on the ledger against the provider's book and, when the hot
/// store is shared (Redis), compares it with the ledger.
pub async fn audit(config: &Config) -> anyhow::Result<AuditReport> {
    if config.ledger == crate::config::LedgerChoice::Sqlite {
        let file = config.data_dir.join(backends::LEDGER_FILE);
        anyhow::ensure!(file.exists(), "no ledger at {}", file.display());
    }
    let (engine, hot_is_shared) = one_off_engine(config).await?;
    let mut report = engine.audit().await.context("auditing the ledger")?;
    if hot_is_shared {
        engine
            .audit_hot_store(&mut report)
            .await
            .context("comparing the hot store with the ledger")?;
    }
    Ok(report)
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

/// Creates the ledger's schema (or brings it up to date).
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    println!("{}", backends::migrate(config).await?);
    Ok(())
}

/// Rebuilds one event in the hot store from the ledger (P5): sold seats sold, all else
/// free; holds are dropped and their buyers retry.
pub async fn rebuild(config: &Config, event: EventId) -> anyhow::Result<()> {
    let (engine, _) = one_off_engine(config).await?;
    engine
        .rebuild(event)
        .await
        .with_context(|| format!("rebuilding event {event}"))?;
    let counts = engine
        .ports()
        .arbiter
        .counts(event)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "event {event} rebuilt: {} sold, {} free of {}",
        counts.sold, counts.free, counts.capacity
    );
    Ok(())
}

/// Opens the demo stadium, creating it only if the ledger has none yet (an open or
/// scheduled event of the demo's name): `serve --demo` run again on a data directory
/// sells the same demo, not another 51,000 units at every start. Returns its id.
pub async fn ensure_demo(engine: &Engine) -> anyhow::Result<EventId> {
    let id = match existing_demo(engine).await? {
        Some(id) => id,
        None => {
            engine
                .create_event(&crate::demo::stadium_spec())
                .await
                .context("creating the demo event")?
                .event
                .id
        }
    };
    engine
        .open_sale(id)
        .await
        .context("opening the demo sale")?;
    Ok(id)
}

/// The oldest open or scheduled event named as the demo, if any.
async fn existing_demo(engine: &Engine) -> anyhow::Result<Option<EventId>> {
    let name = crate::demo::stadium_spec().name;
    let ledger = &engine.ports().ledger;
    let mut ids = Vec::new();
    for status in [SaleStatus::Open, SaleStatus::Scheduled] {
        ids.extend(ledger.events_with_status(status).await?);
    }
    ids.sort_unstable_by_key(|id| id.0);
    for id in ids {
        if ledger.event(id).await?.is_some_and(|e| e.name == name) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

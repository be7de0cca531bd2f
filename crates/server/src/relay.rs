//! Wiring of the outbox relay: the sinks this node can reach (webhooks always, NATS
//! JetStream when `[nats]` is set) and the worker that delivers the ledger's outbox to
//! them (`boxoffice_engine::relay`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use boxoffice_engine::ports::{Clock, NATS_SINK, Outbox, Sink, SinkKind};
use boxoffice_engine::relay::Relay;
use boxoffice_sinks::{NatsSink, Publishers};

use crate::config::Config;

/// The relay of this node; `owner` names its claims in the ledger. A node alone on its
/// ledger (`Config::sole_on_its_ledger`: the SQLite file of its locked data directory)
/// gives back whatever an earlier incarnation had claimed at once: after a crash its
/// deliveries go out now, not when their leases (`relay.lease_ms`) lapse. A node on a
/// PostgreSQL ledger cannot tell a dead peer from a live one here (another process may
/// share the ledger, with an in-process hot store too) and waits for the lease.
pub async fn build(
    config: &Config,
    outbox: Arc<dyn Outbox>,
    clock: Arc<dyn Clock>,
    owner: String,
) -> anyhow::Result<Relay> {
    if config.sole_on_its_ledger() {
        let released = (outbox.release_claims(&owner).await)
            .context("giving back the outbox claims of an earlier incarnation")?;
        if released > 0 {
            tracing::info!(
                released,
                "outbox claims of an earlier incarnation given back"
            );
        }
    }
    let nats = match &config.nats {
        Some(nats) => Some(Arc::new(connect_nats(nats, &outbox, &*clock).await?)),
        None => None,
    };
    let timeout = Duration::from_millis(config.relay.webhook_timeout_ms);
    let publishers =
        Publishers::new(timeout, clock.clone(), nats).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Relay::new(
        outbox,
        Arc::new(publishers),
        clock,
        owner,
        config.relay.clone(),
    ))
}

/// Connects (in the background) and makes sure the ledger has the NATS sink, so events
/// written from now on are kept for it.
async fn connect_nats(
    nats: &boxoffice_sinks::NatsConfig,
    outbox: &Arc<dyn Outbox>,
    clock: &dyn Clock,
) -> anyhow::Result<NatsSink> {
    let sink = NatsSink::connect(nats.clone())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    outbox
        .add_sink(&Sink {
            id: NATS_SINK.into(),
            kind: SinkKind::Nats,
            created_at: clock.now(),
        })
        .await
        .context("registering the NATS sink in the ledger")?;
    tracing::info!(url = %crate::config::redact_urls(&nats.url), stream = %nats.stream, prefix = %nats.subject_prefix, "order events go to NATS JetStream");
    Ok(sink)
}

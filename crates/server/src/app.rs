//! Wiring: builds the engine over the configured backends, binds the listener, and runs
//! the API and the workers until a shutdown signal.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use boxoffice_domain::token::{EdgeAlgorithm, KeyRing};
use boxoffice_domain::{Millis, Secret};
use boxoffice_engine::ports::{Claimant, Clock, IdentityProvider, SystemClock};
use boxoffice_engine::relay::Relay;
use boxoffice_engine::replays::ReplayUpkeep;
use boxoffice_engine::worker::Outcome;
use boxoffice_engine::worker::run_every;
use boxoffice_engine::{Engine, EngineError};
use boxoffice_http::{AppState, Edge};
use boxoffice_oidc::OidcProvider;
use boxoffice_payment_fake::{FakeGateway, WebhookSender};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::backends;
use crate::config::Config;
use crate::dir_lock::DirLock;
use crate::human_check::HostedVerifiers;
use crate::{replays, secrets, serve, wake_probe};

/// A built application: bound, rebuilt, not yet serving.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    config: Config,
    /// The fake provider's own webhook delivery, when `fake_payments.webhook_url` is set.
    webhooks: Option<WebhookSender>,
    /// Heartbeats and pruning of the replay stores.
    upkeep: Arc<ReplayUpkeep>,
    /// Delivers the ledger's outbox to webhook endpoints and NATS.
    relay: Arc<Relay>,
    /// Embedded mode: this process's hold on the data directory, kept while it serves.
    dir_lock: Option<DirLock>,
    pub operator_key: Secret,
    pub operator_key_generated: bool,
    /// The stand-in provider, when it is the one in use: its confirmation page is served.
    fake: Option<Arc<FakeGateway>>,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// Builds with a given clock, so tests can move time.
    pub async fn build_with_clock(
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Application> {
        config.check()?;
        let dir_lock = lock_if_embedded(&config)?;
        let backends = backends::open(&config, clock.clone()).await?;
        let fake = backends.fake.clone();
        let (claimant, upkeep) = replay_upkeep(&config, &backends, clock.clone()).await?;
        let keys = key_ring(&config)?;
        let (operator_key, generated) = secrets::operator_key(&config)?;
        let owner = claimant.node.to_string();
        let relay = crate::relay::build(&config, backends.outbox.clone(), clock.clone(), owner)
            .await
            .context("starting the outbox relay")?;
        let mut engine = Engine::new(backends.ports, keys, config.engine_config())
            .with_buyers(config.buyers.clone())
            .publishing_to_nats(config.nats.is_some())
            .with_tickets(backends.tickets)
            .with_proof_memory(backends.proofs.clone())
            .with_exchange(backends.exchange)
            .with_outbox(backends.outbox)
            .with_velocity(backends.velocity);
        if let Some(oidc) = identity_provider(&config, clock.now()).await? {
            engine = engine.with_identity_provider(oidc);
        }
        if let Some(verifiers) = HostedVerifiers::from_config(&config.human_check)? {
            engine = engine.with_human_verifier(Arc::new(verifiers));
        }
        let engine = Arc::new(engine);
        let opened = engine
            .load_open_events()
            .await
            .context("rebuilding open events in the hot store")?;
        tracing::info!(open_events = opened, "hot store rebuilt from the ledger");
        let pooled = engine
            .restore_pools()
            .await
            .context("restoring the pre-opening pools from the ledger")?;
        if pooled > 0 {
            tracing::info!(
                buyers = pooled,
                "pre-opening pools restored from the ledger"
            );
        }
        let listener = listen(config.listen, config.http.listen_backlog)
            .with_context(|| format!("binding {}", config.listen))?;
        DirLock::note_if_held(dir_lock.as_ref(), listener.local_addr()?)?;
        let webhooks = webhook_sender(fake.clone(), &config, listener.local_addr()?, clock)?;
        let state = AppState::new(boxoffice_http::Shared {
            engine,
            idempotency: backends.idempotency,
            hold_claims: backends.hold_claims,
            join_claims: backends.join_claims,
            claimant,
            operator_key: operator_key.clone(),
            metrics: Some(crate::telemetry::metrics_render()),
            ready: Arc::new(AtomicBool::new(false)),
            edge: Arc::new(Edge::new(&config.http)),
        });
        Ok(Application {
            listener,
            state,
            config,
            webhooks,
            upkeep,
            relay: Arc::new(relay),
            dir_lock,
            operator_key,
            operator_key_generated: generated,
            fake,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    pub fn engine(&self) -> Arc<Engine> {
        self.state.engine.clone()
    }

    /// The service this application serves, for driving it in-process (tests with
    /// `tower::ServiceExt::oneshot`); requests must carry `ConnectInfo<SocketAddr>`.
    pub fn router(
        &self,
    ) -> impl tower::Service<
        axum::extract::Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    >
    + Clone
    + Send
    + Sync
    + 'static
    + use<> {
        let app = boxoffice_http::app(self.state.clone());
        match &self.fake {
            Some(fake) => app.merge(crate::fake_bank::router(fake.clone())),
            None => app,
        }
    }

    /// Serves until `shutdown` resolves; then ends event streams, lets requests in
    /// progress and the workers finish, and returns within `http.shutdown_grace_ms`.
    pub async fn run_until_stopped(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let router = self.router();
        // Held until serving ends; dropped with this function.
        let _dir_lock = self.dir_lock;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut workers = spawn_workers(&self.state.engine, &self.config, stop_rx.clone());
        workers.extend(replays::spawn_upkeep(
            self.upkeep,
            &self.config.workers,
            stop_rx.clone(),
        ));
        let relay = self.relay.clone();
        let period = Duration::from_millis(self.config.workers.relay_interval_ms);
        workers.push(tokio::spawn(run_every(
            "relay",
            period,
            stop_rx.clone(),
            move || {
                let relay = relay.clone();
                async move { relay.step().await }
            },
        )));
        workers.push(tokio::spawn(run_every(
            "metrics upkeep",
            crate::telemetry::METRICS_UPKEEP,
            stop_rx.clone(),
            || async {
                crate::telemetry::metrics_upkeep();
                Ok(Outcome { done: 0 })
            },
        )));
        workers.push(wake_probe::spawn(stop_rx.clone()));
        if self.config.sole_on_its_ledger() {
            // Read before the server answers anyone: swaps of this incarnation come after.
            let started = self.state.engine.now();
            workers.push(tokio::spawn(resume_swaps(
                self.state.engine.clone(),
                started,
                stop_rx.clone(),
            )));
        }
        if let Some(sender) = self.webhooks {
            workers.push(tokio::spawn(sender.run(stop_rx)));
        }
        self.state.ready.store(true, Ordering::Release);
        let stopping = self.state.edge.stopping();
        let http = &self.config.http;
        let header_timeout = Duration::from_millis(http.header_read_timeout_ms);
        let open = serve::serve(self.listener, router, header_timeout, stopping, shutdown).await;
        let deadline = Instant::now() + Duration::from_millis(http.shutdown_grace_ms);
        tracing::info!(connections = open.len(), "stopping: draining connections");
        let _ = stop_tx.send(true);
        serve::drain(open, deadline).await;
        for w in workers {
            if tokio::time::timeout_at(deadline, w).await.is_err() {
                tracing::warn!("a worker was still busy at the shutdown deadline");
            }
        }
        Ok(())
    }
}

/// The token keys from the data directory: the HMAC ring always, and the Ed25519 keys
/// when tickets and admission tokens are EdDSA.
fn key_ring(config: &Config) -> anyhow::Result<KeyRing> {
    let ring =
        KeyRing::new(secrets::signing_keys(&config.data_dir)?).map_err(anyhow::Error::msg)?;
    match config.tokens.edge_algorithm {
        EdgeAlgorithm::Hs256 => Ok(ring),
        EdgeAlgorithm::Eddsa => ring
            .with_ed25519(secrets::ed25519_keys(&config.data_dir)?)
            .map_err(anyhow::Error::msg),
    }
}

/// The `[oidc]` provider, its keys fetched once so a wrong `jwks_url` shows at start-up;
/// a provider that is down then does not stop the server (its keys are fetched again
/// when a token needs them).
async fn identity_provider(
    config: &Config,
    now: boxoffice_domain::Millis,
) -> anyhow::Result<Option<Arc<dyn IdentityProvider>>> {
    let Some(oidc) = &config.oidc else {
        return Ok(None);
    };
    let issuer = oidc.issuer.clone();
    let provider = OidcProvider::new(oidc.clone()).map_err(|e| anyhow::anyhow!("[oidc]: {e}"))?;
    match provider.warm_up(now).await {
        Ok(keys) => tracing::info!(%issuer, keys, "identity provider keys fetched"),
        Err(e) => tracing::warn!(%issuer, error = %e, "identity provider keys not fetched yet"),
    }
    Ok(Some(Arc::new(provider)))
}

/// This process's claimant and the upkeep of both replay stores. The first heartbeat is
/// written before any request is served, so no claim of this node is ever taken for a
/// dead one's.
async fn replay_upkeep(
    config: &Config,
    backends: &backends::Backends,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<(Claimant, Arc<ReplayUpkeep>)> {
    let claimant = config.idempotency.claimant();
    let stores = vec![
        backends.idempotency.clone(),
        backends.hold_idempotency.clone(),
        backends.join_claims.replays().clone(),
    ];
    let ledger = backends.ports.ledger.clone();
    let upkeep = Arc::new(
        config
            .idempotency
            .upkeep(stores, ledger, claimant.node, clock),
    );
    upkeep
        .heartbeat_step()
        .await
        .context("recording this node's first heartbeat")?;
    tracing::info!(incarnation = %claimant.node, "claims of earlier incarnations are dead");
    Ok((claimant, upkeep))
}

/// In embedded mode (the hot store in this process) only one process may serve a data
/// directory: take its lock before opening anything in it.
fn lock_if_embedded(config: &Config) -> anyhow::Result<Option<DirLock>> {
    if !config.embedded() {
        return Ok(None);
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    DirLock::acquire(&config.data_dir, config.listen).map(Some)
}

/// The fake provider's webhook delivery to `fake_payments.webhook_url` (a bare path
/// means this server), or none.
fn webhook_sender(
    fake: Option<Arc<FakeGateway>>,
    config: &Config,
    own: SocketAddr,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Option<WebhookSender>> {
    let Some(fake) = fake else { return Ok(None) };
    let Some(url) = config.fake_payments.webhook_target(own) else {
        return Ok(None);
    };
    tracing::info!(%url, "the fake provider delivers its own webhooks");
    let sender = WebhookSender::new(fake, url, clock).context("starting webhook delivery")?;
    Ok(Some(sender))
}

fn spawn_workers(
    engine: &Arc<Engine>,
    config: &Config,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let w = &config.workers;
    vec![
        spawn_worker(
            "expiry",
            w.expiry_interval_ms,
            &stop,
            engine,
            |e| async move { e.expiry_step().await },
        ),
        spawn_worker(
            "recovery",
            w.recovery_interval_ms,
            &stop,
            engine,
            |e| async move { e.recovery_step().await },
        ),
        spawn_worker(
            "exchange",
            w.recovery_interval_ms,
            &stop,
            engine,
            |e| async move { e.exchange_step().await },
        ),
        spawn_worker(
            "event_cancellations",
            w.event_cancel_interval_ms,
            &stop,
            engine,
            |e| async move { e.event_cancellation_step().await },
        ),
        spawn_worker(
            "drift_repair",
            w.drift_repair_interval_ms,
            &stop,
            engine,
            |e| async move { e.drift_repair_step().await },
        ),
        spawn_worker(
            "admission",
            config.engine.admission_interval_ms,
            &stop,
            engine,
            |e| async move { e.admission_step().await },
        ),
    ]
}

/// A node alone on its ledger (`Config::sole_on_its_ledger`: it holds the lock of the
/// data directory its SQLite ledger is in) knows every unfinished exchange swap last
/// moved before `started`
/// (read before the server answered anyone) is an earlier incarnation's: each is
/// finished or undone now rather than after `recovery_after_s`. Swaps this incarnation's
/// buyers reserve are theirs to drive, and the sweep's after the usual wait. It runs beside
/// the server, not before it listens: with the provider's calls at hundreds of
/// milliseconds, a crash that left thousands of swaps between their steps would
/// otherwise keep the node from answering for minutes. A provider that does not answer
/// leaves them to the exchange worker.
async fn resume_swaps(engine: Arc<Engine>, started: Millis, mut stop: watch::Receiver<bool>) {
    let resumed = tokio::select! {
        r = engine.exchange_sweep(started) => r,
        _ = stop.wait_for(|s| *s) => return,
    };
    match resumed {
        Ok(o) if o.done > 0 => tracing::info!(swaps = o.done, "unfinished exchange swaps resumed"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not resume the unfinished exchange swaps"),
    }
}

/// Runs `step` on the engine every `period_ms` until `stop` (see `run_every`).
fn spawn_worker<Fut>(
    name: &'static str,
    period_ms: u64,
    stop: &watch::Receiver<bool>,
    engine: &Arc<Engine>,
    step: fn(Arc<Engine>) -> Fut,
) -> tokio::task::JoinHandle<()>
where
    Fut: std::future::Future<Output = Result<Outcome, EngineError>> + Send + 'static,
{
    let engine = engine.clone();
    let period = Duration::from_millis(period_ms);
    tokio::spawn(run_every(name, period, stop.clone(), move || {
        step(engine.clone())
    }))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Binds the listening socket with the configured backlog (tokio's own bind queues
/// 1,024, and a larger burst of connections is reset by the kernel).
fn listen(addr: std::net::SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

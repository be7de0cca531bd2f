//! Logs and metrics. The Prometheus recorder is process-wide, installed once.

use std::sync::{Arc, OnceLock};

use boxoffice_http::MetricsRender;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

pub fn metrics_render() -> MetricsRender {
    let handle = HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(&LATENCY_BUCKETS)
            .ok()?
            .build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).ok()?;
        Some(handle)
    });
    let handle = handle.clone();
    Arc::new(move || {
        handle
            .as_ref()
            .map(PrometheusHandle::render)
            .unwrap_or_default()
    })
}

pub fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BOXOFFICE_LOG")
        .unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

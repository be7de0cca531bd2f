//! Logs, traces and metrics. Logs go to stderr as text or JSON lines (`log_format`),
//! filtered by `BOXOFFICE_LOG` (default `info`); with the `otel` feature and
//! `[otel] endpoint`, spans are also exported to an OpenTelemetry collector. The
//! Prometheus recorder is process-wide, installed once.

use std::sync::{Arc, OnceLock};

use boxoffice_http::MetricsRender;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::{Config, LogFormat, OtelConfig};

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

/// How often the recorder's histogram samples are folded into their buckets when no
/// scrape does it first (the exporter's own default when it runs its own upkeep).
pub const METRICS_UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// Folds the recorder's waiting histogram samples into their buckets. Each latency
/// recorded waits in the recorder, 8 bytes and more, until a scrape or an upkeep folds
/// it in: a node nobody scrapes would keep every one it ever measured, a few dozen
/// bytes for every request served. The process runs this every `METRICS_UPKEEP`.
pub fn metrics_upkeep() {
    if let Some(Some(handle)) = HANDLE.get() {
        handle.run_upkeep();
    }
}

/// Keeps the exporter alive; dropping it sends the spans still buffered.
#[must_use = "dropping it stops the trace export"]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    traces: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.traces.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the process's log subscriber (and trace export) for `config`.
pub fn init(config: &Config) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_env("BOXOFFICE_LOG").unwrap_or_else(|_| "info".into());
    let logs = log_layer(config.log_format, std::io::stderr, colours_wanted());
    let (traces, telemetry) = trace_layer(&config.otel)?;
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(logs)
        .with(traces)
        .try_init();
    Ok(telemetry)
}

/// Whether text log lines are coloured: only for a person at a terminal (stderr is one,
/// and `NO_COLOR` is unset or empty). Colours cost: each span's fields are formatted
/// when the span opens, whether or not a line is ever written in it, and with colours
/// every field name is wrapped in escape codes, which took 11 % of a hold's instructions
/// at the default level (docs/BENCHMARKS.md, "The log level on the hold path"). A log file or a collector
/// is better off without the codes anyway.
fn colours_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Log lines written to `writer`: text for people (coloured when `colours`), or one
/// JSON object per line with the event's fields, its innermost span (`span`) and every
/// span it is in (`spans`, outermost first), so a pipeline can follow one request or
/// one hold.
pub fn log_layer<S, W>(
    format: LogFormat,
    writer: W,
    colours: bool,
) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Text => layer.with_ansi(colours).boxed(),
        LogFormat::Json => layer
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
    }
}

type TraceLayer<S> = Option<Box<dyn Layer<S> + Send + Sync>>;

#[cfg(not(feature = "otel"))]
fn trace_layer<S>(otel: &OtelConfig) -> anyhow::Result<(TraceLayer<S>, Telemetry)> {
    anyhow::ensure!(
        otel.endpoint.is_none(),
        "otel.endpoint is set, but this build cannot export traces: build boxoffice with \
         `--features otel`, or remove otel.endpoint"
    );
    Ok((None, Telemetry {}))
}

#[cfg(feature = "otel")]
fn trace_layer<S>(otel: &OtelConfig) -> anyhow::Result<(TraceLayer<S>, Telemetry)>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{SpanExporter, WithExportConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;

    let Some(endpoint) = &otel.endpoint else {
        return Ok((None, Telemetry { traces: None }));
    };
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.clone())
        .build()
        .map_err(|e| anyhow::anyhow!("otel.endpoint {endpoint:?}: {e}"))?;
    let resource = Resource::builder()
        .with_service_name(otel.service_name.clone())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("boxoffice");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).boxed();
    Ok((
        Some(layer),
        Telemetry {
            traces: Some(provider),
        },
    ))
}

#[cfg(test)]
mod tests {
    use boxoffice_testkit::logs::LogLines;

    use super::*;

    #[tracing::instrument(skip_all, fields(event = event, hold = tracing::field::Empty))]
    fn hold(event: u64) {
        tracing::Span::current().record("hold", "h-1");
        tracing::info!(seats = 2, "held");
    }

    /// What `log_layer` writes of a hold in a request's span.
    fn a_hold_logged(format: LogFormat, colours: bool) -> String {
        let lines = LogLines::default();
        let writer = lines.clone();
        let subscriber =
            tracing_subscriber::registry().with(log_layer(format, move || writer.clone(), colours));
        tracing::subscriber::with_default(subscriber, || {
            let request = tracing::info_span!("request", request_id = "r-9");
            request.in_scope(|| hold(7));
        });
        lines.text()
    }

    #[test]
    fn json_log_lines_are_json_carrying_their_spans_fields() {
        let text = a_hold_logged(LogFormat::Json, false);
        let line: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(line["fields"]["message"], "held");
        assert_eq!(line["fields"]["seats"], 2);
        assert_eq!(line["span"]["name"], "hold");
        assert_eq!(line["span"]["event"], 7);
        assert_eq!(line["span"]["hold"], "h-1");
        assert_eq!(
            line["spans"][0]["request_id"], "r-9",
            "outermost first: {line}"
        );
    }

    #[test]
    fn text_log_lines_carry_colour_codes_only_when_asked() {
        for colours in [false, true] {
            let text = a_hold_logged(LogFormat::Text, colours);
            assert!(
                text.contains("request_id") && text.contains("held"),
                "{text}"
            );
            assert_eq!(
                text.contains('\x1b'),
                colours,
                "colours {colours}: {text:?}"
            );
        }
    }

    #[test]
    fn an_otel_endpoint_is_refused_or_taken_as_the_build_allows() {
        let otel = OtelConfig {
            endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
            ..OtelConfig::default()
        };
        let built = trace_layer::<tracing_subscriber::Registry>(&otel);
        if cfg!(feature = "otel") {
            let (layer, _telemetry) = built.expect("an exporter");
            assert!(layer.is_some());
        } else {
            let e = built.err().expect("refused").to_string();
            assert!(e.contains("--features otel"), "{e}");
        }
    }
}

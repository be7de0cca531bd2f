//! Where a request waits, without a profiler: a step of a checkout or a join timed into
//! a histogram labelled with the step's name (`boxoffice_checkout_step_seconds{step}`,
//! `boxoffice_join_step_seconds{step}`).

/// Runs `work`, recording how long it took under `metric{step}`.
pub(crate) async fn timed<T>(
    metric: &'static str,
    step: &'static str,
    work: impl Future<Output = T>,
) -> T {
    let started = std::time::Instant::now();
    let out = work.await;
    metrics::histogram!(metric, "step" => step).record(started.elapsed().as_secs_f64());
    out
}

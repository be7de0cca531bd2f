//! Live progress in the terminal: bars for arrivals and sales, and a line with the
//! crowd's state, the current rates and p99s. Drawn on stderr only when it is a
//! terminal (indicatif hides itself otherwise), and not at all when asked.

use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::record::{Recorder, Step};
use super::report::quantile_ms;

pub fn spawn(
    rec: Arc<Recorder>,
    buyers: u64,
    capacity: u64,
    show: bool,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let target = match show {
            true => ProgressDrawTarget::stderr(),
            false => ProgressDrawTarget::hidden(),
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{prefix:>9} [{bar:40}] {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = |prefix: &'static str, len: u64| {
            let b = multi.add(ProgressBar::new(len.max(1)));
            b.set_style(style.clone());
            b.set_prefix(prefix);
            b
        };
        let (arrivals, sold) = (bar("arrivals", buyers), bar("sold", capacity));
        let line = multi.add(ProgressBar::new_spinner());
        let mut seen = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => break,
            }
            let fresh = rec.samples_since(seen);
            seen += fresh.len();
            arrivals.set_position(Recorder::get(&rec.arrived));
            sold.set_position(Recorder::get(&rec.sold));
            line.set_message(status(&rec, &fresh));
            line.tick();
        }
        for b in [&arrivals, &sold, &line] {
            b.finish();
        }
    })
}

/// "in line 1,234 · let in 56 · holding 7 · failures 0 · 812 req/s · hold p99 3 ms · checkout p99 9 ms"
fn status(rec: &Recorder, fresh: &[super::record::Sample]) -> String {
    let p99 = |step: Step| {
        let mut l: Vec<u32> = fresh
            .iter()
            .filter(|s| s.step == step)
            .map(|s| s.latency_us)
            .collect();
        match l.is_empty() {
            true => "–".to_owned(),
            false => format!("{:.0} ms", quantile_ms(&mut l, 0.99)),
        }
    };
    let n = |c: &std::sync::atomic::AtomicU64| crate::plan::n(Recorder::get(c) as f64);
    format!(
        "in line {} · let in {} · holding {} · failures {} · {} req/s · hold p99 {} · checkout p99 {}",
        n(&rec.in_line),
        n(&rec.admitted),
        n(&rec.holding),
        n(&rec.failures),
        crate::plan::n(fresh.len() as f64 * 2.0),
        p99(Step::Hold),
        p99(Step::Checkout)
    )
}

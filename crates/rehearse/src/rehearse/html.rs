//! The report as one self-contained HTML page: a summary, tables, and the charts as
//! inline SVG. No script, no style sheet or font from elsewhere.

use std::fmt::Write;

use super::report::Report;
use super::svg::{self, Marker, Series};

/// The ids of the charts every report carries.
pub const CHARTS: [&str; 8] = [
    "chart-rps",
    "chart-p50",
    "chart-p95",
    "chart-p99",
    "chart-queue",
    "chart-sold",
    "chart-errors",
    "chart-fairness",
];

const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;\
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.ok{color:#1a7f37}.bad{color:#c62828}svg{display:block;margin:1em 0}";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

pub fn page(r: &Report) -> String {
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>boxoffice rehearsal, \
         event {}</title><style>{STYLE}</style></head><body><h1>Rehearsal of event {}</h1>",
        r.event, r.event
    );
    summary(&mut h, r);
    steps(&mut h, r);
    charts(&mut h, r);
    errors(&mut h, r);
    fairness(&mut h, r);
    h.push_str("</body></html>\n");
    h
}

/// The best minute and the best 10 seconds of sales, and the sale's own pace, in words.
fn pace(s: &super::report::Sold) -> String {
    let one = |p: &super::report::Pace| {
        format!(
            "{} seats (about {:.0} orders) from {:.1} s, {:.0} orders a minute",
            p.seats, p.orders, p.from_s, p.orders_per_min
        )
    };
    let sale = s.sale.as_ref().map_or(String::new(), |p| {
        format!(
            "; from 10 % to 80 % sold: {} seats in {:.1} s from {:.1} s, {:.0} orders a minute",
            p.seats, p.window_s, p.from_s, p.orders_per_min
        )
    });
    match (&s.best_minute, &s.best_10_s) {
        (Some(m), Some(t)) => format!("best minute: {}; best 10 s: {}{sale}", one(m), one(t)),
        _ => "nothing sold".into(),
    }
}

fn summary(h: &mut String, r: &Report) {
    let audit = match &r.audit {
        Some(a) if a.clean => "<span class=\"ok\">clean</span>".to_owned(),
        Some(_) => "<span class=\"bad\">VIOLATIONS (see the JSON)</span>".to_owned(),
        None => "not run".to_owned(),
    };
    let stopped = r
        .stopped
        .as_deref()
        .map_or("every buyer finished".into(), esc);
    let s = &r.sold;
    let _ = write!(
        h,
        "<table><tr><th>targets</th><td>{}</td></tr>\
         <tr><th>duration</th><td>{:.1} s ({stopped})</td></tr>\
         <tr><th>buyers</th><td>{} planned, {} joined, {} let in</td></tr>\
         <tr><th>sold</th><td>{} of {} (buyers were told {}; ledger {})</td></tr>\
         <tr><th>sold out at</th><td>{}</td></tr>\
         <tr><th>pace</th><td>{}</td></tr>\
         <tr><th>requests</th><td>{} ({:.0}/s from the generator)</td></tr>\
         <tr><th>generator's slots</th><td>{} connections; {:.0} % of requests waited \
         for one (p50 {:.1} ms, p99 {:.1} ms; not in the latencies below)</td></tr>\
         <tr><th>audit afterwards</th><td>{audit}</td></tr></table>",
        esc(&r.targets.join(", ")),
        r.duration_s,
        r.buyers.planned,
        r.buyers.joined,
        r.buyers.admitted,
        s.hot_store,
        s.capacity,
        s.by_buyers,
        s.ledger.map_or("not audited".into(), |l| l.to_string()),
        s.sold_out_at_s
            .map_or("not sold out".into(), |t| format!("{t:.1} s")),
        pace(s),
        r.requests,
        r.generator_requests_per_s,
        r.generator_slots.max_connections,
        r.generator_slots.waited_share * 100.0,
        r.generator_slots.wait_p50_ms,
        r.generator_slots.wait_p99_ms,
    );
    h.push_str("<h2>Outcomes</h2><table><tr><th>outcome</th><th>buyers</th></tr>");
    for (k, v) in &r.buyers.outcomes {
        let _ = write!(h, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
    }
    h.push_str("</table>");
}

fn steps(h: &mut String, r: &Report) {
    h.push_str(
        "<h2>Steps</h2><table><tr><th>step</th><th>requests</th><th>failures</th>\
         <th>peak/s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr>",
    );
    for s in &r.steps {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            s.name, s.requests, s.failures, s.peak_per_s, s.p50_ms, s.p95_ms, s.p99_ms
        );
    }
    h.push_str("</table>");
}

fn charts(h: &mut String, r: &Report) {
    let per_step = |f: &dyn Fn(&super::report::Bucket) -> f64| -> Vec<Series> {
        (r.steps.iter())
            .map(|s| Series {
                name: s.name.into(),
                points: s.series.iter().map(|b| (b.t, f(b))).collect(),
            })
            .collect()
    };
    h.push_str("<h2>Over time</h2>");
    h.push_str(&svg::lines(
        "chart-rps",
        "Requests per second, by step",
        "requests/s",
        &per_step(&|b| b.per_s),
        None,
    ));
    for (id, name, f) in [
        (
            "chart-p50",
            "p50",
            (|b: &super::report::Bucket| b.p50_ms) as fn(&super::report::Bucket) -> f64,
        ),
        ("chart-p95", "p95", |b| b.p95_ms),
        ("chart-p99", "p99", |b| b.p99_ms),
    ] {
        let title = format!("Latency {name} by step (ms)");
        h.push_str(&svg::lines(id, &title, "ms", &per_step(&f), None));
    }
    let queue = vec![
        Series {
            name: "waiting".into(),
            points: r.timeline.iter().map(|p| (p.t, p.waiting as f64)).collect(),
        },
        Series {
            name: "let in per s".into(),
            points: r.admitted_per_s.clone(),
        },
    ];
    h.push_str(&svg::lines(
        "chart-queue",
        "The line: buyers waiting, and let in per second",
        "buyers",
        &queue,
        None,
    ));
    let sold = vec![
        Series {
            name: "sold".into(),
            points: r.timeline.iter().map(|p| (p.t, p.sold as f64)).collect(),
        },
        Series {
            name: "held".into(),
            points: r.timeline.iter().map(|p| (p.t, p.held as f64)).collect(),
        },
    ];
    let marker = r.sold.sold_out_at_s.map(|x| Marker {
        x,
        label: format!("sold out {x:.1} s"),
    });
    h.push_str(&svg::lines(
        "chart-sold",
        "Seats sold and held",
        "seats",
        &sold,
        marker.as_ref(),
    ));
    let mut errors: Vec<(String, f64)> = r
        .errors
        .iter()
        .map(|(k, v)| (k.clone(), *v as f64))
        .collect();
    errors.sort_by(|a, b| b.1.total_cmp(&a.1));
    errors.truncate(25);
    h.push_str(&svg::bars(
        "chart-errors",
        "Answers other than success, by step and code",
        &errors,
    ));
    let points: Vec<(f64, f64, bool)> = (r.fairness.ranks.iter())
        .map(|&(a, b, bot)| (f64::from(a), f64::from(b), bot))
        .collect();
    h.push_str(&svg::scatter(
        "chart-fairness",
        "Arrival rank against admission rank",
        "arrival rank",
        "admission rank",
        &points,
    ));
}

fn errors(h: &mut String, r: &Report) {
    h.push_str("<h2>Answers other than success</h2><table><tr><th>step, status, code</th><th>count</th></tr>");
    for (k, v) in &r.errors {
        let _ = write!(h, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
    }
    h.push_str("</table>");
}

fn fairness(h: &mut String, r: &Report) {
    let f = &r.fairness;
    let _ = write!(
        h,
        "<h2>Fairness</h2><table>\
         <tr><th>ρ arrival → admission (after opening)</th><td>{}</td></tr>\
         <tr><th>ρ arrival → place in line (after opening)</th><td>{}</td></tr>\
         <tr><th>ρ arrival → drawn place (pre-opening pool, shuffled)</th><td>{}</td></tr>\
         <tr><th>adversaries' gain in place over honest buyers</th><td>{:.2} points</td></tr>\
         <tr><th>tickets per adversary ÷ per honest buyer</th><td>{}</td></tr></table>",
        opt(f.arrival_vs_admission, 3),
        opt(f.arrival_vs_position, 3),
        opt(f.pool_arrival_vs_position, 3),
        f.bots.position_gain_pct,
        opt(f.bots.ticket_ratio, 2),
    );
    h.push_str(
        "<table><tr><th>profile</th><th>buyers</th><th>let in</th><th>bought</th>\
         <th>tickets</th><th>mean wait s</th><th>requests each</th><th>places gained</th>\
         <th>tickets ÷ honest</th></tr>",
    );
    for p in &f.profiles {
        let gain = p.advantage.as_ref();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.0}</td><td>{}</td><td>{}</td></tr>",
            p.name,
            p.buyers,
            p.admitted,
            p.bought,
            p.tickets,
            opt(p.mean_wait_s, 2),
            p.requests_per_person,
            opt(gain.map(|a| a.position_gain_pct), 1),
            opt(gain.and_then(|a| a.ticket_ratio), 2),
        );
    }
    h.push_str("</table>");
    for p in &f.profiles {
        let Some(r) = &p.resale else { continue };
        let refused: Vec<String> = (r.refused.iter())
            .map(|(k, v)| format!("{k} × {v}"))
            .collect();
        let _ = write!(
            h,
            "<h3>{}: reselling</h3><table>\
             <tr><th>tickets bought to sell on</th><td>{}</td></tr>\
             <tr><th>moved to another identity</th><td>{}</td></tr>\
             <tr><th>renamed</th><td>{}</td></tr>\
             <tr><th>listed above face value</th><td>{}</td></tr>\
             <tr><th>listed at face value</th><td>{}</td></tr>\
             <tr><th>markup asked over face value</th><td>{}</td></tr>\
             <tr><th>refused</th><td>{}</td></tr></table>",
            p.name,
            r.tickets,
            r.transferred,
            r.renamed,
            r.listed_above_face,
            r.listed_at_face,
            r.markup,
            esc(&refused.join(", ")),
        );
    }
}

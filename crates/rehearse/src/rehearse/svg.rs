//! Charts as inline SVG, written by hand: line charts over time, a bar chart and a
//! scatter plot. No fonts, scripts or files from elsewhere: the report is one file.

use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 280.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;

pub const COLOURS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One line of a chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A vertical line at `x` with a label (the sell-out moment).
pub struct Marker {
    pub x: f64,
    pub label: String,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step for about five ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn label(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        format!("{:.0}k", v / 1_000.0)
    } else if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn open(id: &str, title: &str) -> String {
    format!(
        "<svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" \
         width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\" font-family=\"sans-serif\" \
         font-size=\"11\"><title>{t}</title><text x=\"{LEFT}\" y=\"18\" font-size=\"13\" \
         font-weight=\"bold\">{t}</text>",
        t = escape(title)
    )
}

/// Axes with ticks for x in [0, xmax] and y in [0, ymax]; returns the two scales.
fn axes(out: &mut String, xmax: f64, ymax: f64, x_label: &str, y_label: &str) -> (f64, f64) {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let (xs, ys) = (tick_step(xmax), tick_step(ymax));
    let (xtop, ytop) = (
        (xmax / xs).ceil().max(1.0) * xs,
        (ymax / ys).ceil().max(1.0) * ys,
    );
    let _ = write!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>"
    );
    let mut v = 0.0;
    while v <= ytop + ys / 2.0 {
        let y = TOP + ph - v / ytop * ph;
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + pw,
            LEFT - 4.0,
            y + 4.0,
            label(v)
        );
        v += ys;
    }
    let mut v = 0.0;
    while v <= xtop + xs / 2.0 {
        let x = LEFT + v / xtop * pw;
        let _ = write!(
            out,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            TOP + ph + 14.0,
            label(v)
        );
        v += xs;
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
        LEFT + pw / 2.0,
        H - 6.0,
        escape(x_label),
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        escape(y_label)
    );
    (pw / xtop, ph / ytop)
}

/// Lines over time.
pub fn lines(
    id: &str,
    title: &str,
    y_label: &str,
    series: &[Series],
    marker: Option<&Marker>,
) -> String {
    let mut out = open(id, title);
    let all = series.iter().flat_map(|s| s.points.iter());
    let (xmax, ymax) = all.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let xmax = marker.map_or(xmax, |m| xmax.max(m.x));
    let (sx, sy) = axes(&mut out, xmax, ymax, "seconds from the start", y_label);
    let base = H - BOTTOM;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = (s.points.iter())
            .map(|(x, y)| format!("{:.1},{:.1}", LEFT + x * sx, base - y * sy))
            .collect();
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>\
             <rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            path.join(" "),
            W - RIGHT + 10.0,
            TOP + 4.0 + 16.0 * i as f64,
            W - RIGHT + 24.0,
            TOP + 13.0 + 16.0 * i as f64,
            escape(&s.name)
        );
    }
    if let Some(m) = marker {
        let x = LEFT + m.x * sx;
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{base}\" stroke=\"#000\" \
             stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{}\">{}</text>",
            x + 4.0,
            TOP + 12.0,
            escape(&m.label)
        );
    }
    out.push_str("</svg>");
    out
}

/// Horizontal bars, largest first.
pub fn bars(id: &str, title: &str, items: &[(String, f64)]) -> String {
    let rows = items.len().max(1) as f64;
    let height = TOP + 10.0 + rows * 18.0;
    let mut out =
        open(id, title).replacen(&format!("0 0 {W} {H}"), &format!("0 0 {W} {height}"), 1);
    out = out.replacen(
        &format!("height=\"{H}\""),
        &format!("height=\"{height}\""),
        1,
    );
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(1.0);
    let (lx, bw) = (320.0, W - 320.0 - 80.0);
    for (i, (name, v)) in items.iter().enumerate() {
        let y = TOP + 6.0 + 18.0 * i as f64;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{lx}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"13\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx - 6.0,
            y + 10.0,
            escape(name),
            (v / max * bw).max(1.0),
            COLOURS[1],
            lx + v / max * bw + 4.0,
            y + 10.0,
            label(*v)
        );
    }
    if items.is_empty() {
        let _ = write!(out, "<text x=\"{LEFT}\" y=\"{}\">none</text>", TOP + 16.0);
    }
    out.push_str("</svg>");
    out
}

/// Points (x, y, highlighted), the highlighted ones drawn in red on top.
pub fn scatter(
    id: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(f64, f64, bool)],
) -> String {
    let mut out = open(id, title);
    let (xmax, ymax) = points
        .iter()
        .fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let (sx, sy) = axes(&mut out, xmax, ymax, x_label, y_label);
    let base = H - BOTTOM;
    for highlighted in [false, true] {
        let colour = if highlighted { COLOURS[1] } else { COLOURS[0] };
        for (x, y, _) in points.iter().filter(|p| p.2 == highlighted) {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"{colour}\" fill-opacity=\"0.6\"/>",
                LEFT + x * sx,
                base - y * sy
            );
        }
    }
    for (i, (name, colour)) in [("honest", COLOURS[0]), ("adversaries", COLOURS[1])]
        .iter()
        .enumerate()
    {
        let _ = write!(
            out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{name}</text>",
            W - RIGHT + 15.0,
            TOP + 8.0 + 16.0 * i as f64,
            W - RIGHT + 24.0,
            TOP + 12.0 + 16.0 * i as f64,
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(100.0), 20.0);
        assert_eq!(tick_step(7.0), 2.0);
        assert_eq!(tick_step(12_000.0), 2_500.0);
    }

    #[test]
    fn a_chart_is_one_svg_element_with_its_id_and_escaped_text() {
        let s = Series {
            name: "a<b".into(),
            points: vec![(0.0, 1.0), (2.0, 3.0)],
        };
        let svg = lines("chart-x", "T & T", "n", &[s], None);
        assert!(svg.starts_with("<svg id=\"chart-x\""));
        assert!(svg.ends_with("</svg>"));
        assert!(svg.contains("a&lt;b") && svg.contains("T &amp; T"));
        assert_eq!(svg.matches("<svg").count(), 1);
    }
}

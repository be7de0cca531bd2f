//! `boxoffice plan`: an on-sale sized on paper. From the crowd (fans, tickets, how
//! fast they arrive and poll) and what one node, one Redis and one PostgreSQL can take
//! (measured: a rehearsal report's figures, or the defaults recorded in
//! docs/BENCHMARKS.md), the load each part sees at the peak, how many nodes that needs,
//! the bandwidth, and when the tickets are gone.

use serde::{Deserialize, Serialize};

/// What one part of a deployment takes per second: from a rehearsal report
/// (`node_figures`), or these defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeFigures {
    /// Personal queue status calls per node (`GET /v1/queue/status`).
    pub status_per_s: f64,
    /// Joins per node (`POST /v1/events/{id}/queue`).
    pub joins_per_s: f64,
    /// Holds per node (`POST /v1/events/{id}/holds`).
    pub holds_per_s: f64,
    /// Checkouts per node (authorize, commit, capture).
    pub checkouts_per_s: f64,
    /// Round trips one Redis primary serves (the hot store's scripts and replay records).
    pub redis_ops_per_s: f64,
    /// Order commits one PostgreSQL takes (group commit).
    pub postgres_commits_per_s: f64,
    /// Bytes of one status request on the wire (headers and the queue ticket).
    pub status_request_bytes: f64,
    /// Bytes of one status answer on the wire.
    pub status_response_bytes: f64,
    /// Where the figures come from.
    pub source: String,
}

impl Default for NodeFigures {
    /// The figures docs/BENCHMARKS.md records for one node on the 2-core machine
    /// (release builds, load generator on the same box): personal status about 70,000/s
    /// ("Waiting room"), joins 20,000/s (a debug build's joins scaled by the release
    /// status ratio, rounded down), HTTP holds 45,000/s ("HTTP hold path"), checkouts
    /// 1,400/s with an instant provider ("Checkout throughput"), the Redis hold script
    /// about 30,000/s ("Redis seat arbiter"), PostgreSQL group commit about 15,000
    /// orders/s ("PostgreSQL commit path").
    fn default() -> Self {
        NodeFigures {
            status_per_s: 70_000.0,
            joins_per_s: 20_000.0,
            holds_per_s: 45_000.0,
            checkouts_per_s: 1_400.0,
            redis_ops_per_s: 30_000.0,
            postgres_commits_per_s: 15_000.0,
            status_request_bytes: 500.0,
            status_response_bytes: 350.0,
            source: "defaults (docs/BENCHMARKS.md, one 2-core node)".into(),
        }
    }
}

/// The on-sale to size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inputs {
    pub fans: f64,
    pub tickets: f64,
    /// Tickets in an average order.
    pub tickets_per_order: f64,
    /// Seconds over which the fans arrive (the join rate is fans over this window).
    pub arrival_window_s: f64,
    /// How often a waiting fan asks for their standing (`poll_after_ms`).
    pub poll_interval_s: f64,
    /// Buyers let in per second (the admission rate).
    pub admission_per_s: f64,
    /// Share of admitted buyers who pay (the rest abandon, are declined, or find
    /// nothing they want).
    pub conversion: f64,
    /// Hold attempts per admitted buyer (a seat taken under them, a retry).
    pub holds_per_buyer: f64,
    /// How busy a node may run at the peak (0.7: 30 % headroom).
    pub utilisation: f64,
    pub figures: NodeFigures,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            fans: 2_000_000.0,
            tickets: 50_000.0,
            tickets_per_order: 2.0,
            arrival_window_s: 600.0,
            poll_interval_s: 3.0,
            admission_per_s: 500.0,
            conversion: 0.8,
            holds_per_buyer: 1.25,
            utilisation: 0.7,
            figures: NodeFigures::default(),
        }
    }
}

/// The load at the peak and what it takes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub inputs: Inputs,
    pub fans_per_ticket: f64,
    pub orders: f64,
    /// Everyone in line asks every poll interval.
    pub status_per_s: f64,
    pub joins_per_s: f64,
    pub holds_per_s: f64,
    pub checkouts_per_s: f64,
    /// Seconds from opening until the last order is paid.
    pub sell_out_s: f64,
    /// Buyers let in by then; the rest of the line is told "sold out" at that moment.
    pub admitted_by_sell_out: f64,
    /// Nodes' worth of work at the peak (the sum of each call's share of one node).
    pub node_load: f64,
    /// `node_load` over the utilisation, rounded up.
    pub nodes: u64,
    /// Round trips to Redis: joins and holds three each (replay record, the script,
    /// the replay's answer), checkouts four (replay twice, pin, mark sold).
    pub redis_ops_per_s: f64,
    pub redis_primaries: u64,
    pub postgres_commits_per_s: f64,
    /// Ledger writes: per checkout the order row, its authorization, the commit and
    /// the capture.
    pub postgres_writes_per_s: f64,
    pub postgres_utilisation: f64,
    /// Status traffic into and out of the nodes, megabits per second.
    pub bandwidth_in_mbit_s: f64,
    pub bandwidth_out_mbit_s: f64,
}

const REDIS_OPS_PER_JOIN: f64 = 3.0;
const REDIS_OPS_PER_HOLD: f64 = 3.0;
const REDIS_OPS_PER_CHECKOUT: f64 = 4.0;
const LEDGER_WRITES_PER_CHECKOUT: f64 = 4.0;

/// Sizes `inputs`.
pub fn plan(inputs: Inputs) -> Plan {
    let f = &inputs.figures;
    let orders = inputs.tickets / inputs.tickets_per_order;
    let status_per_s = inputs.fans / inputs.poll_interval_s;
    let joins_per_s = inputs.fans / inputs.arrival_window_s;
    let holds_per_s = inputs.admission_per_s * inputs.holds_per_buyer;
    let checkouts_per_s = inputs.admission_per_s * inputs.conversion;
    let sell_out_s = orders / checkouts_per_s;
    let node_load = status_per_s / f.status_per_s
        + joins_per_s / f.joins_per_s
        + holds_per_s / f.holds_per_s
        + checkouts_per_s / f.checkouts_per_s;
    let redis_ops_per_s = joins_per_s * REDIS_OPS_PER_JOIN
        + holds_per_s * REDIS_OPS_PER_HOLD
        + checkouts_per_s * REDIS_OPS_PER_CHECKOUT;
    let megabits = |bytes: f64| status_per_s * bytes * 8.0 / 1e6;
    Plan {
        fans_per_ticket: inputs.fans / inputs.tickets,
        orders,
        status_per_s,
        joins_per_s,
        holds_per_s,
        checkouts_per_s,
        sell_out_s,
        admitted_by_sell_out: sell_out_s * inputs.admission_per_s,
        node_load,
        nodes: (node_load / inputs.utilisation).ceil().max(1.0) as u64,
        redis_ops_per_s,
        redis_primaries: (redis_ops_per_s / f.redis_ops_per_s).ceil().max(1.0) as u64,
        postgres_commits_per_s: checkouts_per_s,
        postgres_writes_per_s: checkouts_per_s * LEDGER_WRITES_PER_CHECKOUT,
        postgres_utilisation: checkouts_per_s / f.postgres_commits_per_s,
        bandwidth_in_mbit_s: megabits(f.status_request_bytes),
        bandwidth_out_mbit_s: megabits(f.status_response_bytes),
        inputs,
    }
}

/// The plan as a table for a terminal.
pub fn table(p: &Plan) -> String {
    let i = &p.inputs;
    let rows = [
        (
            "fans / tickets",
            format!(
                "{} / {} ({} fans per ticket)",
                n(i.fans),
                n(i.tickets),
                d1(p.fans_per_ticket)
            ),
        ),
        (
            "orders",
            format!("{} ({} tickets each)", n(p.orders), d1(i.tickets_per_order)),
        ),
        (
            "queue status requests",
            format!(
                "{}/s (everyone asks every {} s)",
                n(p.status_per_s),
                d1(i.poll_interval_s)
            ),
        ),
        (
            "joins",
            format!("{}/s (over {} s)", n(p.joins_per_s), n(i.arrival_window_s)),
        ),
        ("admission", format!("{} buyers/s", n(i.admission_per_s))),
        ("holds", format!("{}/s", n(p.holds_per_s))),
        ("checkouts (commits)", format!("{}/s", n(p.checkouts_per_s))),
        (
            "sold out after",
            format!(
                "{} s ({} min), {} buyers admitted",
                d1(p.sell_out_s),
                d1(p.sell_out_s / 60.0),
                n(p.admitted_by_sell_out)
            ),
        ),
        (
            "node load at the peak",
            format!("{} nodes' worth", d2(p.node_load)),
        ),
        (
            "nodes needed",
            format!("{} (at {} % busy)", p.nodes, n(i.utilisation * 100.0)),
        ),
        (
            "Redis",
            format!(
                "{} ops/s, {} primary(ies)",
                n(p.redis_ops_per_s),
                p.redis_primaries
            ),
        ),
        (
            "PostgreSQL",
            format!(
                "{} commits/s, {} writes/s, {} % of one server",
                n(p.postgres_commits_per_s),
                n(p.postgres_writes_per_s),
                d1(p.postgres_utilisation * 100.0)
            ),
        ),
        (
            "bandwidth (status)",
            format!(
                "{} Mbit/s in, {} Mbit/s out",
                n(p.bandwidth_in_mbit_s),
                n(p.bandwidth_out_mbit_s)
            ),
        ),
        ("per-node figures", i.figures.source.clone()),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// A number with thousands separators, rounded to a whole.
pub fn n(x: f64) -> String {
    let whole = x.round() as i64;
    let digits = whole.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if whole < 0 { format!("-{out}") } else { out }
}

fn d1(x: f64) -> String {
    format!("{x:.1}")
}

fn d2(x: f64) -> String {
    format!("{x:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, within: f64) {
        assert!(
            (got - want).abs() <= within,
            "{got} is not {want} ± {within}"
        );
    }

    /// 2,000,000 fans for 50,000 seats, worked by hand:
    ///
    /// - 50,000 tickets at 2 per order = 25,000 orders; 2,000,000 / 50,000 = 40 fans
    ///   per ticket.
    /// - Everyone in line asks every 3 s: 2,000,000 / 3 = 666,667 status requests/s.
    /// - They arrive over 600 s: 2,000,000 / 600 = 3,333 joins/s.
    /// - 1,000 admitted per second, 1.25 hold attempts each: 1,250 holds/s; 80 % pay:
    ///   800 checkouts/s.
    /// - 25,000 orders / 800 per s = 31.25 s to sell out; 31.25 × 1,000 = 31,250 buyers
    ///   admitted by then, and 1,968,750 are told "sold out" at once.
    /// - One node's share: 666,667 / 70,000 = 9.524 (status) + 3,333 / 20,000 = 0.167
    ///   (joins) + 1,250 / 45,000 = 0.028 (holds) + 800 / 1,400 = 0.571 (checkouts)
    ///   = 10.290 nodes' worth; at 70 % busy 10.290 / 0.7 = 14.70, so 15 nodes.
    /// - Redis: 3,333 × 3 + 1,250 × 3 + 800 × 4 = 10,000 + 3,750 + 3,200 = 16,950
    ///   ops/s, one primary (30,000 each).
    /// - PostgreSQL: 800 commits/s, 4 writes each = 3,200 writes/s; 800 / 15,000 =
    ///   5.3 % of one server.
    /// - Bandwidth: 666,667 × 500 B × 8 = 2,667 Mbit/s in; × 350 B × 8 = 1,867 Mbit/s
    ///   out.
    #[test]
    fn two_million_fans_for_fifty_thousand_seats_match_the_hand_worked_example() {
        let p = plan(Inputs {
            admission_per_s: 1_000.0,
            ..Inputs::default()
        });
        close(p.fans_per_ticket, 40.0, 0.0);
        close(p.orders, 25_000.0, 0.0);
        close(p.status_per_s, 666_667.0, 0.5);
        close(p.joins_per_s, 3_333.0, 0.5);
        close(p.holds_per_s, 1_250.0, 0.0);
        close(p.checkouts_per_s, 800.0, 0.0);
        close(p.sell_out_s, 31.25, 0.005);
        close(p.admitted_by_sell_out, 31_250.0, 0.5);
        close(p.node_load, 10.290, 0.0005);
        assert_eq!(p.nodes, 15);
        close(p.redis_ops_per_s, 16_950.0, 0.5);
        assert_eq!(p.redis_primaries, 1);
        close(p.postgres_writes_per_s, 3_200.0, 0.0);
        close(p.postgres_utilisation * 100.0, 5.3, 0.05);
        close(p.bandwidth_in_mbit_s, 2_667.0, 0.5);
        close(p.bandwidth_out_mbit_s, 1_867.0, 0.5);
        let t = table(&p);
        assert!(t.contains("666,667/s"), "{t}");
        assert!(
            t.contains("nodes needed") && t.contains("15 (at 70 % busy)"),
            "{t}"
        );
    }

    #[test]
    fn the_bookstore_estimate_comes_out_as_published() {
        // One million fans, 500 buyers/s, one ticket each, all pay: 50,000 / 500 =
        // 100 s, about 1.7 minutes.
        let p = plan(Inputs {
            fans: 1_000_000.0,
            tickets_per_order: 1.0,
            admission_per_s: 500.0,
            conversion: 1.0,
            ..Inputs::default()
        });
        close(p.sell_out_s / 60.0, 1.7, 0.05);
        close(p.fans_per_ticket, 20.0, 0.0);
    }

    #[test]
    fn numbers_are_printed_with_thousands_separators() {
        assert_eq!(n(666_666.7), "666,667");
        assert_eq!(n(999.4), "999");
        assert_eq!(n(1_000.0), "1,000");
        assert_eq!(n(-12_345.0), "-12,345");
    }
}

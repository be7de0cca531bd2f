//! The case every suite has (STYLE habit 8): K tickets, N ≫ K scans racing for them
//! from two gates, exactly K admits; every other scan names the admitting gate.

use std::collections::HashMap;

use boxoffice_domain::ticket::TicketId;
use boxoffice_engine::ports::{CheckIn, ScanAttempt};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{DOORS, TicketStores, confirmed_order, gate, rows_of};

const TICKETS: u32 = 50;
/// Scans of each ticket, alternating between the two gates.
const SCANS_PER_TICKET: usize = 10;

pub async fn two_gates_racing_over_k_tickets_admit_each_exactly_once(s: TicketStores) {
    let (e, o) = confirmed_order(&s, TICKETS).await;
    let rows = rows_of(&o);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let gates = [gate(&s, &e, "East").await, gate(&s, &e, "West").await];
    let racers: FuturesUnordered<_> = (0..SCANS_PER_TICKET)
        .flat_map(|n| rows.iter().map(move |r| (n, r.id)))
        .map(|(n, ticket)| {
            let tickets = s.tickets.clone();
            let scan = ScanAttempt {
                ticket,
                version: 1,
                gate: gates[n % 2].id,
                at: DOORS,
                offline: false,
            };
            tokio::spawn(async move { (ticket, tickets.check_in(&scan).await) })
        })
        .collect();
    let results: Vec<_> = racers.collect().await;
    let mut admitted: HashMap<TicketId, usize> = HashMap::new();
    let mut already: HashMap<TicketId, Vec<boxoffice_domain::GateId>> = HashMap::new();
    for joined in results {
        let (ticket, outcome) = joined.expect("the scan task ran");
        match outcome.expect("the store answered") {
            CheckIn::Admitted { replaced: None } => *admitted.entry(ticket).or_default() += 1,
            CheckIn::AlreadyScanned(first) => already.entry(ticket).or_default().push(first.gate),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert_eq!(admitted.len(), TICKETS as usize, "every ticket admitted");
    assert!(admitted.values().all(|&n| n == 1), "exactly once each");
    for r in &rows {
        let facts = s.tickets.ticket(r.id).await.unwrap().unwrap();
        let first = facts.checked_in.expect("a check-in").gate;
        let refused = already.get(&r.id).cloned().unwrap_or_default();
        assert_eq!(refused.len(), SCANS_PER_TICKET - 1);
        assert!(
            refused.iter().all(|g| *g == first),
            "every refusal names the admitting gate"
        );
    }
}

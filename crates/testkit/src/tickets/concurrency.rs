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

/// Orders of one ticket each.
const ORDERS: u32 = 24;

/// A buyer's refund (`revoke_unused_sale`) and a scan of the order's ticket, started
/// together for each of K orders: exactly one of the two wins each. A scan that lands
/// first admits and the refund is refused (`Used`, the order still confirmed); a refund
/// that lands first claims the order and the scan is refused (`NotPaid`), the ticket
/// never checked in. Never both: a buyer who entered is never refunded by their own
/// return, and a refunded ticket never opens the door.
pub async fn a_scan_and_a_buyers_refund_racing_over_k_orders_one_wins_each(s: TicketStores) {
    let e = crate::ledger::fixtures::event(&s.ledger, ORDERS, 1).await;
    let mut orders = Vec::new();
    for seat in 0..ORDERS as usize {
        let buyer = boxoffice_domain::BuyerId::random();
        let o = crate::ledger::fixtures::captured(&s.ledger, &e, buyer, &[seat], 1).await;
        s.tickets.insert_tickets(&rows_of(&o)).await.unwrap();
        orders.push(o);
    }
    let door = gate(&s, &e, "Main").await;
    // Every other order's refund is started first, so both orders of arrival are tried.
    let racers: FuturesUnordered<_> = orders
        .iter()
        .enumerate()
        .flat_map(|(n, o)| {
            let ticket = rows_of(o)[0].id;
            let (tickets, ledger, id) = (s.tickets.clone(), s.ledger.clone(), o.id);
            let scan = ScanAttempt {
                ticket,
                version: 1,
                gate: door.id,
                at: DOORS,
                offline: false,
            };
            let scan = async move {
                let outcome = tickets.check_in(&scan).await.expect("the store answered");
                (id, Some(outcome), None)
            };
            let refund = async move {
                let claimed = ledger.revoke_unused_sale(id, DOORS).await;
                (id, None, Some(claimed))
            };
            if n % 2 == 0 {
                let scanned = tokio::spawn(scan);
                [scanned, tokio::spawn(refund)]
            } else {
                let refunded = tokio::spawn(refund);
                [tokio::spawn(scan), refunded]
            }
        })
        .collect();
    let mut admitted = HashMap::new();
    let mut refunded = HashMap::new();
    for joined in racers.collect::<Vec<_>>().await {
        match joined.expect("the racer ran") {
            (id, Some(outcome), None) => {
                let won = match outcome {
                    CheckIn::Admitted { replaced: None } => true,
                    CheckIn::NotPaid(_) => false,
                    other => panic!("unexpected scan outcome {other:?}"),
                };
                admitted.insert(id, won);
            }
            (id, None, Some(claimed)) => {
                let won = match claimed {
                    Ok(order) => {
                        assert_eq!(order.state, boxoffice_domain::OrderState::Refunding);
                        true
                    }
                    Err(boxoffice_engine::ports::LedgerError::Used) => false,
                    Err(other) => panic!("unexpected refund outcome {other:?}"),
                };
                refunded.insert(id, won);
            }
            other => panic!("a racer answered {other:?}"),
        }
    }
    for o in &orders {
        let (scan_won, refund_won) = (admitted[&o.id], refunded[&o.id]);
        assert!(
            scan_won != refund_won,
            "order {}: scan admitted {scan_won}, refund claimed {refund_won}",
            o.id
        );
        let facts = s.tickets.ticket(rows_of(o)[0].id).await.unwrap().unwrap();
        assert_eq!(facts.checked_in.is_some(), scan_won, "the ticket's record");
        let state = s.ledger.order(o.id).await.unwrap().unwrap().state;
        let expected = if refund_won {
            boxoffice_domain::OrderState::Refunding
        } else {
            boxoffice_domain::OrderState::Confirmed
        };
        assert_eq!(state, expected, "the order's state");
    }
}

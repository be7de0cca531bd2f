//! Cases: attendee names. Names given with the order are on the tickets the ledger
//! writes at capture; a rename issues the next version (the old barcode is refused at
//! the door); a change of an existing name counts against the limit; every refusal
//! writes nothing; and of renames racing, exactly one wins per version and the limit
//! holds (STYLE habit 8: K tickets, N ≫ K renames, exactly K winners).

use std::collections::HashMap;

use boxoffice_domain::ticket::{AttendeeName, TicketId};
use boxoffice_domain::{BuyerId, Event, Millis, OrderEvent};
use boxoffice_engine::ports::{
    CheckIn, CommitOutcome, InsertOrder, Order, Rename, RenameRefusal, ScanAttempt, TicketRow,
};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{DOORS, TicketStores, confirmed_order, gate, rows_of};
use crate::ledger::fixtures::{T0, commit_of, event, order};

/// When the cases rename: after the fixtures' order moves, before the doors.
const NOW: Millis = Millis(T0.0 + 60_000);

fn name(s: &str) -> AttendeeName {
    AttendeeName::parse(s).expect("a valid name")
}

fn rename_of(row: &TicketRow, to: &str, counted: Option<u32>) -> Rename {
    Rename {
        ticket: row.id,
        by: row.holder,
        version: row.version,
        attendee: name(to),
        counted,
        now: NOW,
    }
}

/// A confirmed order of `seats` seats with its tickets written.
async fn sold(s: &TicketStores, seats: u32) -> (Event, Order, Vec<TicketRow>) {
    let (e, o) = confirmed_order(s, seats).await;
    let rows = rows_of(&o);
    s.tickets
        .insert_tickets(&rows)
        .await
        .expect("write the tickets");
    (e, o, rows)
}

async fn current(s: &TicketStores, id: TicketId) -> (TicketRow, u32) {
    let facts = s.tickets.ticket(id).await.unwrap().expect("the ticket");
    (facts.ticket, facts.name_changes)
}

pub async fn names_given_with_the_order_are_on_the_tickets_written_at_capture(s: TicketStores) {
    let e = event(&s.ledger, 2, 2).await;
    let mut o = order(&e, BuyerId::random(), &[0, 1], T0);
    o.seats[0].attendee = Some(name("Ada Lovelace"));
    o.seats[1].attendee = Some(name("Łukasz Żółć"));
    assert_eq!(
        s.ledger.insert_order(&o).await.unwrap(),
        InsertOrder::Inserted
    );
    let read = s.ledger.order(o.id).await.unwrap().expect("the order");
    assert_eq!(read.seats, o.seats, "the names are kept with the order");
    let auth = format!("auth_{}", o.id);
    (s.ledger)
        .apply(o.id, OrderEvent::Authorized, Some(&auth), T0.plus_secs(1))
        .await
        .unwrap();
    let outcome = s.ledger.commit(&commit_of(&o, 2)).await.unwrap();
    assert_eq!(outcome, CommitOutcome::Committed);
    (s.ledger)
        .apply(o.id, OrderEvent::Captured, None, T0.plus_secs(3))
        .await
        .unwrap();
    let mut tickets = s.tickets.tickets_of_order(o.id).await.unwrap();
    tickets.sort_by(|a, b| a.seat.as_str().cmp(b.seat.as_str()));
    let names: Vec<_> = (tickets.iter())
        .map(|t| t.attendee.as_ref().map(AttendeeName::as_str))
        .collect();
    assert_eq!(names, vec![Some("Ada Lovelace"), Some("Łukasz Żółć")]);
    assert!(tickets.iter().all(|t| t.version == 1));
}

pub async fn a_rename_issues_the_next_version_and_counts_only_changes(s: TicketStores) {
    let (e, _, rows) = sold(&s, 1).await;
    let first = &rows[0];
    // Naming an unnamed ticket is not a change.
    let named = s
        .tickets
        .rename_ticket(&rename_of(first, "Ada", None))
        .await;
    let named = named.unwrap().expect("named");
    assert_eq!((named.version, named.issued_at), (2, NOW));
    assert_eq!(named.attendee, Some(name("Ada")));
    assert_eq!(current(&s, first.id).await.1, 0);
    // Changing it is, up to the limit.
    let changed = s
        .tickets
        .rename_ticket(&rename_of(&named, "Grace Hopper", Some(1)))
        .await;
    let changed = changed.unwrap().expect("changed");
    assert_eq!(changed.version, 3);
    assert_eq!(current(&s, first.id).await, (changed.clone(), 1));
    let over = s
        .tickets
        .rename_ticket(&rename_of(&changed, "Mallory", Some(1)))
        .await;
    assert_eq!(over.unwrap(), Err(RenameRefusal::LimitReached { limit: 1 }));
    assert_eq!(
        current(&s, first.id).await,
        (changed.clone(), 1),
        "unchanged"
    );
    // The old versions are refused at the door; the current one admits.
    let g = gate(&s, &e, "Main").await;
    let mut scan = ScanAttempt {
        ticket: first.id,
        version: 2,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    let old = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(old, CheckIn::OldVersion { current: 3 });
    scan.version = 3;
    let new = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(new, CheckIn::Admitted { replaced: None });
    // A scanned ticket keeps its name.
    let late = s
        .tickets
        .rename_ticket(&rename_of(&changed, "Mallory", Some(5)))
        .await;
    assert_eq!(late.unwrap(), Err(RenameRefusal::CheckedIn));
}

pub async fn a_refused_rename_writes_nothing(s: TicketStores) {
    let (_, o, rows) = sold(&s, 1).await;
    let row = &rows[0];
    let mut stranger = rename_of(row, "Mallory", None);
    stranger.by = BuyerId::random();
    let refused = s.tickets.rename_ticket(&stranger).await.unwrap();
    assert_eq!(refused, Err(RenameRefusal::NotFound), "only its holder");
    let mut stale = rename_of(row, "Mallory", None);
    stale.version = 7;
    let refused = s.tickets.rename_ticket(&stale).await.unwrap();
    assert_eq!(refused, Err(RenameRefusal::Superseded));
    // A counted change of a ticket that has no name was decided on a stale read.
    let refused = s
        .tickets
        .rename_ticket(&rename_of(row, "Mallory", Some(3)))
        .await;
    assert_eq!(refused.unwrap(), Err(RenameRefusal::Superseded));
    assert_eq!(current(&s, row.id).await, (row.clone(), 0), "unchanged");
    // An order no longer paid for keeps its tickets as they are.
    s.ledger.revoke_sale(o.id, NOW).await.expect("refund");
    let refused = s
        .tickets
        .rename_ticket(&rename_of(row, "Ada", None))
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(RenameRefusal::NotPaid(_))),
        "{refused:?}"
    );
    assert_eq!(current(&s, row.id).await, (row.clone(), 0), "unchanged");
}

const TICKETS: u32 = 20;
/// Renames of each ticket racing at once.
const RACERS: usize = 8;
/// Changes each ticket may have.
const LIMIT: u32 = 2;

/// `RACERS` renames of every ticket at its current version, all at once; the winners
/// by ticket.
async fn race_round(
    s: &TicketStores,
    rows: &[TicketRow],
    counted: Option<u32>,
) -> HashMap<TicketId, Vec<TicketRow>> {
    let racers: FuturesUnordered<_> = (0..RACERS)
        .flat_map(|n| rows.iter().map(move |r| (n, r.clone())))
        .map(|(n, row)| {
            let tickets = s.tickets.clone();
            let who = ["Ada", "Bea", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"][n % 8];
            let rename = rename_of(&row, who, counted);
            tokio::spawn(async move { tickets.rename_ticket(&rename).await })
        })
        .collect();
    let mut winners: HashMap<TicketId, Vec<TicketRow>> = HashMap::new();
    for joined in racers.collect::<Vec<_>>().await {
        match joined
            .expect("the rename task ran")
            .expect("the store answered")
        {
            Ok(row) => winners.entry(row.id).or_default().push(row),
            Err(RenameRefusal::Superseded | RenameRefusal::LimitReached { .. }) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    winners
}

pub async fn n_renames_racing_over_k_tickets_one_wins_per_version_within_the_limit(
    s: TicketStores,
) {
    let (_, _, mut rows) = sold(&s, TICKETS).await;
    // The first naming, then changes until the limit, then rounds that must all lose.
    for round in 0..=LIMIT + 1 {
        let counted = (round > 0).then_some(LIMIT);
        let winners = race_round(&s, &rows, counted).await;
        let expect = if round <= LIMIT { TICKETS as usize } else { 0 };
        assert_eq!(
            winners.len(),
            expect,
            "round {round}: one winner per ticket"
        );
        assert!(winners.values().all(|w| w.len() == 1), "round {round}");
        for row in &mut rows {
            let (now, changes) = current(&s, row.id).await;
            let want = row.version + u32::from(round <= LIMIT);
            assert_eq!(now.version, want, "round {round}: one version more");
            assert_eq!(changes, round.min(LIMIT), "round {round}: the count holds");
            if let Some(w) = winners.get(&row.id) {
                assert_eq!(w[0], now, "the winner's name is the one kept");
            }
            *row = now;
        }
    }
}

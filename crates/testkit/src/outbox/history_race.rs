//! History lines of one order written at once by writers that each lock only a ticket
//! of it (renames of its tickets), and beside them a line that moves the order's state
//! (its sale revoked), which locks the order itself: every line goes out under a
//! sequence of its own, 1, 2, 3, … with none twice, as the history lists them.

use std::collections::HashMap;

use boxoffice_domain::Millis;
use boxoffice_domain::ticket::AttendeeName;
use boxoffice_engine::ports::Rename;
use futures::stream::{FuturesUnordered, StreamExt};

use super::{OutboxUnderTest, claim_of, webhook};
use crate::tickets::{TicketStores, confirmed_order, rows_of};

const TICKETS: u32 = 16;

pub async fn history_lines_written_at_once_go_out_with_sequences_of_their_own(t: OutboxUnderTest) {
    t.outbox.add_sink(&webhook("we_lines")).await.unwrap();
    let ts = TicketStores {
        ledger: t.ledger.clone(),
        tickets: t.tickets.clone(),
    };
    let (_, order) = confirmed_order(&ts, TICKETS).await;
    let rows = rows_of(&order);
    ts.tickets.insert_tickets(&rows).await.unwrap();
    let mut renames: FuturesUnordered<_> = (rows.iter().enumerate())
        .map(|(i, row)| {
            let rename = Rename {
                ticket: row.id,
                by: row.holder,
                version: row.version,
                attendee: AttendeeName::parse(&format!("Guest {}", char::from(b'A' + i as u8)))
                    .expect("a name"),
                counted: None,
                now: Millis(row.issued_at.0 + 1_000),
            };
            let tickets = ts.tickets.clone();
            tokio::spawn(async move { tickets.rename_ticket(&rename).await })
        })
        .collect();
    // Once the first rename is in, the sale is revoked among the others: a rename that
    // comes after it may be refused, and writes nothing then.
    let first = renames.next().await.expect("a rename");
    let mut renamed = usize::from(first.expect("the task ran").unwrap().is_ok());
    let ledger = t.ledger.clone();
    let revoke_at = Millis(rows[0].issued_at.0 + 1_000);
    let revoked = tokio::spawn(async move { ledger.revoke_sale(order.id, revoke_at).await });
    while let Some(done) = renames.next().await {
        renamed += usize::from(done.expect("the task ran").unwrap().is_ok());
    }
    let revoked = revoked.await.expect("the task ran").expect("revoked");
    assert_ne!(revoked.state, order.state, "the revoke moved the order");
    let history = t.outbox.history(order.id).await.unwrap();
    // Every line out: the claims hand an order's next line only once the one before
    // it was delivered.
    let mut sequences: HashMap<u32, usize> = HashMap::new();
    let later = Millis(rows[0].issued_at.0 + 60_000);
    for _ in 0..history.len() * 2 {
        let batch = t.outbox.claim(&claim_of("relay", later, 50)).await.unwrap();
        if batch.is_empty() {
            break;
        }
        for d in batch {
            if d.event.order == order.id {
                *sequences.entry(d.event.sequence).or_default() += 1;
            }
            t.outbox.delivered(&d.sink, d.event.row).await.unwrap();
        }
    }
    let twice: Vec<_> = sequences.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sequences sent more than once: {twice:?}");
    let mut sent: Vec<u32> = sequences.into_keys().collect();
    sent.sort_unstable();
    let listed: Vec<u32> = history.iter().map(|l| l.sequence).collect();
    assert_eq!(
        sent, listed,
        "every line out once, numbered as the history lists it"
    );
    assert_eq!(
        listed.len(),
        4 + renamed + 1,
        "{renamed} renames and the revoke"
    );
}

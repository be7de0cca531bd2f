//! The `Outbox` conformance suite (the relay's side of the ledger). Every backend runs:
//!
//! ```ignore
//! boxoffice_testkit::outbox_conformance!(async { OutboxUnderTest { ledger, outbox, tickets } });
//! ```
//!
//! Each case needs a ledger of its own (a fresh file or database): a sink receives every
//! event written after it was added, whoever wrote it.

mod claims;
mod history_race;
mod race;

use std::sync::Arc;

use boxoffice_domain::{Millis, OrderEvent};
use boxoffice_engine::ports::{
    ClaimDeliveries, CommitOutcome, Delivery, Ledger, Order, Outbox, Sink, SinkKind, Tickets,
};

pub use claims::*;
pub use history_race::*;
pub use race::*;

use crate::ledger::fixtures::{T0, authorized, commit_of, event};

/// One ledger seen through both ports.
pub struct OutboxUnderTest {
    pub ledger: Arc<dyn Ledger>,
    pub outbox: Arc<dyn Outbox>,
    /// The after-sale record beside the ledger, whose writes add history lines too.
    pub tickets: Arc<dyn Tickets>,
}

/// Expands into `mod outbox { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! outbox_conformance {
    ($make:expr) => {
        mod outbox {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(outbox, $make;
                every_order_move_becomes_an_event_with_its_sequence_and_document,
                the_history_lists_every_line_oldest_first,
                a_later_event_waits_until_the_earlier_one_reached_the_sink,
                sinks_wait_for_each_other_never,
                a_lapsed_lease_is_claimed_again_and_only_its_holder_can_fail_it,
                released_claims_of_a_dead_incarnation_are_claimed_at_once,
                a_dead_letter_stops_blocking_its_order_and_can_be_replayed,
                a_sink_gets_what_was_written_after_it_was_added_until_it_is_removed,
                only_relays_that_can_reach_nats_claim_its_deliveries,
                n_relays_racing_for_k_deliveries_each_claim_one_exactly_once,
                history_lines_written_at_once_go_out_with_sequences_of_their_own,
            );
        }
    };
}

pub(crate) const LEASE_MS: i64 = 30_000;

pub(crate) fn webhook(id: &str) -> Sink {
    Sink {
        id: id.into(),
        kind: SinkKind::Webhook {
            url: format!("http://127.0.0.1:9/{id}"),
            secret: format!("whsec_{id}"),
        },
        created_at: T0,
    }
}

pub(crate) fn claim_of(owner: &str, now: Millis, limit: usize) -> ClaimDeliveries<'_> {
    ClaimDeliveries {
        owner,
        now,
        lease_until: Millis(now.0 + LEASE_MS),
        limit,
        nats: true,
    }
}

/// An authorized order (two history lines: created, authorized) of a new event.
pub(crate) async fn authorized_order(ledger: &Arc<dyn Ledger>) -> Order {
    let e = event(ledger, 4, 4).await;
    authorized(ledger, &e, boxoffice_domain::BuyerId::random(), &[0]).await
}

/// An order taken through created, authorized, committed and captured.
pub(crate) async fn confirmed_order(ledger: &Arc<dyn Ledger>) -> Order {
    let o = authorized_order(ledger).await;
    let committed = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    ledger
        .apply(o.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(3))
        .await
        .unwrap()
}

/// Claims and acknowledges until nothing is due; returns what was delivered, in order.
pub(crate) async fn drain(outbox: &Arc<dyn Outbox>, now: Millis) -> Vec<Delivery> {
    let mut out = Vec::new();
    for _ in 0..1_000 {
        let batch = outbox.claim(&claim_of("drain", now, 50)).await.unwrap();
        if batch.is_empty() {
            return out;
        }
        for d in batch {
            outbox.delivered(&d.sink, d.event.row).await.unwrap();
            out.push(d);
        }
    }
    panic!("the outbox never ran dry");
}

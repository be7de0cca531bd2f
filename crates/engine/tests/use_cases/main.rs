//! The engine's use cases on the in-process stores (the in-memory hot store and queue,
//! the SQLite ledger, the fake provider) with a manual clock: a buyer joins the line and
//! is admitted, holds seats, releases them or lets them expire, and checks out with a
//! card that is approved, declined or asks for 3-D Secure.

#[path = "../common/mod.rs"]
mod common;

mod adaptive;
mod admission_pace;
mod checkout;
mod exchange;
mod holds;
mod join_settings;
mod line_restore;
mod queue;

use boxoffice_domain::EventId;
use boxoffice_engine::ports::HoldView;
use boxoffice_engine::waiting::WaitingError;
use boxoffice_engine::{Admitted, Engine, HoldInput, Identity, JoinOutcome, Joiner, SeatSelection};

/// A new buyer, signed up through the engine: their verified identity.
async fn buyer(engine: &Engine) -> Identity {
    let (_, token) = engine.create_buyer().await.expect("a buyer signs up");
    engine.identify(&token).await.expect("the buyer's token")
}

/// `who` joins `event`'s line (or its pool), as a client sending no proof, no
/// proof-of-work and no human check.
async fn try_join(
    engine: &Engine,
    event: EventId,
    who: &Identity,
) -> Result<JoinOutcome, WaitingError> {
    let joiner = Joiner {
        who,
        ip: None,
        pow: None,
        proof: None,
        human_token: None,
    };
    engine.join_queue(event, joiner).await
}

/// Joins `event`'s line as `who`; returns the queue ticket.
async fn join(engine: &Engine, event: EventId, who: &Identity) -> String {
    let joined = try_join(engine, event, who).await.expect("the join");
    joined.queue_ticket
}

/// A new buyer, let in by an admission batch: what their admission token grants.
async fn admitted(engine: &Engine, event: EventId) -> Admitted {
    let who = buyer(engine).await;
    let ticket = join(engine, event, &who).await;
    engine
        .admit_batch(event)
        .await
        .expect("a batch is admitted");
    let status = engine.queue_status(&ticket).await.expect("the status");
    let token = status.admission_token.expect("admitted by the batch");
    engine.admitted(event, &token).expect("the admission token")
}

/// `admitted` asks for the named seats through the hold use case.
async fn hold_named(
    engine: &Engine,
    admitted: &Admitted,
    labels: &[&str],
) -> Result<HoldView, boxoffice_engine::EngineError> {
    let selection = SeatSelection::Named(labels.iter().map(|l| l.to_string()).collect());
    engine.hold(admitted, &HoldInput { selection }).await
}

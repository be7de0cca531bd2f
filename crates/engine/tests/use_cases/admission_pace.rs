//! The loop's admission keeps the event's rate at low rates: whole buyers a batch, and
//! the part of a window not spent on one kept for the next.

use boxoffice_domain::Millis;
use boxoffice_engine::EngineConfig;
use boxoffice_payment_fake::FakeGatewayConfig;

use super::{buyer, try_join};
use crate::common::*;

/// Serving up to where, on `event`'s line as the queue store has it.
async fn served(n: &Node, event: boxoffice_domain::EventId) -> u64 {
    let state = n.engine.ports().queue.state(event).await.expect("the line");
    state.serving_up_to
}

/// Each batch was the rate times the time since the line last moved, rounded up to a
/// whole buyer; ticks come a little after each interval, so at 1 a second and a 2 s
/// interval every tick let in 3 (a window of 2,013 ms) where 2 were due: half as many
/// again as the rate. And a rate below one buyer an interval let one in every tick.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_admits_the_rate_and_no_more_at_low_rates() {
    for (rate, interval_ms, late_ms) in [(1, 2_000, 13), (8, 50, 3), (3, 2_000, 7)] {
        let d = Durable::new(FakeGatewayConfig::default());
        let config = EngineConfig {
            admission_interval_ms: interval_ms,
            ..EngineConfig::default()
        };
        let n = node(&d, config);
        let event = scheduled_event_with(&n.engine, 30, 4, |sale| {
            sale.admission_rate_per_s = rate;
        })
        .await;
        n.engine.open_sale(event).await.expect("opened");
        for _ in 0..250 {
            try_join(&n.engine, event, &buyer(&n.engine).await)
                .await
                .expect("joined");
        }
        let start = d.clock.now();
        // Ticks a little late each interval, for 20 s of the clock.
        let tick = interval_ms as i64 + late_ms;
        let ticks = 20_000 / tick;
        for _ in 0..ticks {
            d.clock.set(Millis(d.clock.now().0 + tick));
            n.engine.admission_step().await.expect("ticked");
        }
        let elapsed_ms = (d.clock.now().0 - start.0) as u64;
        let due = u64::from(rate) * elapsed_ms / 1000;
        let got = served(&n, event).await;
        // The first batch counts a whole interval (or one buyer's worth) from opening.
        assert!(
            got <= due + u64::from(rate).max(1) && got + u64::from(rate) + 1 >= due,
            "rate {rate} over {elapsed_ms} ms, ticks of {tick} ms: {got} admitted, {due} due"
        );
    }
}

//! How much memory a loaded 50,000-seat event costs the arbiter, measured by a counting
//! global allocator (this file is its own test binary, so nothing else allocates in
//! between). `cargo test -p boxoffice-store-memory --test memory -- --nocapture` prints
//! the figures; the assertions only guard against a large regression.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::task::{Context, Poll, Waker};

use boxoffice_domain::catalog::{RowSpec, SectionSpec};
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis};
use boxoffice_engine::ports::{HoldRequest, SeatArbiter, SeatChoice};
use boxoffice_store_memory::InMemoryArbiter;
use boxoffice_testkit::arbiter::{layout_of, small_spec};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn now<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory arbiter must not wait"),
    }
}

#[test]
fn a_loaded_50000_seat_event_fits_in_a_few_megabytes() {
    let mut spec = small_spec();
    let rows: Vec<RowSpec> = (0..40)
        .map(|r| RowSpec {
            label: format!("R{r}"),
            seats: 25,
            tier: None,
        })
        .collect();
    spec.sections = (0..50)
        .map(|s| SectionSpec {
            key: format!("S{s}"),
            name: format!("S{s}"),
            tier: "B".into(),
            quality: s,
            rows: rows.clone(),
            ga_capacity: None,
        })
        .collect();
    let layout = layout_of(&spec, EventId(1));
    assert_eq!(layout.seats.len(), 50_000);
    let arb = InMemoryArbiter::new();

    let before = LIVE.load(Ordering::Relaxed);
    now(arb.load(&layout, &[])).expect("load");
    let loaded = LIVE.load(Ordering::Relaxed) - before;

    // 20,000 live holds of 2 seats: 40,000 of the 50,000 seats held.
    for i in 0..20_000u32 {
        let req = HoldRequest {
            hold: HoldId::random(layout.event),
            buyer: BuyerId::random(),
            choice: SeatChoice::Named(vec![2 * i, 2 * i + 1]),
            expires_at: Millis(1_000 + i64::from(i)),
            key: None,
        };
        drop(now(arb.hold(&req, Millis(0))).expect("hold"));
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "arbiter memory, 50,000-seat event: loaded {loaded} bytes; with 20,000 live 2-seat holds {held} bytes"
    );
    assert!(
        loaded < 4 << 20,
        "a loaded event should stay under 4 MiB, was {loaded}"
    );
    assert!(
        held < 16 << 20,
        "20,000 holds should stay under 16 MiB, was {held}"
    );
}

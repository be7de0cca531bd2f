//! The exchange with the server killed (kill -9) twice mid-run: K tickets listed, N ≫ K
//! buyers taking them through a real `boxoffice serve` whose stand-in provider is slow
//! enough that swaps are caught between their steps. Each kill is checked to have
//! landed with swaps in flight; buyers whose answer died with the server try again
//! after each restart. In the end exactly K tickets were resold, every swap finished or
//! was undone, each seller was refunded once in the provider's own book, every charge
//! there matches its swap, the new barcodes admit, and the audit is clean.
//!
//! The sellers' sale is written straight into the data directory (ledger and provider
//! book, as a checkout writes them) so set-up takes seconds; what is under test, the
//! swaps, runs in the server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::exchange::{ExchangeRules, ListingState, SwapState};
use boxoffice_domain::{BuyerId, EventId, ListingId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{
    Exchange, Listing, PaymentGateway, ProviderState, Reserve, Swap, Tickets,
};
use boxoffice_store_sqlite::SqliteLedger;
use boxoffice_testkit::harness::http::{admission_token, call, client};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::process::Child;

use crate::common::books::{ledger, provider_book};
use crate::common::on_disk::{self, clean_audit, open_event, sell, start, wall_clock};
use crate::common::spec;

const OPERATOR: &str = "exchange-crash-operator-key-01";
const LISTED: usize = 100;
const BUYERS: usize = 1_000;
const FACE: i64 = 5_000;
/// 10 % kept from each seller.
const PAYOUT: i64 = FACE - FACE / 10;

/// The shape (N ≫ K, two kills) at a size a debug build on a loaded 2-core
/// machine runs in well under a minute.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 600)]
async fn k_listings_and_n_buyers_make_exactly_k_swaps_across_two_kills() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (event, listings) = seed(dir.path()).await;

    let (server, base) = start(dir.path(), &config).await;
    let c = client();
    let buyers = admitted(&c, &base, event).await;
    let mut run = Run {
        c,
        event,
        listings,
        buyers,
        pending: (0..BUYERS).collect(),
        told: HashMap::new(),
    };
    let server = run
        .race_then_kill(server, &base, dir.path(), LISTED / 4)
        .await;
    assert_swaps_in_flight(dir.path(), "first").await;
    drop(server);

    let (server, base) = start(dir.path(), &config).await;
    let server = run
        .race_then_kill(server, &base, dir.path(), LISTED * 2 / 3)
        .await;
    assert_swaps_in_flight(dir.path(), "second").await;
    drop(server);

    let (_server, base) = start(dir.path(), &config).await;
    run.buy_the_rest(&base, dir.path()).await;
    let swaps = settled_swaps(dir.path()).await;
    check_books(dir.path(), &run.listings, &swaps).await;
    run.check_door(&base).await;
    for (status, body) in run.told.values() {
        assert!(
            matches!(*status, 201 | 409),
            "unexpected answer {status}: {body}"
        );
    }
    clean_audit(dir.path(), &config).await;
}

/// A node restarted on a ledger with swaps left between their provider calls listens
/// at once and finishes them beside serving. With the provider answering in a second,
/// the hundred swaps below, driven one after another before the node listened, kept it
/// silent for well over a minute (CI's crash test above once timed out at a restart so).
/// The provider never heard of their charges, so each is undone and its listing open
/// again.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_restart_with_swaps_in_flight_listens_at_once_and_finishes_them_beside_serving() {
    let dir = tempfile::tempdir().unwrap();
    let config = on_disk::config(
        dir.path(),
        OPERATOR,
        "[engine]\nrecovery_after_s = 1\n[fake_payments]\nlatency_ms = 1000\n",
    );
    let (event, listings) = seed(dir.path()).await;
    reserve_all(dir.path(), &listings).await;
    assert_eq!(swaps_of(&ledger(dir.path())).await.len(), LISTED);

    let started = tokio::time::Instant::now();
    let (_server, base) = start(dir.path(), &config).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the node took {took:?} to listen: it drove the swaps before serving"
    );
    settled_swaps(dir.path()).await;
    let l = ledger(dir.path());
    for id in &listings {
        let listing = l.listing(*id).await.unwrap().unwrap();
        assert_eq!(
            listing.state,
            ListingState::Open,
            "the undone swap's listing"
        );
    }
    let url = format!("{base}/v1/events/{event}/listings?limit=200");
    let (status, page) = call(&client(), Method::GET, url, "", Value::Null).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["listings"].as_array().map(Vec::len), Some(LISTED));
}

/// A swap of each listing reserved for a buyer of its own, as a purchase reserves it
/// before the provider hears of the charge: what a kill between the two leaves.
async fn reserve_all(dir: &Path, listings: &[ListingId]) {
    let l = ledger(dir);
    let now = wall_clock();
    for id in listings {
        let listing = l.listing(*id).await.unwrap().expect("the listing");
        let facts = l.ticket(listing.ticket).await.unwrap().expect("its ticket");
        let swap = Swap {
            id: SwapId::random(),
            listing: listing.id,
            ticket: listing.ticket,
            event: listing.event,
            seller: listing.seller,
            buyer: BuyerId::random(),
            seller_order: facts.ticket.order,
            charge: OrderId::random(),
            charge_ref: None,
            price: listing.price,
            currency: "EUR".into(),
            payout: Money(PAYOUT),
            payment_method: "pm_card_visa".into(),
            state: SwapState::Reserved,
            created_at: now,
            updated_at: now,
        };
        let reserve = Reserve {
            swap,
            max_per_buyer: 4,
        };
        l.reserve(&reserve).await.unwrap().expect("reserved");
    }
}

/// The stand-in provider answers in 400 ms: a swap waits that long between its steps,
/// so the watcher, one HTTP read and one ledger read a look, sees one in flight on a
/// loaded machine too (at 150 ms, once, under a full CI run with the ledger's writer
/// running ahead of the other threads, every purchase of the second round was answered
/// before it did).
fn config(dir: &Path) -> PathBuf {
    on_disk::config(
        dir,
        OPERATOR,
        "[engine]\nrecovery_after_s = 1\nadmission_interval_ms = 50\n\
         [workers]\nrecovery_interval_ms = 200\n[fake_payments]\nlatency_ms = 400\n\
         [buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n",
    )
}

/// An open event with the exchange and `LISTED` sellers of one seat each, every
/// ticket listed at face value.
async fn seed(dir: &Path) -> (EventId, Vec<ListingId>) {
    let ledger = Arc::new(ledger(dir));
    let book = provider_book(dir);
    let now = wall_clock();
    let mut s = spec(4, 50, 0, 4);
    s.sale.exchange = Some(ExchangeRules {
        doors_at: now.plus_secs(86_400),
        closes_before_doors_s: 3_600,
        fee_bps: 1_000,
        fee_fixed: Money(0),
    });
    let event = open_event(&*ledger, &s, now).await;
    let mut listings = Vec::new();
    for seat in 0..LISTED {
        let order = sell(&*ledger, &book, &event, &[seat], now).await;
        let t = ledger.tickets_of_order(order).await.unwrap();
        let t = t.first().expect("the capture wrote the ticket");
        let l = Listing {
            id: ListingId::random(),
            ticket: t.id,
            event: event.id,
            seat: t.seat.as_str().to_owned(),
            seller: t.holder,
            version: t.version,
            price: Money(FACE),
            state: ListingState::Open,
            created_at: now,
            ended_at: None,
        };
        ledger.list(&l).await.unwrap().expect("listed");
        listings.push(l.id);
    }
    (event.id, listings)
}

/// `BUYERS` buyers, each admitted to the event: (buyer token, admission token).
async fn admitted(c: &reqwest::Client, base: &str, event: EventId) -> Vec<(String, String)> {
    let one = |_| async move {
        let (_, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
        let token = b["token"].as_str().expect("a buyer token").to_string();
        let queue = format!("{base}/v1/events/{event}/queue");
        let (_, j) = call(c, Method::POST, queue, &token, json!({})).await;
        let ticket = j["queue_ticket"].as_str().expect("a queue ticket");
        let admission = admission_token(c, base, ticket).await;
        (token, admission)
    };
    futures::future::join_all((0..BUYERS).map(one)).await
}

/// The buyers and what each was told.
struct Run {
    c: reqwest::Client,
    event: EventId,
    listings: Vec<ListingId>,
    /// (buyer token, admission token).
    buyers: Vec<(String, String)>,
    /// Buyers with no answer yet (theirs died with the server).
    pending: Vec<usize>,
    told: HashMap<usize, (u16, Value)>,
}

impl Run {
    /// Each buyer of `who` tries listing `n % LISTED`, all at once: the answers in order.
    async fn purchases(&self, base: &str, who: &[usize]) -> Vec<(u16, Value)> {
        let one = |n: usize| async move {
            let url = format!("{base}/v1/listings/{}/purchase", self.listings[n % LISTED]);
            let body = json!({"payment_method": "pm_card_visa"});
            call(&self.c, Method::POST, url, &self.buyers[n].1, body).await
        };
        futures::future::join_all(who.iter().map(|&n| one(n))).await
    }

    /// Keeps each buyer's latest answer: no answer (the server died) or 503 puts the
    /// buyer back in line for the next start.
    fn record(&mut self, answers: Vec<(usize, (u16, Value))>) {
        let latest: BTreeMap<usize, (u16, Value)> = answers.into_iter().collect();
        for (n, (status, body)) in latest {
            match status {
                0 | 503 => self.pending.push(n),
                _ => {
                    self.told.insert(n, (status, body));
                }
            }
        }
    }

    /// Starts the pending buyers' purchases and kills the server (SIGKILL) once at
    /// least `taken` listings are no longer open and the ledger shows a swap between
    /// its steps (so the kill lands mid-swap, however fast the machine runs them).
    /// When a round is answered in full before that, the buyers not yet sold a ticket
    /// go again, as buyers in a real line would, until the kill lands.
    async fn race_then_kill(
        &mut self,
        mut server: Child,
        base: &str,
        dir: &Path,
        taken: usize,
    ) -> Child {
        let first: Vec<usize> = std::mem::take(&mut self.pending);
        let ledger = ledger(dir);
        let killed = std::cell::Cell::new(false);
        let answers = {
            let racing = self.rounds_until(base, first, &killed);
            tokio::pin!(racing);
            let watch = async {
                let what = format!("{taken} listings taken and a swap in flight");
                let every = Duration::from_millis(5);
                boxoffice_testkit::eventually(what, Duration::from_secs(120), every, || async {
                    let open = self.open_count(base).await;
                    let in_flight = swaps_of(&ledger).await.len();
                    if open <= LISTED - taken && in_flight > 0 {
                        Ok(())
                    } else {
                        Err(json!({"open": open, "in_flight": in_flight}))
                    }
                })
                .await
            };
            let answers = tokio::select! {
                answers = &mut racing => Some(answers),
                () = watch => None,
            };
            killed.set(true);
            server.start_kill().unwrap();
            server.wait().await.unwrap();
            match answers {
                Some(a) => a,
                None => racing.await,
            }
        };
        self.record(answers);
        server
    }

    /// Round after round of purchases, `first` then every buyer not yet sold a ticket,
    /// until `killed` is set (the round under way when it is set is the last) or no
    /// listing is left open: every answer, in order.
    async fn rounds_until(
        &self,
        base: &str,
        first: Vec<usize>,
        killed: &std::cell::Cell<bool>,
    ) -> Vec<(usize, (u16, Value))> {
        let mut got: Vec<(usize, (u16, Value))> = Vec::new();
        let mut round = first;
        loop {
            let answers = self.purchases(base, &round).await;
            got.extend(round.into_iter().zip(answers));
            if killed.get() || self.open_count(base).await == 0 {
                return got;
            }
            let sold: HashSet<usize> = got
                .iter()
                .filter(|(_, (s, _))| *s == 201)
                .map(|(n, _)| *n)
                .collect();
            round = (0..BUYERS)
                .filter(|n| !sold.contains(n))
                .filter(|n| self.told.get(n).is_none_or(|(s, _)| *s != 201))
                .collect();
        }
    }

    /// Buyers not told `done` try again, round after round, until nothing is open and
    /// no swap is left in flight (the restarted server resumes the earlier swaps beside
    /// serving, and one it undoes opens its listing again), within two minutes.
    async fn buy_the_rest(&mut self, base: &str, dir: &Path) {
        let ledger = ledger(dir);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            // Swaps first: with none in flight, no listing can open again behind us.
            let settled = swaps_of(&ledger).await.is_empty();
            if self.open_count(base).await == 0 {
                if settled {
                    return;
                }
            } else {
                let round: Vec<usize> = (0..BUYERS)
                    .filter(|n| self.told.get(n).is_none_or(|(s, _)| *s != 201))
                    .collect();
                let answers = self.purchases(base, &round).await;
                self.pending.clear();
                self.record(round.into_iter().zip(answers).collect());
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "listings still open or swaps in flight two minutes after the last restart"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn open_count(&self, base: &str) -> usize {
        let url = format!("{base}/v1/events/{}/listings?limit=200", self.event);
        let (status, page) = call(&self.c, Method::GET, url, "", Value::Null).await;
        if status != 200 {
            return LISTED;
        }
        page["listings"].as_array().map_or(LISTED, Vec::len)
    }

    /// Every buyer holds only tickets bought here, at their new version, and each
    /// admits at the door.
    async fn check_door(&self, base: &str) {
        let gates = format!("{base}/v1/events/{}/gates", self.event);
        let (status, gate) = call(
            &self.c,
            Method::POST,
            gates,
            OPERATOR,
            json!({"name": "Main"}),
        )
        .await;
        assert_eq!(status, 201, "{gate}");
        let key = gate["credential"].as_str().unwrap().to_string();
        let mut held = 0;
        for (token, _) in &self.buyers {
            let url = format!("{base}/v1/me/tickets");
            let (_, mine) = call(&self.c, Method::GET, url, token, Value::Null).await;
            for t in mine["tickets"].as_array().unwrap() {
                held += 1;
                assert_eq!(t["version"], 2, "{t}");
                let url = format!("{base}/v1/events/{}/scans", self.event);
                let body = json!({"barcode": t["barcode"]});
                let (status, scanned) = call(&self.c, Method::POST, url, &key, body).await;
                assert_eq!(status, 200, "{scanned}");
            }
        }
        assert_eq!(held, LISTED, "the buyers hold exactly the resold tickets");
    }
}

async fn swaps_of(ledger: &SqliteLedger) -> Vec<Swap> {
    ledger
        .unfinished_swaps(Millis(i64::MAX), 10_000)
        .await
        .unwrap()
}

/// The kill caught swaps between their steps.
async fn assert_swaps_in_flight(dir: &Path, which: &str) {
    let l = ledger(dir);
    let unfinished = swaps_of(&l).await;
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &unfinished {
        *by.entry(s.state.as_str()).or_default() += 1;
    }
    eprintln!("after the {which} kill, swaps in flight: {by:?}");
    assert!(
        !unfinished.is_empty(),
        "the {which} kill landed when no swap was in flight; nothing was tested"
    );
}

/// Waits until the restarted server has finished or undone every swap; returns every
/// swap's final state by charge.
async fn settled_swaps(dir: &Path) -> HashMap<OrderId, SwapState> {
    let l = ledger(dir);
    let what = "every swap finished or undone".to_string();
    boxoffice_testkit::eventually(
        what,
        Duration::from_secs(120),
        Duration::from_millis(200),
        || async {
            let left = swaps_of(&l).await;
            if left.is_empty() {
                Ok(())
            } else {
                Err(json!(left.len()))
            }
        },
    )
    .await;
    l.swap_charges().await.unwrap().into_iter().collect()
}

/// Exactly `LISTED` swaps done, one per listing; each seller refunded once; every
/// charge in the provider's book as its swap ended.
async fn check_books(dir: &Path, listings: &[ListingId], swaps: &HashMap<OrderId, SwapState>) {
    let l = ledger(dir);
    for id in listings {
        let listing = l.listing(*id).await.unwrap().unwrap();
        assert_eq!(listing.state, ListingState::Sold, "every listing resold");
    }
    let done = swaps.values().filter(|s| **s == SwapState::Done).count();
    assert_eq!(
        done, LISTED,
        "exactly one finished swap per listing: {swaps:?}"
    );
    let book = provider_book(dir);
    let refunds = book.partial_refunds().await.unwrap();
    assert_eq!(refunds.len(), LISTED, "one payout per seller: {refunds:?}");
    let sellers: HashSet<OrderId> = refunds.iter().map(|r| r.order).collect();
    assert_eq!(sellers.len(), LISTED);
    assert!(refunds.iter().all(|r| r.amount == Money(PAYOUT)));
    let paid: HashMap<OrderId, ProviderState> = (book.all_payments().await.unwrap().into_iter())
        .map(|p| (p.order, p.state))
        .collect();
    for (charge, state) in swaps {
        let at_provider = paid.get(charge).copied();
        match state {
            SwapState::Done => assert_eq!(at_provider, Some(ProviderState::Captured)),
            _ => assert!(
                !matches!(
                    at_provider,
                    Some(ProviderState::Captured | ProviderState::Authorized)
                ),
                "an undone swap holds money: {at_provider:?}"
            ),
        }
    }
}

//! The provider's book on disk: it survives the server's crash, and concurrent callers
//! all land in it.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_engine::ports::{Inquiry, PaymentError, PaymentGateway, ProviderState};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, methods};
use common::{authorized, request};

fn open(dir: &tempfile::TempDir) -> FakeGateway {
    FakeGateway::open(
        dir.path().join("provider.sqlite"),
        FakeGatewayConfig::default(),
    )
    .expect("the provider's file opens")
}

#[boxoffice_testkit::test]
async fn payments_survive_dropping_and_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(&dir);
    let (captured, reference) = authorized(&gw).await;
    gw.capture(captured, &reference).await.unwrap();
    let (held, _) = authorized(&gw).await;
    let declined = request(methods::DECLINED);
    gw.authorize(&declined).await.unwrap();
    let before = gw.all_payments().await.unwrap();
    drop(gw); // the "crash"

    let gw = open(&dir);
    assert_eq!(gw.all_payments().await.unwrap(), before);
    let states: Vec<_> = before.iter().map(|p| (p.order, p.state)).collect();
    assert_eq!(
        states,
        vec![
            (captured, ProviderState::Captured),
            (held, ProviderState::Authorized),
            (declined.order, ProviderState::Declined),
        ]
    );
}

#[boxoffice_testkit::test]
async fn a_charge_whose_answer_was_lost_is_still_found_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(&dir);
    let req = request(methods::TIMEOUT_AFTER_CHARGE);
    assert_eq!(gw.authorize(&req).await, Err(PaymentError::Timeout));
    drop(gw);

    let gw = open(&dir);
    let found = gw
        .inquire(&Inquiry::by_order(req.order))
        .await
        .unwrap()
        .expect("the provider remembers");
    assert_eq!(found.state, ProviderState::Authorized);
    // The recovery sweep can now void it after the crash.
    gw.void(req.order, &found.reference).await.unwrap();
}

#[boxoffice_testkit::test]
async fn a_reopened_provider_still_refuses_to_authorize_an_order_twice() {
    let dir = tempfile::tempdir().unwrap();
    let req = request(methods::VISA);
    let first = open(&dir).authorize(&req).await.unwrap();
    let gw = open(&dir);
    assert_eq!(gw.authorize(&req).await.unwrap(), first);
    assert_eq!(gw.all_payments().await.unwrap().len(), 1);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_authorizations_of_distinct_orders_are_all_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Arc::new(open(&dir));
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let gw = Arc::clone(&gw);
            tokio::spawn(async move {
                let req = request(methods::VISA);
                gw.authorize(&req).await.map(|_| req.order)
            })
        })
        .collect();
    let mut orders = HashSet::new();
    for task in tasks {
        orders.insert(task.await.unwrap().unwrap());
    }
    let recorded: HashSet<_> = gw
        .all_payments()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.order)
        .collect();
    assert_eq!(recorded, orders);
    assert_eq!(recorded.len(), 64);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_authorizations_of_one_order_authorize_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Arc::new(open(&dir));
    let req = request(methods::VISA);
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (gw, req) = (Arc::clone(&gw), req.clone());
            tokio::spawn(async move { gw.authorize(&req).await })
        })
        .collect();
    let mut outcomes = HashSet::new();
    for task in tasks {
        outcomes.insert(format!("{:?}", task.await.unwrap().unwrap()));
    }
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(gw.all_payments().await.unwrap().len(), 1);
}

#[test]
fn servers_opening_one_fresh_book_at_the_same_moment_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                boxoffice_payment_fake::FakeGateway::open(&path, Default::default())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    for open in opens {
        assert_eq!(open.join().unwrap(), Ok(()));
    }
}

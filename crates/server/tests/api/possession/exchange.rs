//! A purchase on the exchange is made with the admission token, as a hold is, so it
//! takes the same proof: a token copied to a client without its key buys nothing.

use boxoffice_domain::exchange::ExchangeRules;
use boxoffice_domain::{Millis, Money};

use super::*;
use crate::tickets::my_tickets;

/// An event that requires proofs and has its exchange open for a day.
fn exchangeable() -> EventSpec {
    let mut spec = event_spec(PopMode::Required);
    spec.sale.exchange = Some(ExchangeRules {
        doors_at: Millis(1_800_000_000_000).plus_secs(86_400),
        closes_before_doors_s: 3_600,
        fee_bps: 1_000,
        fee_fixed: Money(100),
    });
    spec
}

async fn purchase(app: &TestApp, listing: &str, admission: &str, dpop: Option<String>) -> Response {
    let path = format!("/v1/listings/{listing}/purchase");
    let body = json!({"payment_method": "pm_card_visa"});
    send(app, Method::POST, &path, admission, dpop, body).await
}

async fn still_open(app: &TestApp, event: EventId, listing: &str) -> bool {
    let page: Value = app
        .get(&format!("/v1/events/{event}/listings"), "")
        .await
        .json()
        .await
        .unwrap();
    (page["listings"].as_array().unwrap().iter()).any(|l| l["listing_id"] == listing)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_purchase_takes_the_admissions_proof_as_a_hold_does() {
    let app = spawn().await;
    let event = app.create_event(&exchangeable()).await;
    // A seller buys a ticket with proofs of their key, and lists it.
    let seller = admitted(&app, event, Some(&proof_key())).await;
    let hold = held(&app, event, &seller).await;
    let path = format!("/v1/holds/{hold}/checkout");
    let dpop = proof(&seller.key, "POST", &path, now_s(&app));
    let res = checkout(&app, &hold, &seller.token, Some(dpop)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let ticket = my_tickets(&app, &seller.token).await[0]["ticket_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/v1/tickets/{ticket}/listings");
    let res = app
        .post(&path, &seller.token, &uuid(), json!({"price": 5_000}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let listing = res.json::<Value>().await.unwrap()["listing_id"]
        .as_str()
        .unwrap()
        .to_string();

    let buyer = admitted(&app, event, Some(&proof_key())).await;
    let path = format!("/v1/listings/{listing}/purchase");
    // No proof, and a proof of another key (the token handed to a client without its
    // own): refused, the listing still open and the buyer with no ticket.
    let thief = proof_key();
    for (dpop, code) in [
        (None, "proof_required"),
        (
            Some(proof(&thief, "POST", &path, now_s(&app))),
            "proof_key_mismatch",
        ),
    ] {
        let refused = refusal(purchase(&app, &listing, &buyer.admission, dpop).await).await;
        assert_eq!(refused, (StatusCode::UNAUTHORIZED, code.into()));
        assert!(still_open(&app, event, &listing).await, "after {code}");
        assert!(my_tickets(&app, &buyer.token).await.is_empty());
    }
    // The buyer's own proof buys it.
    let dpop = proof(&buyer.key, "POST", &path, now_s(&app));
    let res = purchase(&app, &listing, &buyer.admission, Some(dpop)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.json::<Value>().await.unwrap()["state"], "done");
    assert_eq!(my_tickets(&app, &buyer.token).await.len(), 1);
    app.stop().await;
}

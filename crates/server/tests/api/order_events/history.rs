//! GET /v1/orders/{id}/history: the buyer's and the operator's, nobody else's.

use reqwest::StatusCode;
use serde_json::Value;

use super::confirmed_orders;
use crate::common::spawn;

#[boxoffice_testkit::test]
async fn an_orders_history_is_its_buyers_and_the_operators_and_nobody_elses() {
    let app = spawn().await;
    let placed = confirmed_orders(&app, 1).await;
    let (order, token) = &placed[0];
    let path = format!("/v1/orders/{order}/history");
    for who in [token.as_str(), app.operator_key.as_str()] {
        let res = app.get(&path, who).await;
        assert_eq!(res.status(), StatusCode::OK);
        let v: Value = res.json().await.unwrap();
        assert_eq!(v["order_id"], order.as_str());
        let lines = v["lines"].as_array().unwrap();
        let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(events, ["created", "authorized", "committed", "captured"]);
        let sequences: Vec<u64> = lines
            .iter()
            .map(|l| l["sequence"].as_u64().unwrap())
            .collect();
        assert_eq!(sequences, [1, 2, 3, 4]);
        assert!(lines[0]["from_state"].is_null());
        assert_eq!(lines[3]["to_state"], "confirmed");
        assert!(lines.iter().all(|l| l["at"].as_i64().is_some()));
    }
    let (_, stranger) = app.buyer().await;
    let theirs = app.get(&path, &stranger).await;
    let unknown_path = format!("/v1/orders/{}/history", uuid::Uuid::now_v7());
    let unknown = app.get(&unknown_path, &stranger).await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let (a, b): (Value, Value) = (theirs.json().await.unwrap(), unknown.json().await.unwrap());
    assert_eq!(a["error"], "order_not_found");
    assert_eq!(a, b, "another buyer's order answers as an unknown one");
    let anonymous = app.get(&path, "").await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    app.stop().await;
}

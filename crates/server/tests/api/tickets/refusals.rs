//! Every refusal at the door and around tickets is a coded 4xx that admits nobody.

use boxoffice_domain::Millis;
use boxoffice_domain::ticket::{TicketSecret, rotating_text};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::transfers::{give, transferable};
use super::{barcode, buy, gate, scan};
use crate::common::{spawn, spec, uuid};

async fn code_of(res: reqwest::Response) -> (u16, String) {
    let status = res.status().as_u16();
    let v: Value = res.json().await.unwrap_or(Value::Null);
    (status, v["error"].as_str().unwrap_or_default().to_string())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_foreign_retired_and_superseded_barcodes_are_refused_with_a_code() {
    let app = spawn().await;
    let ours = app.create_event(&transferable(spec(2, 10, 0, 4))).await;
    let theirs = app.create_event(&spec(2, 10, 0, 4)).await;
    let (holder, tickets) = buy(&app, ours, 4).await;
    let (_, foreign) = buy(&app, theirs, 1).await;
    let (_, key) = gate(&app, ours, "Main").await;

    // One character changed: the signature (or the form) no longer holds.
    let good = barcode(&tickets[0]);
    let mut bad = good.clone().into_bytes();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'0' { b'1' } else { b'0' };
    let (status, body) = scan(&app, ours, &key, &String::from_utf8(bad).unwrap()).await;
    let code = body["error"].as_str().unwrap();
    assert!(
        status == 422 && (code == "barcode_bad_signature" || code == "barcode_malformed"),
        "{status} {body}"
    );
    // A genuine barcode of another event, signed with that event's key.
    let (status, body) = scan(&app, ours, &key, &barcode(&foreign[0])).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!("barcode_wrong_event"))
    );
    assert_eq!(
        scan(&app, ours, &key, "not a barcode").await.1["error"],
        "barcode_malformed"
    );

    // Rotate, retire the old key: barcodes it signed are refused, reissued ones pass.
    let op = &app.operator_key;
    let res = app
        .post(
            &format!("/v1/events/{ours}/keys/rotate"),
            op,
            &uuid(),
            json!({}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let retire = format!("/v1/events/{ours}/keys/retire");
    let res = app.post(&retire, op, &uuid(), json!({"kid": 2})).await;
    assert_eq!(code_of(res).await, (409, "key_current".into()));
    let res = app.post(&retire, op, &uuid(), json!({"kid": 1})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let (status, body) = scan(&app, ours, &key, &good).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!("barcode_unknown_key"))
    );
    let keys: Value = app
        .get(&format!("/v1/events/{ours}/keys"), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    assert_eq!(keys["keys"][0]["kid"], "2");

    // A later version supersedes the barcode of the earlier one.
    let id = tickets[1]["ticket_id"].as_str().unwrap();
    let reissued: Value = app
        .get(&format!("/v1/tickets/{id}"), &holder)
        .await
        .json()
        .await
        .unwrap();
    let fresh = barcode(&reissued);
    assert_ne!(fresh, barcode(&tickets[1]), "signed with the new key");
    let to = app.buyer().await;
    let recipient = give(&app, &holder, id, &to).await;
    let (status, body) = scan(&app, ours, &key, &fresh).await;
    assert_eq!(
        (status, body["error"].clone()),
        (409, json!("barcode_revoked"))
    );
    let (status, _) = scan(&app, ours, &key, &barcode(&recipient)).await;
    assert_eq!(status, 200, "the new version admits");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotating_code_admits_in_its_moment_and_an_expired_one_is_refused() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (holder, before) = buy(&app, event, 2).await;
    let op = &app.operator_key;
    let res = app
        .client
        .put(app.url(&format!("/v1/events/{event}/barcodes")))
        .bearer_auth(op)
        .json(&json!({"rotating": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (_, key) = gate(&app, event, "Main").await;
    // A static barcode saved before rotation was turned on no longer passes.
    let (status, body) = scan(&app, event, &key, &barcode(&before[0])).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!("barcode_code_missing"))
    );
    let tickets = super::my_tickets(&app, &holder).await;
    let shown = |t: &Value, at: Millis| {
        assert_eq!(t["rotating"], true);
        let secret = TicketSecret::from_base64(t["ticket_secret"].as_str().unwrap()).unwrap();
        rotating_text(t["barcode"].as_str().unwrap(), &secret, at).unwrap()
    };
    // The signed part alone, without the code of the moment, is not a barcode.
    let (status, body) = scan(&app, event, &key, &barcode(&tickets[0])).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!("barcode_malformed"))
    );
    // A screenshot taken now, shown a minute later.
    let screenshot = shown(&tickets[0], app.engine.now());
    app.clock.advance_secs(60);
    let (status, body) = scan(&app, event, &key, &screenshot).await;
    assert_eq!(
        (status, body["error"].clone()),
        (422, json!("barcode_code_expired"))
    );
    let live = shown(&tickets[0], app.engine.now());
    assert_eq!(scan(&app, event, &key, &live).await.0, 200);
    let bundle = super::bundle(&app, event, &key).await;
    assert!(
        bundle["rotation"].is_string(),
        "the gate gets the rotation secret"
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_other_buyers_tickets_and_refused_gates_get_coded_4xx() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let other = app.create_event(&spec(2, 10, 0, 4)).await;
    let (mine, tickets) = buy(&app, event, 1).await;
    let (stranger, _) = buy(&app, event, 1).await;
    let id = tickets[0]["ticket_id"].as_str().unwrap();
    let path = format!("/v1/tickets/{id}");
    assert_eq!(app.get(&path, &mine).await.status(), StatusCode::OK);
    for (p, who) in [
        (path.clone(), &stranger),
        (format!("{path}/qr.png"), &stranger),
        (format!("/v1/tickets/{}", uuid()), &mine),
        ("/v1/tickets/not-a-ticket".to_string(), &mine),
    ] {
        assert_eq!(
            code_of(app.get(&p, who).await).await,
            (404, "ticket_not_found".into()),
            "{p}"
        );
    }
    let code = barcode(&tickets[0]);
    assert_eq!(
        scan(&app, event, "", &code).await.1["error"],
        "missing_token"
    );
    assert_eq!(scan(&app, event, "gate_nope", &code).await.0, 401);
    let (_, elsewhere) = gate(&app, other, "Other").await;
    let (status, body) = scan(&app, event, &elsewhere, &code).await;
    assert_eq!(
        (status, body["error"].clone()),
        (403, json!("gate_wrong_event"))
    );
    let (gate_id, key) = gate(&app, event, "Main").await;
    let res = app
        .client
        .delete(app.url(&format!("/v1/gates/{gate_id}")))
        .bearer_auth(&app.operator_key)
        .header("Idempotency-Key", uuid())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (status, body) = scan(&app, event, &key, &code).await;
    assert_eq!(
        (status, body["error"].clone()),
        (403, json!("gate_revoked"))
    );
    let res = app
        .get(&format!("/v1/events/{event}/gate-bundle"), &key)
        .await;
    assert_eq!(code_of(res).await, (403, "gate_revoked".into()));
    // Nothing was admitted by any of it.
    let (_, fresh) = gate(&app, event, "Fresh").await;
    assert_eq!(scan(&app, event, &fresh, &code).await.0, 200);
    // Only the operator makes gates, and a retry shows no credential again.
    let gates = format!("/v1/events/{event}/gates");
    let res = app
        .post(&gates, &mine, &uuid(), json!({"name": "Mine"}))
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let k = uuid();
    let first: Value = app
        .post(&gates, &app.operator_key, &k, json!({"name": "Twice"}))
        .await
        .json()
        .await
        .unwrap();
    let again = app
        .post(&gates, &app.operator_key, &k, json!({"name": "Twice"}))
        .await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert!(first["credential"].is_string());
    assert_eq!(
        (again["gate_id"].clone(), again["credential"].clone()),
        (first["gate_id"].clone(), Value::Null)
    );
    app.stop().await;
}

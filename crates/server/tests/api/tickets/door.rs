//! The door through HTTP: exactly one admit per ticket with two gates racing, the
//! buyer's QR codes, offline batches, and a cancelled order's tickets revoked.

use std::collections::HashMap;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{barcode, bundle, buy, cancel_order_of, gate, my_tickets, scan};
use crate::common::{spawn, spec, uuid};

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_hundred_tickets_scanned_by_two_gates_at_once_admit_exactly_once_each() {
    let app = spawn().await;
    let event = app.create_event(&spec(10, 10, 0, 10)).await;
    let mut tickets = Vec::new();
    for _ in 0..10 {
        tickets.extend(buy(&app, event, 10).await.1);
    }
    assert_eq!(tickets.len(), 100);
    let (east, east_key) = gate(&app, event, "East").await;
    let (west, west_key) = gate(&app, event, "West").await;
    let scans = tickets.iter().flat_map(|t| {
        let code = barcode(t);
        let id = t["ticket_id"].as_str().unwrap().to_string();
        [(id.clone(), code.clone(), &east_key), (id, code, &west_key)]
    });
    let results = join_all(scans.map(|(id, code, key)| {
        let app = &app;
        async move { (id, scan(app, event, key, &code).await) }
    }))
    .await;
    let mut admitted: HashMap<String, String> = HashMap::new();
    let mut refused: HashMap<String, Value> = HashMap::new();
    for (id, (status, body)) in results {
        match status {
            200 => {
                assert_eq!(body["verdict"], "admitted");
                let g = body["gate_id"].as_str().unwrap().to_string();
                assert!(admitted.insert(id, g).is_none(), "admitted twice");
            }
            409 => {
                assert_eq!(body["error"], "already_scanned", "{body}");
                assert!(refused.insert(id, body).is_none(), "refused twice");
            }
            other => panic!("scan answered {other}: {body}"),
        }
    }
    assert_eq!((admitted.len(), refused.len()), (100, 100));
    for (id, body) in &refused {
        let first = &body["first_scan"];
        assert_eq!(
            first["gate_id"].as_str(),
            admitted.get(id).map(String::as_str)
        );
        let name = if first["gate_id"] == east.as_str() {
            "East"
        } else {
            "West"
        };
        assert_eq!(first["gate_name"], name);
        assert!(first["at"].is_i64());
    }
    assert!(admitted.values().all(|g| *g == east || *g == west));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_sees_their_tickets_with_qr_codes_and_a_refund_revokes_them() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (token, tickets) = buy(&app, event, 2).await;
    let t = &tickets[0];
    let id = t["ticket_id"].as_str().unwrap();
    assert_eq!(
        (t["status"].clone(), t["version"].clone()),
        (json!("valid"), json!(1))
    );
    let one: Value = app
        .get(&format!("/v1/tickets/{id}"), &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        one["barcode"], t["barcode"],
        "a barcode is made again the same"
    );
    let png = app.get(&format!("/v1/tickets/{id}/qr.png"), &token).await;
    assert_eq!(png.headers()["content-type"], "image/png");
    assert_eq!(png.headers()["cache-control"], "private, no-store");
    assert_eq!(&png.bytes().await.unwrap()[1..4], b"PNG");
    let svg = app.get(&format!("/v1/tickets/{id}/qr.svg"), &token).await;
    assert_eq!(svg.headers()["content-type"], "image/svg+xml");
    assert!(svg.text().await.unwrap().starts_with("<svg"));

    // The operator cancels the order (its money back): the door and the bundle follow.
    cancel_order_of(&app, &token, event).await;
    let (_, key) = gate(&app, event, "Main").await;
    let (status, body) = scan(&app, event, &key, &barcode(t)).await;
    assert_eq!(
        (status, body["error"].clone()),
        (409, json!("ticket_revoked"))
    );
    let b = bundle(&app, event, &key).await;
    let revoked: Vec<&Value> = b["revoked"].as_array().unwrap().iter().collect();
    assert_eq!(revoked.len(), 2, "both tickets of the refunded order: {b}");
    assert!(
        revoked
            .iter()
            .any(|r| r["ticket_id"] == id && r["version"] == 1)
    );
    let mine = my_tickets(&app, &token).await;
    assert!(
        mine.iter()
            .all(|t| t["status"] == "revoked" && t["barcode"].is_null())
    );
    let qr = app.get(&format!("/v1/tickets/{id}/qr.png"), &token).await;
    assert_eq!(qr.status(), StatusCode::CONFLICT);
    app.stop().await;
}

/// A buyer's own reads (their tickets with barcodes, their orders, one order) are
/// answered `private, no-store`: only the QR images and one ticket were, so a cache set
/// to keep everything would have served a buyer's barcodes to the next caller. A public
/// read keeps its own caching.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyers_own_reads_are_never_kept_by_a_shared_cache() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (token, _) = buy(&app, event, 1).await;
    let orders: Value = app.get("/v1/me/orders", &token).await.json().await.unwrap();
    let order = orders["orders"][0]["order_id"].as_str().expect("an order");
    for path in [
        "/v1/me/tickets".to_owned(),
        "/v1/me/orders".to_owned(),
        "/v1/me/transfers".to_owned(),
        format!("/v1/orders/{order}"),
    ] {
        let res = app.get(&path, &token).await;
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(
            res.headers()["cache-control"],
            "private, no-store",
            "{path}"
        );
    }
    let public = app
        .client
        .get(app.url(&format!("/v1/events/{event}/queue")))
        .send();
    let public = public.await.unwrap();
    assert_ne!(
        public
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("private, no-store")
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_scans_are_reconciled_by_scan_time_and_each_conflict_is_reported() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (_, tickets) = buy(&app, event, 3).await;
    let (online_id, online_key) = gate(&app, event, "Online").await;
    let (offline_id, offline_key) = gate(&app, event, "Offline").await;
    let now = app.engine.now().0;
    // Ticket 0 was scanned online just now; the offline gate saw it a minute earlier.
    assert_eq!(
        scan(&app, event, &online_key, &barcode(&tickets[0]))
            .await
            .0,
        200
    );
    let mut tampered = barcode(&tickets[2]);
    tampered.replace_range(10..11, if &tampered[10..11] == "0" { "1" } else { "0" });
    let batch = json!({"scans": [
        {"barcode": barcode(&tickets[0]), "scanned_at": now - 60_000},
        {"barcode": barcode(&tickets[1]), "scanned_at": now - 50_000},
        {"barcode": barcode(&tickets[1]), "scanned_at": now - 40_000},
        {"barcode": tampered, "scanned_at": now - 30_000},
    ]});
    let path = format!("/v1/events/{event}/scans/batch");
    let res = app.post(&path, &offline_key, &uuid(), batch).await;
    assert_eq!(res.status(), StatusCode::OK);
    let v: Value = res.json().await.unwrap();
    let r = v["results"].as_array().unwrap();
    assert_eq!(r[0]["outcome"], "admitted");
    assert_eq!(
        r[0]["replaced"]["gate_id"].as_str(),
        Some(online_id.as_str())
    );
    assert_eq!(r[1]["outcome"], "admitted");
    assert_eq!(r[2]["outcome"], "already_scanned");
    assert_eq!(
        r[2]["first_scan"]["gate_id"].as_str(),
        Some(offline_id.as_str())
    );
    assert_eq!(r[2]["first_scan"]["at"], json!(now - 50_000));
    assert_eq!(r[3]["outcome"], "refused");
    assert!(
        r[3]["error"].as_str().unwrap().starts_with("barcode_"),
        "{}",
        r[3]
    );
    // Online, ticket 0 now names the earlier, offline scan.
    let (status, body) = scan(&app, event, &online_key, &barcode(&tickets[0])).await;
    assert_eq!(status, 409);
    assert_eq!(body["first_scan"]["gate_name"], "Offline");
    // A batch too large, or dated in the future, is refused whole and changes nothing.
    let item = json!({"barcode": barcode(&tickets[2]), "scanned_at": now});
    let big = json!({"scans": vec![item; 501]});
    let res = app.post(&path, &offline_key, &uuid(), big).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let ahead =
        json!({"scans": [{"barcode": barcode(&tickets[2]), "scanned_at": now + 3_600_000}]});
    let res = app.post(&path, &offline_key, &uuid(), ahead).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        scan(&app, event, &online_key, &barcode(&tickets[2]))
            .await
            .0,
        200
    );
    app.stop().await;
}

/// The offline batch route read up to 4 MiB of body before it looked at the gate's
/// credential: any client could make a node keep megabytes a request. The credential is
/// now checked first, so a caller the ledger does not know is answered while its body
/// is still on its way, and a known gate's batch is held to the batch's own limit.
#[boxoffice_testkit::test(timeout_s = 60)]
async fn an_unknown_gate_is_refused_before_its_batch_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn().await;
    let event = app.create_event(&spec(1, 1, 0, 1)).await;
    let (_, key) = gate(&app, event, "East").await;
    let addr = app.base.strip_prefix("http://").unwrap();
    for path in ["scans/batch", "scans"] {
        // 4,000,000 bytes announced, 1,000 sent, and the rest never.
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /v1/events/{event}/{path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer \
             not-a-gate\r\nIdempotency-Key: {}\r\nContent-Type: application/json\r\n\
             Content-Length: 4000000\r\n\r\n",
            uuid()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(&[b' '; 1000]).await.unwrap();
        let mut answer = vec![0u8; 512];
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), tcp.read(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("{path}: no answer while the body was unsent"))
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
        let status = answer.lines().next().unwrap_or_default();
        assert!(
            status.starts_with("HTTP/1.1 401") || status.starts_with("HTTP/1.1 403"),
            "{path}: {answer}"
        );
        assert!(answer.contains("gate_"), "{path}: {answer}");
    }
    // A known gate's batch over the batch's limit (256,000 bytes) is refused whole.
    let filler = json!({"scans": [{"barcode": "x".repeat(300_000), "scanned_at": 0}]});
    let res = app
        .post(
            &format!("/v1/events/{event}/scans/batch"),
            &key,
            &uuid(),
            filler,
        )
        .await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "payload_too_large", "{body}");
    app.stop().await;
}

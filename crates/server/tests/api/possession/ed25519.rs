//! EdDSA (Ed25519) proofs through HTTP, beside the ES256 ones: a key binds the
//! admission and pays for its hold; another key (of either algorithm), a replayed
//! proof, a stale one and one made for another request are refused and change nothing.

use boxoffice_testkit::harness::ed25519_proof_key;

use super::*;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ed25519_key_pays_for_its_hold_and_no_other_key_can() {
    let (app, event, owner) = admitted_with(ed25519_proof_key()).await;
    let before = counts(&app, event).await;
    for thief in [ed25519_proof_key(), proof_key()] {
        let stolen = proof(&thief, "POST", &holds_path(event), now_s(&app));
        let refused = refusal(hold(&app, event, &owner.admission, Some(stolen)).await).await;
        assert_eq!(
            refused,
            (StatusCode::UNAUTHORIZED, "proof_key_mismatch".into())
        );
    }
    assert_eq!(
        counts(&app, event).await,
        before,
        "the refusals changed nothing"
    );
    let hold_id = held(&app, event, &owner).await;
    let path = format!("/v1/holds/{hold_id}/checkout");
    let stolen = proof(&ed25519_proof_key(), "POST", &path, now_s(&app));
    let refused = refusal(checkout(&app, &hold_id, &owner.token, Some(stolen)).await).await;
    assert_eq!(
        refused,
        (StatusCode::UNAUTHORIZED, "proof_key_mismatch".into())
    );
    let own = proof(&owner.key, "POST", &path, now_s(&app));
    let res = checkout(&app, &hold_id, &owner.token, Some(own)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(counts(&app, event).await, (json!(0), json!(1)));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_or_stale_ed25519_proof_is_refused() {
    let (app, event, client) = admitted_with(ed25519_proof_key()).await;
    let path = holds_path(event);
    let once = proof(&client.key, "POST", &path, now_s(&app));
    let res = hold(&app, event, &client.admission, Some(once.clone())).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let before = counts(&app, event).await;
    let again = refusal(hold(&app, event, &client.admission, Some(once)).await).await;
    assert_eq!(again, (StatusCode::UNAUTHORIZED, "proof_replayed".into()));
    refuses_stale_proofs(&app, event, &client).await;
    assert_eq!(counts(&app, event).await, before);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ed25519_proof_for_another_path_or_method_is_refused() {
    let (app, event, client) = admitted_with(ed25519_proof_key()).await;
    let before = counts(&app, event).await;
    let wrong = [
        proof(
            &client.key,
            "POST",
            &format!("/v1/events/{}/holds", event.0 + 1),
            now_s(&app),
        ),
        proof(&client.key, "PUT", &holds_path(event), now_s(&app)),
    ];
    for p in wrong {
        let refused = refusal(hold(&app, event, &client.admission, Some(p)).await).await;
        assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_invalid".into()));
    }
    let hold_id = held(&app, event, &client).await;
    let release = format!("/v1/holds/{hold_id}");
    let p = proof(&client.key, "POST", &release, now_s(&app));
    let res = send(
        &app,
        Method::DELETE,
        &release,
        &client.token,
        Some(p),
        json!({}),
    )
    .await;
    assert_eq!(refusal(res).await.1, "proof_invalid");
    assert_eq!(counts(&app, event).await.1, before.1, "nothing sold");
    app.stop().await;
}

//! Which payment provider a node starts with: there is no default outside `--demo`
//! (the stand-in approves every payment method), the stand-in announces itself loudly,
//! and a Stripe provider whose key is refused, that cannot be reached or that has no
//! webhook secret stops the start with a message saying which.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::localstripe::LocalStripe;
use boxoffice_testkit::harness::path_str;
use std::time::Duration;

const FAKE_WARNING: &str = "WARNING: payments = \"fake\"";

fn stripe_config(dir: &std::path::Path, base_url: &str, key: &str, secret: &str) -> String {
    let file = dir.join("boxoffice.toml");
    let toml = format!(
        "payments = \"stripe\"\n[stripe]\nbase_url = \"{base_url}\"\nsecret_key = \"{key}\"\n\
         webhook_secret = \"{secret}\"\ntimeout_ms = 3000\n"
    );
    std::fs::write(&file, toml).unwrap();
    path_str(&file).to_owned()
}

#[boxoffice_testkit::test]
async fn serve_without_a_payment_choice_refuses_outside_demo() {
    let dir = tempfile::tempdir().unwrap();
    let said = BOXOFFICE
        .serve_refused(&["--data-dir", path_str(dir.path())])
        .await;
    assert!(
        said.contains("no payment provider chosen") && said.contains("payments = \"fake\""),
        "{said}"
    );
}

#[boxoffice_testkit::test]
async fn the_fake_provider_runs_only_when_chosen_and_warns_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let data = path_str(dir.path());
    for args in [
        vec!["--data-dir", data, "--payments", "fake"],
        vec!["--data-dir", data, "--demo"],
    ] {
        let (mut server, _base, said) = BOXOFFICE.start_said(&args).await;
        let what = format!("{args:?}: the stand-in's warning on stderr");
        let every = Duration::from_millis(20);
        boxoffice_testkit::eventually(what, Duration::from_secs(10), every, || async {
            let said = said.lock();
            match said.contains(FAKE_WARNING) {
                true => Ok(()),
                false => Err(said.clone()),
            }
        })
        .await;
        server.kill().await.unwrap();
    }
}

#[boxoffice_testkit::test]
async fn serve_refuses_stripe_with_a_rejected_key() {
    let stripe = LocalStripe::start();
    let dir = tempfile::tempdir().unwrap();
    // localstripe, like Stripe, answers 401 to a key that is not a secret key.
    let config = stripe_config(dir.path(), &stripe.base, "pk_live_not_secret", "whsec_x");
    let said = BOXOFFICE
        .serve_refused(&["--data-dir", path_str(dir.path()), "--config", &config])
        .await;
    assert!(
        said.contains("the Stripe secret key was refused (401)"),
        "{said}"
    );
}

#[boxoffice_testkit::test]
async fn serve_refuses_stripe_it_cannot_reach() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let config = stripe_config(dir.path(), &base, "sk_test_x", "whsec_x");
    let said = BOXOFFICE
        .serve_refused(&["--data-dir", path_str(dir.path()), "--config", &config])
        .await;
    assert!(
        said.contains(&format!("Stripe at {base} is unreachable")),
        "{said}"
    );
}

#[boxoffice_testkit::test]
async fn serve_refuses_stripe_without_a_webhook_secret() {
    let stripe = LocalStripe::start();
    let dir = tempfile::tempdir().unwrap();
    let config = stripe_config(dir.path(), &stripe.base, "sk_test_boxoffice", "");
    let said = BOXOFFICE
        .serve_refused(&["--data-dir", path_str(dir.path()), "--config", &config])
        .await;
    assert!(said.contains("needs stripe.webhook_secret"), "{said}");
}

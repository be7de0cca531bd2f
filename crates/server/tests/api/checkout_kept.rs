//! A confirmed checkout on an embedded node (the SQLite ledger, its replay records in
//! the same file): the answer is kept by the ledger write that records the capture, so
//! the checkout costs the ledger's writer four jobs (the claim, the order, the
//! authorization with the commit, the capture with the kept answer), where it cost five
//! with a `finish` of its own. A retry with the same key gets that answer byte for
//! byte, marked as a replay. A real process, so /metrics (a process-wide recorder)
//! counts this test's writes alone.

use std::path::{Path, PathBuf};

use boxoffice_testkit::harness::buyers::holders;
use boxoffice_testkit::harness::path_str;

use crate::common::{BOXOFFICE, uuid};

const OPERATOR: &str = "kept-checkout-operator-key-0123";
/// Buyers who check out, one after the other.
const BUYERS: usize = 4;

/// Workers that stay quiet while the test measures (an hour between sweeps), and
/// admissions quick enough for the buyers to get in.
fn config(dir: &Path) -> PathBuf {
    let file = dir.join("quiet.toml");
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\n\
         admission_interval_ms = 50\n[workers]\nrecovery_interval_ms = 3600000\n\
         expiry_interval_ms = 3600000\ndrift_repair_interval_ms = 3600000\n\
         event_cancel_interval_ms = 3600000\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// Jobs the ledger's writer has run: `boxoffice_ledger_write_seconds` counts one a job.
async fn writer_jobs(c: &reqwest::Client, base: &str) -> u64 {
    let text = (c.get(format!("{base}/metrics")).send().await)
        .expect("/metrics answers")
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("boxoffice_ledger_write_seconds_count "))
        .map(|n| n.trim().parse().expect("a count"))
        .unwrap_or(0)
}

/// A checkout's status, whether it was a replay, and its body's bytes.
async fn checkout(
    c: &reqwest::Client,
    base: &str,
    (token, hold): &(String, String),
    key: &str,
) -> (u16, bool, Vec<u8>) {
    let res = c
        .post(format!("{base}/v1/holds/{hold}/checkout"))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(&serde_json::json!({"payment_method": "pm_card_visa"}))
        .send()
        .await
        .expect("the checkout answers");
    let replayed = res.headers().get("idempotent-replayed").is_some();
    let status = res.status().as_u16();
    (status, replayed, res.bytes().await.unwrap().to_vec())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn a_confirmed_checkout_keeps_its_answer_in_the_captures_write() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let (dir_arg, config_arg) = (path_str(dir.path()), path_str(&config));
    let (_server, base) = BOXOFFICE
        .start(&["--data-dir", dir_arg, "--config", config_arg])
        .await;
    let c = boxoffice_testkit::harness::http::client();
    let buyers = holders(&c, &base, OPERATOR, BUYERS).await;
    // Each checkout's jobs; the fewest, as a write of another kind (an admission tick)
    // may land in any one checkout's window but not in all of them.
    let mut fewest = u64::MAX;
    for buyer in &buyers {
        let key = uuid();
        let before = writer_jobs(&c, &base).await;
        let (status, replayed, body) = checkout(&c, &base, buyer, &key).await;
        let jobs = writer_jobs(&c, &base).await - before;
        assert_eq!(
            (status, replayed),
            (201, false),
            "{}",
            String::from_utf8_lossy(&body)
        );
        fewest = fewest.min(jobs);
        let order: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(order["status"], "confirmed", "{order}");
        // The retry: the first answer, byte for byte, as a replay, and no new write.
        let again = checkout(&c, &base, buyer, &key).await;
        assert_eq!(again, (201, true, body), "the replayed answer");
    }
    eprintln!("writer jobs per confirmed checkout: {fewest}");
    assert_eq!(fewest, 4, "writer jobs per confirmed checkout");
}

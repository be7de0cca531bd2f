//! Operator mistakes at start-up, with real processes: a second embedded server on a data
//! directory already served, and `serve --demo` run again on the same directory.
use crate::common::BOXOFFICE;
use crate::{Backing, argv};
use boxoffice_testkit::harness::path_str;

/// A config choosing the stand-in provider (no provider is chosen by default).
fn fake_payments(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let file = dir.join("boxoffice.toml");
    std::fs::write(&file, format!("payments = \"fake\"\n{extra}")).unwrap();
    file
}

/// Two embedded processes on one data directory would each sell its events from their
/// own in-process hot store (two buyers holding one seat, one losing at commit): the
/// second refuses to start and names the process that holds the directory.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_embedded_process_on_a_data_dir_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = fake_payments(dir.path(), "");
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&config),
    ];
    let (mut first, base) = BOXOFFICE.start(&args).await;
    let pid = first.id().expect("the first server runs");
    let said = BOXOFFICE.serve_refused(&args).await;
    assert!(said.contains("in use"), "{said}");
    assert!(
        said.contains(&format!("pid {pid}")),
        "it names the holder: {said}"
    );
    assert!(
        said.contains(base.trim_start_matches("http://")),
        "and its address: {said}"
    );
    let health = reqwest::get(format!("{base}/healthz"))
        .await
        .expect("the first still serves");
    assert!(health.status().is_success());
    // Once the holder is gone (even killed), the directory can be served again.
    first.kill().await.expect("killed");
    let (again, _) = BOXOFFICE.start(&args).await;
    drop(again);
}

/// Cluster mode keeps allowing several nodes on one shared data directory.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_nodes_still_share_a_data_dir() {
    let backing = Backing::new("operator-mistakes-operator-key-01", "");
    let args = backing.args();
    let args = argv(&args);
    let (migrated, _) = BOXOFFICE.run(&[&["migrate"], &args[..]].concat()).await;
    assert!(migrated);
    let (one, _) = BOXOFFICE.start(&args).await;
    let (two, _) = BOXOFFICE.start(&args).await;
    drop((one, two));
}

/// `serve --demo` on a data directory that has the demo already reuses that event
/// instead of creating another 51,000 units at every start.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reuses_its_event_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--data-dir", path_str(dir.path()), "--demo"];
    let demo_event = |said: &[String]| -> String {
        said.iter()
            .find_map(|l| l.strip_prefix("demo event "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no demo event in {said:?}"))
            .to_string()
    };
    let (mut first, _, said) = BOXOFFICE.start_saying(&args).await;
    let event = demo_event(&said);
    first.kill().await.expect("stopped");
    first.wait().await.expect("gone");
    let (mut second, base, said) = BOXOFFICE.start_saying(&args).await;
    assert_eq!(demo_event(&said), event, "the same demo event");
    let next: u64 = event.parse::<u64>().expect("a numeric id") + 1;
    let res = reqwest::get(format!("{base}/v1/events/{next}"))
        .await
        .expect("answers");
    assert_eq!(res.status().as_u16(), 404, "no second demo event");
    second.kill().await.expect("stopped");
}

//! `boxoffice gate`: a door with no network decides from a downloaded bundle alone.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{barcode, bundle, buy, cancel_order_of, gate, scan};
use crate::common::{BOXOFFICE, spawn, spec};

/// Runs `boxoffice gate --bundle FILE [barcode]` (stdin when `arg` is None): (exit code,
/// first line printed).
pub(super) fn gate_cli(file: &std::path::Path, arg: Option<&str>, stdin: &str) -> (i32, String) {
    let mut cmd = Command::new(BOXOFFICE.0);
    cmd.arg("gate").arg("--bundle").arg(file);
    if let Some(a) = arg {
        cmd.arg(a);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    (out.status.code().unwrap_or(-1), text)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_command_admits_and_refuses_against_a_downloaded_bundle() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (token, tickets) = buy(&app, event, 2).await;
    let (_, key) = gate(&app, event, "Offline").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bundle.json");
    std::fs::write(&file, bundle(&app, event, &key).await.to_string()).unwrap();

    let good = barcode(&tickets[0]);
    let (code, line) = gate_cli(&file, Some(&good), "");
    assert_eq!(code, 0, "{line}");
    let id = tickets[0]["ticket_id"].as_str().unwrap();
    assert!(line.starts_with("ADMIT") && line.contains(id), "{line}");
    let (code, line) = gate_cli(&file, None, &format!("{}\n", barcode(&tickets[1])));
    assert_eq!(code, 0, "read from stdin: {line}");

    let mut bad = good.clone();
    bad.replace_range(20..21, if &bad[20..21] == "0" { "1" } else { "0" });
    let (code, line) = gate_cli(&file, Some(&bad), "");
    assert_eq!(code, 1, "{line}");
    assert!(line.starts_with("REFUSE"), "{line}");

    // The second ticket is admitted online; a bundle downloaded afterwards refuses it
    // and still admits the first.
    let (status, _) = scan(&app, event, &key, &barcode(&tickets[1])).await;
    assert_eq!(status, 200);
    std::fs::write(&file, bundle(&app, event, &key).await.to_string()).unwrap();
    let (code, line) = gate_cli(&file, Some(&barcode(&tickets[1])), "");
    assert_eq!(
        (code, line.starts_with("REFUSE already_admitted")),
        (1, true),
        "{line}"
    );
    let (code, line) = gate_cli(&file, Some(&good), "");
    assert_eq!(code, 0, "{line}");

    // The order is refunded; a bundle downloaded afterwards refuses its tickets.
    cancel_order_of(&app, &token, event).await;
    std::fs::write(&file, bundle(&app, event, &key).await.to_string()).unwrap();
    let (code, line) = gate_cli(&file, Some(&good), "");
    assert_eq!(
        (code, line.starts_with("REFUSE revoked")),
        (1, true),
        "{line}"
    );

    std::fs::write(&file, "{}").unwrap();
    let (code, _) = gate_cli(&file, Some(&good), "");
    assert_eq!(
        code, 2,
        "a file that is no bundle is an error, not a verdict"
    );
    app.stop().await;
}

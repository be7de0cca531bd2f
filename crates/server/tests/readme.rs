//! The README is checked against the binary: its walkthrough runs as a script against
//! `boxoffice serve --demo`, every flag it shows is a flag of its command, and every
//! configuration key its table lists is a key the configuration reads.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use boxoffice_server::Config;
use boxoffice_server::config::Overrides;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The first ```sh block after the `<!-- walkthrough -->` marker.
fn walkthrough(readme: &str) -> String {
    let at = readme
        .find("<!-- walkthrough")
        .expect("the README marks its walkthrough with <!-- walkthrough -->");
    let block = &readme[at..];
    let start = block
        .find("```sh\n")
        .expect("a ```sh block after the marker")
        + 6;
    let end = block[start..].find("```").expect("the block's end") + start;
    block[start..end].to_string()
}

/// `boxoffice serve --demo` on a free port with a fresh data directory; returns the
/// process and what it printed up to and including "listening on …".
async fn serve_demo(dir: &Path) -> (Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .env("BOXOFFICE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut printed = Vec::new();
    while let Some(line) = lines.next_line().await.expect("the server's stdout") {
        let listening = line.starts_with("listening on ");
        printed.push(line);
        if listening {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, printed);
        }
    }
    panic!(
        "the demo server ended without listening; it printed:\n{}",
        printed.join("\n")
    );
}

#[boxoffice_testkit::test(timeout_s = 300)]
async fn the_readme_walkthrough_buys_two_seats_from_the_demo_server() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, printed) = serve_demo(dir.path()).await;
    let base = printed
        .last()
        .and_then(|l| l.strip_prefix("listening on "))
        .unwrap()
        .trim();
    let said = printed.join("\n");
    assert!(
        said.contains("demo event 1 is open"),
        "the walkthrough buys from event 1; the demo printed:\n{said}"
    );
    let script = walkthrough(&readme());
    let documented = "B=http://127.0.0.1:8080\n";
    assert!(
        script.starts_with(documented),
        "the walkthrough starts with {documented}"
    );
    let script = format!(
        "set -euo pipefail\nB={base}\n{}",
        &script[documented.len()..]
    );
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new("bash")
            .arg("-c")
            .arg(&script)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the walkthrough finishes within two minutes")
    .expect("bash runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "the walkthrough failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Step 5 answers with the confirmed order, step 6 lists it with its two tickets.
    let answers: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| {
            panic!("the walkthrough printed something other than JSON ({e}):\n{stdout}")
        });
    let [checkout, orders] = answers.as_slice() else {
        panic!("expected two answers (checkout, orders):\n{stdout}");
    };
    assert_eq!(checkout["status"], "confirmed", "checkout:\n{checkout:#}");
    let order = &orders["orders"][0];
    assert_eq!(
        order["order_id"], checkout["order_id"],
        "orders:\n{orders:#}"
    );
    assert_eq!(
        order["tickets"].as_array().map(Vec::len),
        Some(2),
        "orders:\n{orders:#}"
    );
}

fn help(command: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args([command, "--help"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "boxoffice {command} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (command, flag) for every `--flag` the README writes after `boxoffice <command>`.
fn documented_flags(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in readme.lines() {
        for (at, _) in line.match_indices("boxoffice ") {
            let mut words = line[at + "boxoffice ".len()..]
                .split_whitespace()
                .peekable();
            // `cargo run -p boxoffice -- serve …` runs the same command.
            words.next_if_eq(&"--");
            let Some(command) = words.next().filter(|c| {
                c.starts_with(|c: char| c.is_ascii_lowercase())
                    && c.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            }) else {
                continue;
            };
            let rest = words.take_while(|w| !w.contains('|') && !w.starts_with('#'));
            for word in rest {
                let flag = word
                    .trim_start_matches('[')
                    .trim_end_matches([']', '`', ',']);
                if let Some(name) = flag.strip_prefix("--") {
                    out.push((
                        command.to_string(),
                        format!("--{}", name.split('=').next().unwrap_or(name)),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn every_flag_the_readme_shows_is_a_flag_of_its_command() {
    let flags = documented_flags(&readme());
    assert!(flags.len() >= 10, "found only {flags:?}");
    let wrong: Vec<String> = (flags.iter())
        .filter(|(command, flag)| {
            !help(command).contains(&format!("{flag} "))
                && !help(command).contains(&format!("{flag}\n"))
        })
        .map(|(command, flag)| format!("boxoffice {command} {flag}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the README shows flags the binary does not take:\n{}",
        wrong.join("\n")
    );
}

/// The keys of the README's configuration table: each row's first cell, where
/// "`a.b` / `c`" and "`a.b`, `c`" name siblings and "`.c`" a child of the row's first key.
fn documented_keys(readme: &str) -> Vec<String> {
    let table = readme
        .split("| key | default | meaning |")
        .nth(1)
        .expect("the README's configuration table");
    let mut keys = Vec::new();
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cell = row.split('|').nth(1).unwrap_or("");
        let mut parent = String::new();
        for token in cell.split('`').skip(1).step_by(2) {
            if token.starts_with("--") || token.starts_with("BOXOFFICE_") {
                continue;
            }
            let key = match token.strip_prefix('.') {
                Some(child) => format!("{}.{child}", keys.last().map(String::as_str).unwrap_or("")),
                None if !token.contains('.') && !parent.is_empty() => format!("{parent}.{token}"),
                None => token.to_string(),
            };
            if parent.is_empty() {
                parent = key
                    .rsplit_once('.')
                    .map(|(p, _)| p.to_string())
                    .unwrap_or_default();
            }
            keys.push(key);
        }
    }
    keys
}

/// Whether the configuration reads `key`: a value of the wrong shape (a table) for it is
/// refused for its type. An unknown key is refused as unknown, or, in a section that
/// ignores unknown keys, accepted.
fn is_read(key: &str, dir: &Path) -> Result<(), String> {
    let file: PathBuf = dir.join("probe.toml");
    std::fs::write(&file, format!("{key} = {{ readme_probe = 1 }}\n")).unwrap();
    match Config::load(Some(&file), &Overrides::default()) {
        Ok(_) => Err("accepted any value: the configuration ignores it".into()),
        // A figment error says whether the key was unknown; the configuration's own checks
        // (a rule between keys) only run once every key was read.
        Err(e) => match e
            .downcast_ref::<figment::Error>()
            .into_iter()
            .flat_map(|e| e.clone().into_iter())
            .find(|e| matches!(e.kind, figment::error::Kind::UnknownField(..)))
        {
            Some(unknown) => Err(unknown.to_string()),
            None => Ok(()),
        },
    }
}

/// Keys the README's prose and TOML examples set: "`[section] key = …`" in a sentence,
/// and every `key =` of a ```toml block under its `[section]`.
fn keys_in_examples(readme: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for (at, _) in readme.match_indices("`[") {
        let text = readme[at + 2..].split('`').next().unwrap_or("");
        let Some((section, rest)) = text.split_once("] ") else {
            continue;
        };
        if let Some((key, _)) = rest.split_once(" = ").filter(|(k, _)| !k.contains(' ')) {
            keys.push(format!("{section}.{key}"));
        }
    }
    for block in readme.split("```toml\n").skip(1) {
        let mut section = String::new();
        for line in block.lines().take_while(|l| !l.starts_with("```")) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_string();
            } else if let Some((key, _)) = line.split_once(" = ") {
                keys.push(format!("{section}.{}", key.trim()));
            }
        }
    }
    keys
}

#[test]
fn every_configuration_key_the_readme_lists_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let readme = readme();
    let examples = keys_in_examples(&readme);
    assert!(examples.len() >= 8, "found only {examples:?}");
    let keys = documented_keys(&readme)
        .into_iter()
        .chain(examples)
        .collect::<Vec<_>>();
    let wrong: Vec<String> = (keys.iter())
        .filter_map(|k| is_read(k, dir.path()).err().map(|e| format!("{k}: {e}")))
        .collect();
    assert!(keys.len() > 60, "found only {keys:?}");
    assert!(
        wrong.is_empty(),
        "the README lists keys that are not configuration:\n{}",
        wrong.join("\n")
    );
    assert!(is_read("engine.no_such_key", dir.path()).is_err());
    assert!(is_read("http.no_such_key", dir.path()).is_err());
}

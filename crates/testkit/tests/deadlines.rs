//! Every async integration test of the workspace runs under a deadline: it is declared
//! with `#[boxoffice_testkit::test]` (or expanded from a testkit suite), never with a
//! bare `#[tokio::test]`, which would let a hang hold the whole run.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The test sources of every crate: `crates/*/tests/**/*.rs`.
fn test_sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates)
        .expect("the crates directory")
        .flatten()
    {
        rust_files(&krate.path().join("tests"), &mut files);
    }
    files
}

#[test]
fn no_integration_test_is_a_bare_tokio_test_without_a_deadline() {
    let files = test_sources();
    assert!(
        files.len() > 20,
        "found only {} test files; is the scan looking in the right place?",
        files.len()
    );
    let bare: Vec<String> = (files.iter())
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("a readable test file");
            let lines: Vec<(usize, String)> = (text.lines().enumerate())
                .filter(|(_, l)| l.trim_start().starts_with("#[tokio::test"))
                .map(|(n, _)| (n + 1, f.display().to_string()))
                .collect();
            lines
        })
        .map(|(n, f)| format!("{f}:{n}"))
        .collect();
    assert!(
        bare.is_empty(),
        "these tests are bare tokio tests; declare them with \
         #[boxoffice_testkit::test] (a tokio test with a deadline):\n{}",
        bare.join("\n")
    );
}

//! docs/ARCHITECTURE.md is the map from each promise to the code that keeps it, so the
//! map must not rot: every relative link in it and in the README names a file that
//! exists (and a heading that exists, when it carries an anchor), every promise P1–P8
//! has its paragraph with at least one link, and every code comment that points into
//! the document ("docs/ARCHITECTURE.md §3", "… P6") names a section or promise that is
//! there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The text outside fenced code blocks, line by line (examples are not links).
fn prose(markdown: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push(line);
        }
    }
    out
}

/// Every `[text](target)` target of a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(&after[..end]);
        rest = &after[end..];
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    prose(markdown)
        .into_iter()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Broken relative links of one Markdown file, as "target (reason)".
fn broken_links(doc: &Path) -> Vec<String> {
    let text = read(doc);
    let dir = doc.parent().expect("a document's directory");
    let mut broken = Vec::new();
    for line in prose(&text) {
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                doc.to_path_buf()
            } else {
                dir.join(file)
            };
            if !path.exists() {
                broken.push(format!("{target} (no such file)"));
            } else if !anchor.is_empty()
                && path.extension().is_some_and(|x| x == "md")
                && !anchors(&read(&path)).contains(anchor)
            {
                broken.push(format!("{target} (no such heading)"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_architecture_and_the_readme_names_an_existing_file() {
    let docs = ["docs/ARCHITECTURE.md", "README.md", "docs/BENCHMARKS.md"];
    let mut broken = Vec::new();
    for doc in docs {
        let path = repo().join(doc);
        broken.extend(
            broken_links(&path)
                .into_iter()
                .map(|b| format!("{doc}: {b}")),
        );
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_sees_links_and_headings() {
    let line = "kept in [a](../x.rs) and [b](y.md#two-tiers), not [c] alone";
    assert_eq!(link_targets(line), ["../x.rs", "y.md#two-tiers"]);
    assert_eq!(
        slug(" 2. Two tiers, four concerns"),
        "2-two-tiers-four-concerns"
    );
    let links = read(&repo().join("docs/ARCHITECTURE.md"));
    assert!(
        prose(&links).iter().flat_map(|l| link_targets(l)).count() > 40,
        "the architecture document should link the code that keeps each promise"
    );
}

/// The paragraph "**Pn — …**" of "Where each promise is enforced", up to the next one.
fn promise_paragraph(architecture: &str, n: u8) -> Option<String> {
    let start = architecture.find(&format!("**P{n} —"))?;
    let rest = &architecture[start + 2..];
    let end = rest
        .find("\n**P")
        .or_else(|| rest.find("\n## "))
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

#[test]
fn every_promise_is_listed_and_says_with_links_where_it_is_kept() {
    let architecture = read(&repo().join("docs/ARCHITECTURE.md"));
    for n in 1..=8 {
        assert!(
            architecture.contains(&format!("| P{n} |")),
            "P{n} is missing from the table of promises"
        );
        let paragraph = promise_paragraph(&architecture, n)
            .unwrap_or_else(|| panic!("P{n} has no paragraph saying where it is enforced"));
        let links = prose(&paragraph)
            .iter()
            .flat_map(|l| link_targets(l))
            .count();
        assert!(links > 0, "P{n}'s paragraph links no file:\n{paragraph}");
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        if path.is_dir() && name != "target" && name != ".git" {
            sources(&path, out);
        } else if path
            .extension()
            .is_some_and(|x| ["rs", "lua", "sql", "sh", "toml"].iter().any(|e| x == *e))
        {
            out.push(path);
        }
    }
}

/// What follows each "ARCHITECTURE.md " in a text: "§3", "P6", "§2, P7" …
fn cited_parts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("ARCHITECTURE.md ") {
        let rest = &text[at + "ARCHITECTURE.md ".len()..];
        let cited = rest.split([')', '\n', ';', ':']).next().unwrap_or("");
        for part in cited.split(", ") {
            let part = part.trim().trim_end_matches('.');
            if part.starts_with('§') || (part.starts_with('P') && part.len() == 2) {
                out.push(part.to_string());
            }
        }
    }
    out
}

#[test]
fn code_cites_sections_and_promises_the_architecture_has() {
    let architecture = read(&repo().join("docs/ARCHITECTURE.md"));
    let mut files = Vec::new();
    for dir in ["crates", "migrations", "scripts", "bench"] {
        sources(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} sources", files.len());
    let this_file = Path::new(file!()).file_name();
    let mut wrong = Vec::new();
    for file in files.iter().filter(|f| f.file_name() != this_file) {
        let text = read(file);
        let file = file.strip_prefix(repo()).unwrap_or(file);
        if text.contains("DESIGN §") || text.contains("DESIGN P") {
            wrong.push(format!(
                "{}: cites a design note outside the repo",
                file.display()
            ));
        }
        for part in cited_parts(&text) {
            let present = match part.strip_prefix('§') {
                Some(n) => architecture.contains(&format!("\n## {n}. ")),
                None => architecture.contains(&format!("**{part} —")),
            };
            if !present {
                wrong.push(format!(
                    "{}: docs/ARCHITECTURE.md has no {part}",
                    file.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn citations_are_read_section_by_section() {
    let text = "// (docs/ARCHITECTURE.md §2, P7): and (docs/ARCHITECTURE.md P4).";
    assert_eq!(cited_parts(text), ["§2", "P7", "P4"]);
}

#[test]
fn every_crate_is_in_the_architectures_table_and_the_readmes_list() {
    let architecture = read(&repo().join("docs/ARCHITECTURE.md"));
    let readme = read(&repo().join("README.md"));
    let crates: Vec<String> = std::fs::read_dir(repo().join("crates"))
        .expect("the crates directory")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(crates.len() > 10, "found only {crates:?}");
    let missing: Vec<String> = (crates.iter())
        .filter(|c| !architecture.contains(&format!("| [{c}](../crates/{c}/src/lib.rs) |")))
        .map(|c| format!("docs/ARCHITECTURE.md §5: {c}"))
        .chain(
            (crates.iter())
                .filter(|c| !readme.contains(&format!("\ncrates/{c} ")))
                .map(|c| format!("README.md, \"Architecture in a few lines\": {c}")),
        )
        .collect();
    assert!(
        missing.is_empty(),
        "crates not described:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_repository_path_the_readme_names_in_code_exists() {
    let readme = read(&repo().join("README.md"));
    let roots = ["crates/", "scripts/", "docs/", "migrations/"];
    let named: Vec<&str> = (readme.split('`').skip(1).step_by(2))
        .filter(|t| roots.iter().any(|r| t.starts_with(r)) && !t.contains(' '))
        .collect();
    assert!(named.len() >= 4, "found only {named:?}");
    let missing: Vec<&&str> = named.iter().filter(|p| !repo().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "README.md names paths that do not exist: {missing:?}"
    );
}

use std::path::Path;

use axum::http::HeaderMap;

use super::*;
use crate::code::ErrorCode;

fn app_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/app")
}

fn with_encoding(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_str(value).unwrap(),
    );
    h
}

#[test]
fn every_file_of_the_app_directory_is_embedded() {
    let mut on_disk: Vec<String> = std::fs::read_dir(app_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !PAGES.contains(&n.as_str()))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = FILES.iter().map(|(n, _, _)| n.to_string()).collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
}

#[test]
fn the_javascript_stays_under_150_kb_gzipped() {
    let total: usize = (APP.files.values())
        .filter(|b| b.media_type == JS)
        .map(|b| b.gzip.len())
        .sum();
    assert!(total > 0);
    assert!(total <= 150 * 1024, "{total} bytes of JavaScript gzipped");
}

#[test]
fn the_pages_name_only_hashed_embedded_files_and_map_every_module() {
    for page in [&APP.index, &APP.console] {
        names_only_hashed_files(std::str::from_utf8(&page.plain).unwrap());
    }
    let console = String::from_utf8(APP.console.plain.to_vec()).unwrap();
    let entry = hashed_name(
        "console.js",
        FILES.iter().find(|f| f.0 == "console.js").unwrap().2,
    );
    assert!(console.contains(&format!("src=\"{PREFIX}{entry}\"")));
}

fn names_only_hashed_files(page: &str) {
    for (name, media_type, body) in FILES {
        let hashed = hashed_name(name, body);
        assert!(APP.files.contains_key(&hashed), "{hashed}");
        if *media_type == JS {
            // The import map sends the module's plain name to its hashed one.
            assert!(
                page.contains(&format!("\"{PREFIX}{name}\":\"{PREFIX}{hashed}\"")),
                "{name} is not in the import map"
            );
        }
    }
    for (at, _) in page
        .match_indices("src=\"")
        .chain(page.match_indices("href=\"/"))
    {
        let rest = &page[at..];
        let url: String = rest[rest.find('"').unwrap() + 1..]
            .chars()
            .take_while(|c| *c != '"')
            .collect();
        let file = url
            .strip_prefix(PREFIX)
            .expect("the page links only to its files");
        assert!(APP.files.contains_key(file), "{url} is not a hashed file");
    }
    assert!(!page.contains("<!--importmap-->"));
}

#[test]
fn a_hashed_name_changes_with_the_content() {
    assert_ne!(hashed_name("a.js", b"1"), hashed_name("a.js", b"2"));
    assert!(hashed_name("main.js", b"x").starts_with("main."));
    assert!(hashed_name("main.js", b"x").ends_with(".js"));
}

#[test]
fn the_policy_allows_no_inline_code_or_style_but_the_import_map() {
    let csp = APP.csp.to_str().unwrap();
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(csp.contains("style-src 'self';"), "{csp}");
    for page in [&APP.index, &APP.console] {
        let page = String::from_utf8(page.plain.to_vec()).unwrap();
        let start = page.find("<script type=\"importmap\">").unwrap() + 25;
        let map = &page[start..start + page[start..].find("</script>").unwrap()];
        let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(map));
        assert!(csp.contains(&format!("'sha256-{digest}'")), "{csp}");
        assert_eq!(
            page.matches("<script").count(),
            2,
            "one import map, one module"
        );
    }
    // Inline styles and handlers need 'unsafe-inline'; the app sets neither.
    let pages = [
        &("index.html", "", INDEX.as_bytes()),
        &("console.html", "", CONSOLE.as_bytes()),
    ];
    for (name, _, body) in FILES.iter().chain(pages) {
        let text = String::from_utf8_lossy(body);
        for banned in ["style=", "'style'", "innerHTML", "onclick=\"", "eval("] {
            assert!(!text.contains(banned), "{name} contains {banned}");
        }
    }
}

#[test]
fn each_client_gets_the_smallest_encoding_it_takes() {
    let body = &APP.index;
    assert_eq!(body.for_client(&HeaderMap::new()).1, None);
    assert_eq!(body.for_client(&with_encoding("gzip, br")).1, Some("br"));
    assert_eq!(body.for_client(&with_encoding("gzip")).1, Some("gzip"));
    assert_eq!(
        body.for_client(&with_encoding("br;q=0, *;q=0.5")).1,
        Some("gzip")
    );
    assert_eq!(body.for_client(&with_encoding("gzip;q=0")).1, None);
    assert_eq!(body.for_client(&with_encoding("identity")).1, None);
    let (gz, _) = body.for_client(&with_encoding("gzip"));
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    assert_eq!(plain, body.plain);
    let (br, _) = body.for_client(&with_encoding("br"));
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut brotli::Decompressor::new(&br[..], 4096), &mut plain).unwrap();
    assert_eq!(plain, body.plain);
    assert!(br.len() < body.gzip.len(), "brotli is the smaller");
}

#[test]
fn every_error_code_has_a_message_in_plain_words() {
    let errors = std::fs::read_to_string(app_dir().join("errors.js")).unwrap();
    let missing: Vec<&str> = (ErrorCode::ALL.iter())
        .map(|c| c.as_str())
        .filter(|code| !errors.contains(&format!("\n  {code}: '")))
        .collect();
    assert!(
        missing.is_empty(),
        "errors.js has no message for {missing:?}"
    );
}

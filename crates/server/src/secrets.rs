//! Keys kept in the data directory: the token signing keys (so tokens outlive restarts,
//! and every node sharing the directory signs alike: the HMAC key always, the Ed25519
//! keys when tickets and admission tokens are EdDSA) and, unless configured, the
//! operator key. Created on first start, mode 0600.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use boxoffice_domain::Secret;
use uuid::Uuid;

use crate::config::Config;

const SIGNING_FILE: &str = "signing.key";
const OPERATOR_FILE: &str = "operator.key";
const ED25519_FILE: &str = "signing-ed25519.key";

fn random_hex(bytes16: usize) -> String {
    (0..bytes16)
        .map(|_| Uuid::new_v4().simple().to_string())
        .collect()
}

/// Reads the file, or creates it with `make()`. Several nodes may start at once on one
/// data directory: the file is written whole under a private name and then linked into
/// place, so a reader never sees it half written and exactly one writer wins.
fn read_or_create(path: &Path, make: impl FnOnce() -> String) -> anyhow::Result<(String, bool)> {
    if let Ok(s) = std::fs::read_to_string(path) {
        return Ok((s.trim().to_string(), false));
    }
    let value = make();
    let tmp = path.with_extension(format!("tmp-{}", Uuid::new_v4().simple()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(value.as_bytes())?;
    f.sync_all()?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok((value.trim().to_string(), true)),
        // Another node won the race: use its key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let s = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok((s.trim().to_string(), false))
        }
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

/// The signing key ring: `kid:hex` lines, current first.
pub fn signing_keys(dir: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let (text, _) = read_or_create(&dir.join(SIGNING_FILE), || {
        format!("k1:{}\n", random_hex(2))
    })?;
    key_lines(&text, SIGNING_FILE)
}

/// The Ed25519 keys of tickets and admission tokens: `kid:hex` lines of 32-byte seeds,
/// current first. The first start makes one with a random key id (`ed-` and 8 hex
/// digits), so two deployments never publish the same kid.
pub fn ed25519_keys(dir: &Path) -> anyhow::Result<Vec<(String, [u8; 32])>> {
    let (text, _) = read_or_create(&dir.join(ED25519_FILE), || {
        format!("ed-{}:{}\n", &random_hex(1)[..8], random_hex(2))
    })?;
    key_lines(&text, ED25519_FILE)?
        .into_iter()
        .map(|(kid, seed)| {
            let seed: [u8; 32] = seed
                .try_into()
                .map_err(|_| anyhow::anyhow!("{ED25519_FILE}: key {kid:?} is not 32 bytes"))?;
            Ok((kid, seed))
        })
        .collect()
}

fn key_lines(text: &str, file: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (kid, hex) = l
                .trim()
                .split_once(':')
                .with_context(|| format!("{file} lines are kid:hex"))?;
            Ok((
                kid.to_string(),
                decode_hex(hex).with_context(|| format!("{file} holds a bad hex key"))?,
            ))
        })
        .collect()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// The operator key from config (its length checked by `Config::check`), or the one
/// kept in the data directory; and whether it was generated now.
pub fn operator_key(config: &Config) -> anyhow::Result<(Secret, bool)> {
    if let Some(k) = &config.operator_key {
        return Ok((k.clone(), false));
    }
    let (key, generated) = read_or_create(&config.data_dir.join(OPERATOR_FILE), || {
        format!("op_{}", random_hex(1))
    })?;
    Ok((Secret::new(key), generated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_starting_together_on_one_directory_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || read_or_create(&path, || format!("k1:{i:064}")).unwrap())
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            results.iter().filter(|(_, created)| *created).count(),
            1,
            "exactly one writer wins"
        );
        assert!(
            results.iter().all(|(k, _)| *k == results[0].0),
            "everyone reads the winner's key"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary files left"
        );
    }
}

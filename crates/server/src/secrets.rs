//! Keys kept in the data directory: the token signing key (so tokens outlive restarts)
//! and, unless configured, the operator key. Created on first start, mode 0600.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use uuid::Uuid;

use crate::config::Config;

const SIGNING_FILE: &str = "signing.key";
const OPERATOR_FILE: &str = "operator.key";

fn random_hex(bytes16: usize) -> String {
    (0..bytes16)
        .map(|_| Uuid::new_v4().simple().to_string())
        .collect()
}

fn read_or_create(path: &Path, make: impl FnOnce() -> String) -> anyhow::Result<(String, bool)> {
    if let Ok(s) = std::fs::read_to_string(path) {
        return Ok((s.trim().to_string(), false));
    }
    let value = make();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(value.as_bytes())?;
    f.sync_all()?;
    Ok((value, true))
}

/// The signing key ring: `kid:hex` lines, current first.
pub fn signing_keys(dir: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let (text, _) = read_or_create(&dir.join(SIGNING_FILE), || {
        format!("k1:{}\n", random_hex(2))
    })?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (kid, hex) = l
                .trim()
                .split_once(':')
                .context("signing.key lines are kid:hex")?;
            Ok((
                kid.to_string(),
                decode_hex(hex).context("signing.key holds a bad hex key")?,
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

/// The operator key from config, or the one kept in the data directory.
pub fn operator_key(config: &Config) -> anyhow::Result<(String, bool)> {
    if let Some(k) = &config.operator_key {
        anyhow::ensure!(
            k.0.len() >= 16,
            "the operator key must be at least 16 characters"
        );
        return Ok((k.0.clone(), false));
    }
    read_or_create(&config.data_dir.join(OPERATOR_FILE), || {
        format!("op_{}", random_hex(1))
    })
}

//! `boxoffice verify-position`: recomputes a buyer's place in a pre-opening pool from the
//! published fairness document alone (GET /v1/events/{id}/queue/fairness, one file per
//! page), so anyone can check the draw without trusting the server.

use std::path::PathBuf;

use anyhow::{Context, bail};
use boxoffice_domain::BuyerId;
use boxoffice_domain::fairness::{Seed, position_in_pool};
use serde::Deserialize;

#[derive(Deserialize)]
struct Page {
    commitment: String,
    seed: Option<String>,
    pool_size: u64,
    pool: Vec<BuyerId>,
}

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub position: u64,
    pub pool_size: u64,
}

/// Reads the pages, checks the seed against the commitment and the pool against its
/// size, and returns the buyer's position.
pub fn verify(files: &[PathBuf], buyer: BuyerId) -> anyhow::Result<Verified> {
    let mut pool = Vec::new();
    let mut first: Option<(String, Option<String>, u64)> = None;
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let page: Page = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a fairness document", f.display()))?;
        let meta = (page.commitment, page.seed, page.pool_size);
        match &first {
            Some(m) if *m != meta => bail!("{} is a page of another draw", f.display()),
            _ => first = Some(meta),
        }
        pool.extend(page.pool);
    }
    let Some((commitment, seed, size)) = first else {
        bail!("give at least one --file");
    };
    let seed = seed.context("the seed is not revealed yet: the pool is placed at opening")?;
    let seed = Seed::from_hex(&seed).context("the seed is not 64 hex digits")?;
    if !seed.matches(&commitment) {
        bail!("sha256(seed) does not match the published commitment {commitment}");
    }
    if pool.len() as u64 != size {
        bail!(
            "the pages hold {} members, the pool has {size}: fetch every page",
            pool.len()
        );
    }
    let position = position_in_pool(&seed, &pool, buyer)
        .with_context(|| format!("buyer {buyer} is not in the pre-opening pool"))?;
    Ok(Verified {
        position,
        pool_size: size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use boxoffice_domain::fairness::order_pool;
    use serde_json::json;

    #[test]
    fn a_position_is_recomputed_from_the_document_and_a_wrong_seed_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let buyers: Vec<BuyerId> = (0..30).map(|_| BuyerId::random()).collect();
        let seed = Seed([3; 32]);
        let write = |name: &str, seed_hex: String, part: &[BuyerId]| {
            let p = dir.path().join(name);
            let doc = json!({"commitment": seed.commitment(), "seed": seed_hex, "pool_size": 30, "pool": part});
            std::fs::write(&p, doc.to_string()).unwrap();
            p
        };
        let pages = [
            write("a.json", seed.to_hex(), &buyers[..20]),
            write("b.json", seed.to_hex(), &buyers[20..]),
        ];
        let ordered = order_pool(&seed, &buyers);
        let got = verify(&pages, ordered[7]).unwrap();
        assert_eq!(
            got,
            Verified {
                position: 8,
                pool_size: 30
            }
        );
        assert!(
            verify(&pages[..1], ordered[7]).is_err(),
            "a missing page is caught"
        );
        let forged = write("c.json", Seed([4; 32]).to_hex(), &buyers);
        let err = verify(&[forged], ordered[7]).unwrap_err().to_string();
        assert!(err.contains("commitment"), "{err}");
    }
}

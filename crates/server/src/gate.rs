//! `boxoffice gate`: a door with no network. Verifies one barcode (an argument, or the
//! first line of standard input) against a gate bundle saved from
//! `GET /v1/events/{id}/gate-bundle`, prints the verdict and says it in the exit code
//! (0 admit, 1 refuse). It checks the signature, the event, the key, the revocations
//! the bundle lists, the tickets it lists as admitted before it was made, for rotating
//! barcodes the code of the moment and, for events that admit named attendees only,
//! that the barcode carries a name (printed after `ATTENDEE` on the admit line). It
//! cannot know of a scan at another gate after the bundle was made: only the online
//! check-in (`POST /v1/events/{id}/scans`, or the batch upload afterwards) admits a
//! ticket once.

use std::io::{BufRead, Read};
use std::path::Path;

use anyhow::Context;
use boxoffice_domain::Millis;
use boxoffice_domain::ticket::{BarcodeRefusal, GateBundle, MAX_BUNDLE_BYTES, VerifiedTicket};

/// What the gate decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Admit(VerifiedTicket),
    Refuse(BarcodeRefusal),
}

impl Verdict {
    /// The line the gate prints.
    pub fn line(&self) -> String {
        match self {
            Verdict::Admit(t) => {
                let line = format!(
                    "ADMIT ticket {} version {} of event {} (key {})",
                    t.ticket, t.version, t.event, t.key.0
                );
                // The name is signed into the barcode: door staff compare it with an
                // identity document.
                match &t.attendee {
                    Some(name) => format!("{line} ATTENDEE {}", name.as_str()),
                    None => line,
                }
            }
            Verdict::Refuse(r) => {
                let code = serde_json::to_value(r)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                format!("REFUSE {code}: {r}")
            }
        }
    }
}

/// Reads the bundle at `path` and verifies `barcode` (or the first line of stdin) at
/// `now`.
pub fn check(path: &Path, barcode: Option<String>, now: Millis) -> anyhow::Result<Verdict> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading the bundle {}", path.display()))?
        .len();
    if size > MAX_BUNDLE_BYTES as u64 {
        anyhow::bail!("{} is larger than any gate bundle", path.display());
    }
    let json = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let bundle = GateBundle::from_json(&json)
        .with_context(|| format!("{} is not a gate bundle", path.display()))?;
    let barcode = match barcode {
        Some(b) => b,
        None => first_line()?,
    };
    Ok(match bundle.verify(barcode.trim(), now) {
        Ok(t) => Verdict::Admit(t),
        Err(r) => Verdict::Refuse(r),
    })
}

fn first_line() -> anyhow::Result<String> {
    let mut line = String::new();
    // A barcode is a few hundred characters; a longer line is not one.
    std::io::stdin()
        .lock()
        .take(4096)
        .read_line(&mut line)
        .context("reading the barcode from standard input")?;
    Ok(line)
}

//! Where a rehearsal may send its crowd: only the targets it was given, and only on
//! loopback unless the operator says the remote targets are theirs to load.

use std::net::IpAddr;

/// Checks and normalizes the targets (no trailing slash).
pub fn check(targets: &[String], allow_remote: bool) -> anyhow::Result<Vec<String>> {
    anyhow::ensure!(!targets.is_empty(), "give at least one --target URL");
    targets
        .iter()
        .map(|t| {
            let url = reqwest::Url::parse(t).map_err(|e| anyhow::anyhow!("--target {t}: {e}"))?;
            anyhow::ensure!(
                matches!(url.scheme(), "http" | "https"),
                "--target {t}: only http and https"
            );
            let host = url.host_str().unwrap_or_default();
            anyhow::ensure!(
                allow_remote || loopback(host),
                "--target {t} is not on this machine: a rehearsal loads its target like a \
                 real on-sale, so a remote one needs --allow-remote (only for deployments \
                 you run)"
            );
            Ok(t.trim_end_matches('/').to_owned())
        })
        .collect()
}

fn loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn only_loopback_targets_are_taken_without_allow_remote() {
        let ok = check(
            &["http://127.0.0.1:8080/".into(), "http://[::1]:9/".into()],
            false,
        );
        assert_eq!(ok.unwrap(), vec!["http://127.0.0.1:8080", "http://[::1]:9"]);
        assert!(check(&["http://localhost:1".into()], false).is_ok());
        let remote = check(&["https://tickets.example.com".into()], false);
        assert!(remote.unwrap_err().to_string().contains("--allow-remote"));
        assert!(check(&["https://tickets.example.com".into()], true).is_ok());
        assert!(check(&["ftp://127.0.0.1".into()], false).is_err());
        assert!(check(&[], false).is_err());
    }
}

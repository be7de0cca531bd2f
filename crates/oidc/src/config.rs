//! `[oidc]`: which provider to trust and how to read its tokens.

use std::collections::HashSet;

use jsonwebtoken::Algorithm;
use serde::Deserialize;

/// One audience or a list of them; a token's `aud` must name at least one.
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "OneOrMany")]
pub struct Audiences(pub Vec<String>);

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrMany> for Audiences {
    fn from(v: OneOrMany) -> Self {
        match v {
            OneOrMany::One(a) => Audiences(vec![a]),
            OneOrMany::Many(a) => Audiences(a),
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer identifier; a token's `iss` must equal it exactly.
    pub issuer: String,
    /// The audience(s) our tokens are issued for (the API's identifier at the provider).
    pub audience: Audiences,
    /// Where the provider publishes its signing keys (JWKS), http:// or https://.
    pub jwks_url: String,
    /// The claim holding the buyer's id, mapped to UUIDv5(URL namespace,
    /// `"<issuer>#<value>"`). Default "sub".
    #[serde(default = "defaults::buyer_claim")]
    pub buyer_claim: String,
    /// Whether a buyer claim that is a UUID is the buyer id itself, for a platform whose
    /// provider's subjects are the buyer ids of its own records. Off by default: every
    /// value then maps into this issuer's namespace, so no value a provider lets its
    /// users choose (a username claim) can name a buyer id that came from elsewhere
    /// (self sign-up, a token the operator minted, an earlier provider).
    #[serde(default)]
    pub uuid_claims_are_buyer_ids: bool,
    /// A boolean claim (true or "true") saying the provider verified the buyer; empty for
    /// none. Default "email_verified".
    #[serde(default = "defaults::verified_claim")]
    pub verified_claim: String,
    /// A claim with the account's creation time in seconds since the epoch, for
    /// account-age rules; empty for none (such rules then refuse). Default none.
    #[serde(default)]
    pub created_at_claim: String,
    /// A claim naming the provider's login session, so tokens refreshed within it stay
    /// one session for ticket binding; without it, all of a buyer's tokens are one
    /// session. Default "sid".
    #[serde(default = "defaults::session_claim")]
    pub session_claim: String,
    /// Signature algorithms accepted: RS256, ES256, EdDSA (also RS384/RS512, PS256-512,
    /// ES384). HMAC algorithms are never accepted. Default ["RS256", "ES256", "EdDSA"].
    #[serde(default = "defaults::algorithms")]
    pub algorithms: Vec<String>,
    /// How long fetched keys are used before they are fetched again. Default 600 s.
    #[serde(default = "defaults::jwks_cache_ttl_s")]
    pub jwks_cache_ttl_s: u64,
    /// Least time between two fetches, whatever the cause: a flood of tokens naming
    /// unknown key ids costs the provider at most one request per this. Default 30 s.
    #[serde(default = "defaults::jwks_refetch_min_s")]
    pub jwks_refetch_min_s: u64,
    /// Timeout of one JWKS request. Default 5000 ms.
    #[serde(default = "defaults::fetch_timeout_ms")]
    pub fetch_timeout_ms: u64,
    /// Clock skew allowed on `exp` and `nbf`. Default 30 s.
    #[serde(default = "defaults::leeway_s")]
    pub leeway_s: u64,
}

mod defaults {
    pub fn buyer_claim() -> String {
        "sub".into()
    }
    pub fn verified_claim() -> String {
        "email_verified".into()
    }
    pub fn session_claim() -> String {
        "sid".into()
    }
    pub fn algorithms() -> Vec<String> {
        vec!["RS256".into(), "ES256".into(), "EdDSA".into()]
    }
    pub fn jwks_cache_ttl_s() -> u64 {
        600
    }
    pub fn jwks_refetch_min_s() -> u64 {
        30
    }
    pub fn fetch_timeout_ms() -> u64 {
        5_000
    }
    pub fn leeway_s() -> u64 {
        30
    }
}

/// The JWKS must come over HTTPS: whoever can change it in transit can sign any
/// buyer's identity. Plain HTTP only to this machine (a provider beside the node, a
/// test's own JWKS).
fn check_jwks_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("oidc.jwks_url must be an https:// URL ({e})"))?;
    let host = parsed.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err(format!(
            "oidc.jwks_url must be an https:// URL: keys fetched over plain http from {} \
             could be replaced in transit (http:// is accepted only for this machine)",
            host
        )),
        other => Err(format!(
            "oidc.jwks_url must be an https:// URL, not {other}://"
        )),
    }
}

impl OidcConfig {
    /// The settings that must be right before any token can be judged; returns the
    /// accepted algorithms.
    pub(crate) fn check(&self) -> Result<HashSet<Algorithm>, String> {
        if self.issuer.is_empty() || self.issuer.contains('#') {
            return Err("oidc.issuer must be the provider's issuer URL (no fragment)".into());
        }
        if self.audience.0.is_empty() || self.audience.0.iter().any(String::is_empty) {
            return Err("oidc.audience must name the audience tokens are issued for".into());
        }
        check_jwks_url(&self.jwks_url)?;
        if self.buyer_claim.is_empty() {
            return Err("oidc.buyer_claim must name a claim (default \"sub\")".into());
        }
        let mut out = HashSet::new();
        for name in &self.algorithms {
            let alg: Algorithm = name
                .parse()
                .map_err(|_| format!("oidc.algorithms: unknown algorithm {name:?}"))?;
            if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
                return Err(format!(
                    "oidc.algorithms: {name} needs a shared secret; use the provider's public keys"
                ));
            }
            out.insert(alg);
        }
        if out.is_empty() {
            return Err("oidc.algorithms must accept at least one algorithm".into());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::check_jwks_url;

    /// A JWKS fetched over plain http from another machine could be replaced in
    /// transit, and with it every buyer identity the node accepts: refused, and only
    /// this machine may serve it without TLS.
    #[test]
    fn a_jwks_url_must_be_https_unless_it_is_this_machine() {
        for ok in [
            "https://id.example.com/.well-known/jwks.json",
            "http://127.0.0.1:8080/jwks",
            "http://localhost/jwks",
            "http://[::1]:9000/jwks",
        ] {
            assert_eq!(check_jwks_url(ok), Ok(()), "{ok}");
        }
        for refused in [
            "http://id.example.com/jwks",
            "http://10.0.0.7/jwks",
            "ftp://id.example.com/jwks",
            "id.example.com/jwks",
        ] {
            let e = check_jwks_url(refused).unwrap_err();
            assert!(
                e.contains("oidc.jwks_url must be an https:// URL"),
                "{refused}: {e}"
            );
        }
    }
}

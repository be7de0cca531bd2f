//! The hosted human-check verifiers: Cloudflare Turnstile, hCaptcha and reCAPTCHA, each
//! asked with its documented siteverify call (a form POST of `secret`, `response` and
//! `remoteip`, answered with JSON `{"success": bool, "error-codes": [..]}`) over TLS,
//! within `[human_check] timeout_ms`. The secrets live here, in the server's
//! configuration, and go nowhere else. An answer that blames our own account (a wrong
//! secret or site key) or the provider itself counts as "could not say", so the event's
//! fail-open or fail-closed choice applies instead of refusing the buyer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::Secret;
use boxoffice_domain::human_check::HostedProvider;
use boxoffice_engine::ports::{HumanVerifier, VerifierDown};
use serde::Deserialize;

/// Largest verifier answer read; theirs are a few hundred bytes.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// `[human_check]`: the accounts this server has with hosted verifiers. An event may
/// ask only a provider listed here.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HumanCheckConfig {
    /// Longest wait for a verifier's answer, connecting included; past it the event's
    /// `when_down` applies. Default 3000 ms.
    pub timeout_ms: u64,
    /// Cloudflare Turnstile. Default none.
    pub turnstile: Option<VerifierAccount>,
    /// hCaptcha. Default none.
    pub hcaptcha: Option<VerifierAccount>,
    /// Google reCAPTCHA (v2 or v3 through the siteverify endpoint). Default none.
    pub recaptcha: Option<VerifierAccount>,
    /// A PEM file of CA certificates trusted for the verifiers besides the system's
    /// store (a verifier reached through a proxy with a private CA). Default none.
    pub ca_file: Option<PathBuf>,
}

impl Default for HumanCheckConfig {
    fn default() -> Self {
        HumanCheckConfig {
            timeout_ms: 3_000,
            turnstile: None,
            hcaptcha: None,
            recaptcha: None,
            ca_file: None,
        }
    }
}

/// One provider account.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifierAccount {
    /// The public key the buyer's widget is drawn with (shown in the queue document).
    pub site_key: String,
    /// The secret key siteverify is called with; never shown anywhere.
    pub secret: Secret,
    /// Where siteverify is; default the provider's own. `https://` only.
    pub verify_url: Option<String>,
}

/// The provider's documented siteverify endpoint.
pub fn default_verify_url(provider: HostedProvider) -> &'static str {
    match provider {
        HostedProvider::Turnstile => "https://challenges.cloudflare.com/turnstile/v0/siteverify",
        HostedProvider::Hcaptcha => "https://api.hcaptcha.com/siteverify",
        HostedProvider::Recaptcha => "https://www.google.com/recaptcha/api/siteverify",
    }
}

impl HumanCheckConfig {
    fn account(&self, provider: HostedProvider) -> Option<&VerifierAccount> {
        match provider {
            HostedProvider::Turnstile => self.turnstile.as_ref(),
            HostedProvider::Hcaptcha => self.hcaptcha.as_ref(),
            HostedProvider::Recaptcha => self.recaptcha.as_ref(),
        }
    }

    /// Keys present, URLs that are TLS, a timeout that bounds something.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=60_000).contains(&self.timeout_ms),
            "human_check.timeout_ms must be between 1 and 60000 (it is {})",
            self.timeout_ms
        );
        for p in HostedProvider::ALL {
            let Some(a) = self.account(p) else { continue };
            let name = p.as_str();
            anyhow::ensure!(
                !a.site_key.is_empty() && !a.secret.is_empty(),
                "human_check.{name} needs both site_key and secret"
            );
            let url = a.verify_url.as_deref().unwrap_or(default_verify_url(p));
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| anyhow::anyhow!("human_check.{name}.verify_url {url:?}: {e}"))?;
            anyhow::ensure!(
                parsed.scheme() == "https",
                "human_check.{name}.verify_url must be https://: the secret travels with every call"
            );
        }
        Ok(())
    }
}

struct Account {
    site_key: String,
    secret: Secret,
    url: String,
}

/// Asks the configured providers.
pub struct HostedVerifiers {
    http: reqwest::Client,
    accounts: HashMap<HostedProvider, Account>,
}

impl HostedVerifiers {
    /// `None` when no provider is configured.
    pub fn from_config(config: &HumanCheckConfig) -> anyhow::Result<Option<HostedVerifiers>> {
        config.check()?;
        let accounts: HashMap<_, _> = HostedProvider::ALL
            .into_iter()
            .filter_map(|p| {
                config.account(p).map(|a| {
                    let url = a.verify_url.clone();
                    let account = Account {
                        site_key: a.site_key.clone(),
                        secret: a.secret.clone(),
                        url: url.unwrap_or_else(|| default_verify_url(p).to_owned()),
                    };
                    (p, account)
                })
            })
            .collect();
        if accounts.is_empty() {
            return Ok(None);
        }
        let timeout = Duration::from_millis(config.timeout_ms);
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(path) = &config.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("human_check.ca_file {}: {e}", path.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| anyhow::anyhow!("human_check.ca_file {}: {e}", path.display()))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "human_check.ca_file {} holds no certificate",
                path.display()
            );
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build()?;
        Ok(Some(HostedVerifiers { http, accounts }))
    }
}

/// What every siteverify answers (other fields ignored).
#[derive(Deserialize)]
struct Answer {
    success: bool,
    #[serde(default, rename = "error-codes")]
    error_codes: Vec<String>,
}

/// Error codes that speak of our account or the provider, not of the buyer's token.
fn ours_or_theirs(code: &str) -> bool {
    matches!(
        code,
        "missing-input-secret"
            | "invalid-input-secret"
            | "sitekey-secret-mismatch"
            | "invalid-sitekey"
            | "internal-error"
            | "bad-request"
    )
}

#[async_trait]
impl HumanVerifier for HostedVerifiers {
    fn site_key(&self, provider: HostedProvider) -> Option<&str> {
        self.accounts.get(&provider).map(|a| a.site_key.as_str())
    }

    async fn verify(
        &self,
        provider: HostedProvider,
        token: &str,
        ip: Option<IpAddr>,
    ) -> Result<bool, VerifierDown> {
        let account = self
            .accounts
            .get(&provider)
            .ok_or_else(|| VerifierDown(format!("no {} account", provider.as_str())))?;
        let ip = ip.map(|ip| ip.to_string());
        let mut form: Vec<(&str, &str)> = vec![
            ("secret", account.secret.expose().as_str()),
            ("response", token),
        ];
        if let Some(ip) = &ip {
            form.push(("remoteip", ip.as_str()));
        }
        if provider == HostedProvider::Hcaptcha {
            // hCaptcha checks the token was issued for this site key when given one.
            form.push(("sitekey", account.site_key.as_str()));
        }
        let down = |e: &dyn std::fmt::Display| VerifierDown(format!("{}: {e}", provider.as_str()));
        let mut res = self
            .http
            .post(&account.url)
            .form(&form)
            .send()
            .await
            // Without the URL: the request's URL is ours, its error text may carry it.
            .map_err(|e| down(&e.without_url()))?;
        if !res.status().is_success() {
            return Err(down(&format!("answered {}", res.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| down(&e.without_url()))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(down(&"an answer too large"));
            }
            body.extend_from_slice(&chunk);
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| down(&e))?;
        if !answer.success
            && let Some(code) = answer.error_codes.iter().find(|c| ours_or_theirs(c))
        {
            return Err(down(&format!("error code {code}")));
        }
        Ok(answer.success)
    }
}

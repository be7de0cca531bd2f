//! From a verified token's claims to a buyer: the validity window on the engine's
//! clock, the buyer id, and what eligibility rules read.

use boxoffice_domain::token::TokenError;
use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::ExternalIdentity;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::{Claims, OidcConfig};

/// Longest claim value taken as a buyer or session id.
const MAX_ID: usize = 255;

/// `exp` and `nbf` (seconds since the epoch) against `now`, allowing `leeway_s` of skew.
pub(crate) fn check_window(claims: &Claims, now: Millis, leeway_s: u64) -> Result<(), TokenError> {
    let leeway = i64::try_from(leeway_s)
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    let exp = seconds(claims.get("exp")).ok_or(TokenError::Malformed)?;
    if exp.saturating_add(leeway) <= now.0 {
        return Err(TokenError::Expired);
    }
    if let Some(v) = claims.get("nbf") {
        let nbf = seconds(Some(v)).ok_or(TokenError::Malformed)?;
        if nbf.saturating_sub(leeway) > now.0 {
            return Err(TokenError::NotYetValid);
        }
    }
    Ok(())
}

/// A NumericDate (integer or fractional seconds, or a string of them) as milliseconds.
fn seconds(v: Option<&Value>) -> Option<i64> {
    let secs = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    secs.is_finite().then_some((secs * 1000.0) as i64)
}

/// The buyer id for the provider's `value` of the buyer claim: UUIDv5 in the URL
/// namespace of `"<issuer>#<value>"` (an issuer URL has no fragment, so the pair is
/// unambiguous).
pub fn buyer_id(issuer: &str, value: &str) -> BuyerId {
    BuyerId(Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("{issuer}#{value}").as_bytes(),
    ))
}

/// The buyer id `config` gives `value`: the UUID it is, when the operator says the
/// provider's UUIDs are the platform's buyer ids; else [`buyer_id`].
fn buyer_of(config: &OidcConfig, value: &str) -> BuyerId {
    match Uuid::parse_str(value) {
        Ok(id) if config.uuid_claims_are_buyer_ids => BuyerId(id),
        _ => buyer_id(&config.issuer, value),
    }
}

fn text<'a>(claims: &'a Claims, name: &str) -> Option<&'a str> {
    match claims.get(name)? {
        Value::String(s) if !s.is_empty() && s.len() <= MAX_ID => Some(s),
        _ => None,
    }
}

/// A short, fixed-length session id from the provider's session (or the buyer).
fn session_of(issuer: &str, what: &str) -> String {
    let digest = Sha256::digest(format!("{issuer}#{what}").as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn identity(
    config: &OidcConfig,
    claims: &Claims,
) -> Result<ExternalIdentity, TokenError> {
    let value = text(claims, &config.buyer_claim).ok_or(TokenError::Malformed)?;
    let buyer = buyer_of(config, value);
    let session = match text(claims, &config.session_claim) {
        Some(sid) => session_of(&config.issuer, &format!("sid:{sid}")),
        None => session_of(&config.issuer, &format!("buyer:{buyer}")),
    };
    // Some providers send booleans as strings ("true").
    let verified = match claims.get(&config.verified_claim) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    };
    let account_created_at = match config.created_at_claim.as_str() {
        "" => None,
        name => seconds(claims.get(name)).map(Millis),
    };
    Ok(ExternalIdentity {
        buyer,
        session,
        verified,
        account_created_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_subject_maps_to_one_stable_uuid_per_issuer() {
        let one = buyer_id("https://a", "auth0|12345");
        assert_eq!(one, buyer_id("https://a", "auth0|12345"));
        assert_ne!(one, buyer_id("https://b", "auth0|12345"));
        assert_eq!(one.0.get_version_num(), 5);
    }

    /// A provider whose users choose the claim's value (a username) could otherwise
    /// name any buyer id it learns (a transfer's recipient, a self-signed-up buyer)
    /// and sign in as that buyer.
    #[test]
    fn a_uuid_claim_is_the_buyer_id_only_when_the_operator_says_so() {
        let uuid = "0b6e2f3a-7f7e-4c44-9a51-3b5d3f0f1b2c";
        let mut config: OidcConfig = serde_json::from_value(serde_json::json!({
            "issuer": "https://a", "audience": "api", "jwks_url": "https://a/jwks",
        }))
        .expect("a config");
        assert_eq!(buyer_of(&config, uuid), buyer_id("https://a", uuid));
        assert_ne!(buyer_of(&config, uuid).0.to_string(), uuid);
        config.uuid_claims_are_buyer_ids = true;
        assert_eq!(buyer_of(&config, uuid).0.to_string(), uuid);
        assert_eq!(buyer_of(&config, "alice"), buyer_id("https://a", "alice"));
    }

    #[test]
    fn the_window_allows_the_leeway_and_no_more() {
        let claims: Claims = serde_json::from_str(r#"{"exp": 100, "nbf": 50}"#).unwrap();
        assert!(check_window(&claims, Millis(129_999), 30).is_ok());
        assert_eq!(
            check_window(&claims, Millis(130_000), 30),
            Err(TokenError::Expired)
        );
        assert!(check_window(&claims, Millis(20_000), 30).is_ok());
        assert_eq!(
            check_window(&claims, Millis(19_999), 30),
            Err(TokenError::NotYetValid)
        );
        let no_exp: Claims = serde_json::from_str(r#"{"nbf": 50}"#).unwrap();
        assert_eq!(
            check_window(&no_exp, Millis(0), 30),
            Err(TokenError::Malformed)
        );
    }
}

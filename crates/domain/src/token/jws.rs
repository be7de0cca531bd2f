//! The compact JWS serialization (RFC 7515): `base64url(header).base64url(payload).
//! base64url(signature)`, the signature covering the first two parts as sent.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;

use super::TokenError;

/// Longest token accepted: ours are a few hundred bytes; anything far larger is not
/// worth decoding.
const MAX_TOKEN: usize = 4_096;

/// A token cut into its parts, nothing decoded yet.
pub(super) struct Parts<'a> {
    pub header: &'a str,
    /// `header.payload`, the bytes the signature covers.
    pub signed: &'a str,
    pub payload: &'a str,
    pub signature: &'a str,
}

pub(super) fn split(token: &str) -> Result<Parts<'_>, TokenError> {
    if token.len() > MAX_TOKEN {
        return Err(TokenError::Malformed);
    }
    let (signed, signature) = token.rsplit_once('.').ok_or(TokenError::Malformed)?;
    let (header, payload) = signed.split_once('.').ok_or(TokenError::Malformed)?;
    if payload.contains('.') {
        return Err(TokenError::Malformed);
    }
    Ok(Parts {
        header,
        signed,
        payload,
        signature,
    })
}

/// The protected header fields a verifier needs.
#[derive(Deserialize)]
pub(super) struct Header<'a> {
    #[serde(borrow)]
    pub alg: Cow<'a, str>,
    #[serde(borrow, default)]
    pub kid: Option<Cow<'a, str>>,
    /// Extensions the signer says must be understood; we understand none (RFC 7515 4.1.11).
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

/// Decodes a protected header we did not write ourselves (the fast path compares the
/// encoded header with our own byte for byte).
pub(super) fn header(encoded: &str) -> Result<(String, Option<String>), TokenError> {
    let json = B64.decode(encoded).map_err(|_| TokenError::Malformed)?;
    let h: Header = serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)?;
    if h.crit.is_some() {
        return Err(TokenError::Malformed);
    }
    Ok((h.alg.into_owned(), h.kid.map(Cow::into_owned)))
}

/// The encoded protected header of tokens signed with `alg` under `kid`.
pub(super) fn encode_header(alg: &str, kid: &str) -> String {
    let json = serde_json::json!({"alg": alg, "typ": "JWT", "kid": kid});
    B64.encode(json.to_string())
}

pub(super) fn encode(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Decodes a signature of exactly `N` bytes.
pub(super) fn signature<const N: usize>(encoded: &str) -> Result<[u8; N], TokenError> {
    let mut out = [0u8; N];
    // base64 of N bytes, unpadded, is ceil(4N/3) characters; anything else is not ours.
    if encoded.len() != (4 * N).div_ceil(3) {
        return Err(TokenError::BadSignature);
    }
    match B64.decode_slice(encoded, &mut out) {
        Ok(n) if n == N => Ok(out),
        _ => Err(TokenError::BadSignature),
    }
}

pub(super) fn payload(encoded: &str) -> Result<Vec<u8>, TokenError> {
    B64.decode(encoded).map_err(|_| TokenError::Malformed)
}

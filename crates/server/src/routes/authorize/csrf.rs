//! The authorization form's CSRF token. Only the page the server just
//! showed, in the same browser, can submit the form:
//!
//! - a random nonce goes to the browser in a cookie (`HttpOnly`,
//!   `SameSite=Strict`, path `/oauth`), reused while it lives so that two
//!   open login tabs both work;
//! - the form carries `expiry.mac`, an HMAC-SHA256, under a server secret
//!   kept in `settings`, of the nonce, the expiry and what the page is for
//!   (client id, redirect URI, state).
//!
//! A cross-site page can neither read the cookie nor compute the MAC, and a
//! token lifted from one page does not fit another request or browser.
//! Nothing is stored per page.

use crate::store::db::params;
use crate::store::{self, StoreError, StoreResult};
use axum::http::{HeaderMap, HeaderValue, header};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie that holds the nonce.
pub(super) const COOKIE: &str = "listpipe_authorize";
/// How long a shown page can be submitted.
pub(super) const FORM_TTL_SECS: i64 = 600;
const SECRET_SETTING: &str = "authorize_secret";
const NONCE_BYTES: usize = 16;

/// What a page was shown for; the token is valid only for the same.
pub(super) struct Binding<'a> {
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub state: Option<&'a str>,
}

/// The server's MAC key, made on first use and kept in `settings`.
pub(super) fn secret(conn: &store::Db) -> StoreResult<Vec<u8>> {
    let stored = store::setting(conn, SECRET_SETTING)?;
    if let Some(key) = stored.as_deref().and_then(|k| hex::decode(k).ok()) {
        return Ok(key);
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    if stored.is_some() {
        store::set_setting(conn, SECRET_SETTING, &hex::encode(&key))?;
        return Ok(key);
    }
    // The first key written is every server's: on PostgreSQL another
    // server process may make one at the same moment.
    let added = conn.exec(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
        params![SECRET_SETTING, hex::encode(&key)],
    )?;
    if added > 0 {
        return Ok(key);
    }
    store::setting(conn, SECRET_SETTING)?
        .and_then(|k| hex::decode(k).ok())
        .ok_or_else(|| StoreError::Internal("the authorization key is unreadable".into()))
}

/// A fresh nonce for a browser that has none.
pub(super) fn new_nonce() -> StoreResult<String> {
    let mut buf = [0u8; NONCE_BYTES];
    getrandom::fill(&mut buf).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    Ok(hex::encode(buf))
}

/// The nonce the browser sent back, if it is well-formed.
pub(super) fn nonce_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| v.len() == NONCE_BYTES * 2 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value that gives the browser its nonce.
pub(super) fn cookie(nonce: &str) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "{COOKIE}={nonce}; Path=/oauth; Max-Age={FORM_TTL_SECS}; HttpOnly; SameSite=Strict"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The hidden form field for a page shown now.
pub(super) fn issue(key: &[u8], nonce: &str, binding: &Binding, now: i64) -> String {
    let expires = now + FORM_TTL_SECS;
    format!(
        "{expires}.{}",
        hex::encode(mac(key, nonce, expires, binding))
    )
}

/// Whether a submitted form carries a live token for this browser and request.
pub(super) fn verify(
    key: &[u8],
    nonce: Option<&str>,
    token: Option<&str>,
    binding: &Binding,
    now: i64,
) -> bool {
    let (Some(nonce), Some(token)) = (nonce, token) else {
        return false;
    };
    let Some((expires, given)) = token.split_once('.') else {
        return false;
    };
    let (Ok(expires), Ok(given)) = (expires.parse::<i64>(), hex::decode(given)) else {
        return false;
    };
    expires > now && constant_time_eq::constant_time_eq(&given, &mac(key, nonce, expires, binding))
}

fn mac(key: &[u8], nonce: &str, expires: i64, b: &Binding) -> [u8; 32] {
    // Each part is length-prefixed, so no two different inputs read the same.
    let mut msg = Vec::new();
    let expires = expires.to_string();
    let parts = [
        "authorize",
        nonce,
        &expires,
        b.client_id,
        b.redirect_uri,
        b.state.unwrap_or("\u{0}none"),
    ];
    for part in parts {
        msg.extend_from_slice(&(part.len() as u64).to_be_bytes());
        msg.extend_from_slice(part.as_bytes());
    }
    hmac_sha256(key, &msg)
}

/// HMAC-SHA256 (RFC 2104), RustCrypto's `hmac`.
#[allow(
    clippy::expect_used,
    reason = "HMAC takes a key of any length: never an error"
)]
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_cases_2_and_6() {
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_token_fits_only_its_browser_request_and_time() {
        let key = b"0123456789abcdef0123456789abcdef";
        let b = Binding {
            client_id: "c1",
            redirect_uri: "http://127.0.0.1:5000/callback",
            state: Some("s1"),
        };
        let t = issue(key, "n1", &b, 1000);
        assert!(verify(key, Some("n1"), Some(&t), &b, 1000));
        assert!(
            !verify(key, Some("n2"), Some(&t), &b, 1000),
            "other browser"
        );
        assert!(!verify(key, None, Some(&t), &b, 1000), "no cookie");
        assert!(!verify(key, Some("n1"), None, &b, 1000), "no field");
        assert!(!verify(b"other key", Some("n1"), Some(&t), &b, 1000));
        assert!(!verify(key, Some("n1"), Some(&t), &b, 1000 + FORM_TTL_SECS));
        let other_state = Binding {
            state: Some("s2"),
            ..b
        };
        assert!(!verify(key, Some("n1"), Some(&t), &other_state, 1000));
        let forged = t.replacen(&(1000 + FORM_TTL_SECS).to_string(), "99999999", 1);
        assert!(!verify(key, Some("n1"), Some(&forged), &b, 1000));
    }
}

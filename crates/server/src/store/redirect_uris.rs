//! Where an OAuth application may be sent its codes. The authorization page
//! redirects only to a URI registered here, so it can never be used as an
//! open redirect.
//!
//! A requested URI matches a registered one when the two are the same
//! string, or (RFC 8252 §7.3, native apps) when both are loopback `http`
//! URIs with the same host, path and query: the port may then differ,
//! because a command-line client listens on whatever port is free.

use super::db::{Backend, Db, params};
use super::{StoreResult, invalid};

/// What `listpipe auth login` listens on (any port); registered for the
/// default account on first start and for accounts made by `accounts create`.
pub const LOGIN_CALLBACK: &str = "http://127.0.0.1/callback";

/// The longest redirect URI accepted.
const MAX_LEN: usize = 2000;

/// Checks a URI before it is registered or redirected to: absolute `http`
/// or `https`, printable ASCII (anything else percent-encoded), no fragment
/// (RFC 6749 §3.1.2), no user info.
pub fn check(uri: &str) -> StoreResult<&str> {
    let uri = uri.trim();
    let refuse = |why: &str| invalid(format!("redirect URI \"{uri}\" {why}"));
    let Some(rest) = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
    else {
        return refuse("must start with https:// or http://");
    };
    if uri.len() > MAX_LEN {
        return refuse(&format!("is longer than {MAX_LEN} characters"));
    }
    if !uri.bytes().all(|b| b.is_ascii_graphic()) {
        return refuse("may hold only printable ASCII (percent-encode the rest)");
    }
    if uri.contains('#') {
        return refuse("must not have a fragment (#...)");
    }
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    if authority.is_empty() || authority.contains('@') {
        return refuse("needs a host (and no user@)");
    }
    Ok(uri)
}

/// Host (lowercase) and path-and-query of a loopback `http` URI.
fn loopback(uri: &str) -> Option<(String, &str)> {
    let rest = uri.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (inner, after) = v6.split_once(']')?;
            (&authority[..inner.len() + 2], after)
        }
        None => match authority.split_once(':') {
            Some((h, _)) => (h, &authority[h.len()..]),
            None => (authority, ""),
        },
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|d| {
            !d.is_empty() && d.len() <= 5 && d.parse::<u32>().is_ok_and(|n| n <= 65535)
        });
    let host = host.to_ascii_lowercase();
    let is_loopback = matches!(host.as_str(), "127.0.0.1" | "[::1]" | "localhost");
    (port_ok && is_loopback).then_some((host, if path.is_empty() { "/" } else { path }))
}

/// Whether `requested` may receive codes for the `registered` URI.
pub fn matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    match (loopback(registered), loopback(requested)) {
        (Some(r), Some(q)) => r == q,
        _ => false,
    }
}

/// Registers a URI for an application; `false` if it was there already.
pub fn register(db: &Db, app_id: i64, uri: &str) -> StoreResult<bool> {
    let uri = check(uri)?;
    let added = db.exec(
        "INSERT INTO oauth_redirect_uris (app_id, uri) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        params![app_id, uri],
    )?;
    Ok(added > 0)
}

/// The application's registered URIs, in order.
pub fn of_app(db: &Db, app_id: i64) -> StoreResult<Vec<String>> {
    // In byte order on both: PostgreSQL's default collation may follow a
    // locale's rules; SQLite knows no collation named "C".
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT uri FROM oauth_redirect_uris WHERE app_id = ?1 ORDER BY uri",
        Backend::Postgres => {
            "SELECT uri FROM oauth_redirect_uris WHERE app_id = ?1 ORDER BY uri COLLATE \"C\""
        }
    };
    db.rows(sql, params![app_id], |r| r.get(0))
}

/// Whether the application may be sent codes at `requested`.
pub fn allows(db: &Db, app_id: i64, requested: &str) -> StoreResult<bool> {
    if check(requested).is_err() {
        return Ok(false);
    }
    Ok(of_app(db, app_id)?
        .iter()
        .any(|registered| matches(registered, requested)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_uris_match_on_any_port_and_nothing_else_does() {
        let r = "http://127.0.0.1/callback";
        assert!(matches(r, "http://127.0.0.1:53117/callback"));
        assert!(matches(
            "http://127.0.0.1:8080/callback",
            "http://127.0.0.1:9/callback"
        ));
        assert!(matches("http://[::1]/cb", "http://[::1]:4000/cb"));
        assert!(matches("http://localhost/cb", "http://LOCALHOST:4000/cb"));
        assert!(!matches(r, "http://127.0.0.1:53117/callback/x"));
        assert!(!matches(r, "http://127.0.0.1:53117/callback?x=1"));
        assert!(!matches(r, "http://localhost:53117/callback"));
        assert!(!matches(r, "https://127.0.0.1:53117/callback"));
        assert!(!matches(r, "http://127.0.0.1.evil.example/callback"));
        assert!(!matches(r, "http://127.0.0.1:99999/callback"));
        assert!(!matches(r, "http://127.0.0.1:1@evil.example/callback"));
        let app = "https://app.example/cb";
        assert!(matches(app, "https://app.example/cb"));
        assert!(!matches(app, "https://app.example:444/cb"));
        assert!(!matches(app, "https://app.example/cb/"));
    }

    #[test]
    fn only_absolute_http_uris_without_fragment_can_be_registered() {
        assert!(check("https://app.example/cb?x=1").is_ok());
        assert!(check("http://127.0.0.1/callback").is_ok());
        for bad in [
            "javascript:alert(1)",
            "/relative",
            "https://app.example/cb#frag",
            "https://user@app.example/cb",
            "https://app.example/a b",
            "https:///cb",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}

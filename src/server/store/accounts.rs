//! Accounts (tenants), their OAuth applications and tokens.
//!
//! A token or secret is `selector || verifier` in hex: the selector finds
//! the row, the SHA-256 of the verifier is compared in constant time. Only
//! hashes are stored, so a copy of the database grants nothing.

use super::db::{Db, params};
use super::{AccountId, StoreError, StoreResult, now};
use crate::api::TokenResponse;
use crate::api::client_info::ClientInfo;
use sha2::{Digest, Sha256};

const SELECTOR_BYTES: usize = 8;
const VERIFIER_BYTES: usize = 16;
/// Lifetime of a refresh token; it outlives the access token (spec §5.8).
pub const REFRESH_TTL_SECS: i64 = 365 * 24 * 3600;
/// An authorization code must be exchanged at once (spec §5.6): its
/// lifetime unless `serve --code-ttl` says otherwise.
pub const CODE_TTL_SECS: i64 = 30;
pub const SCOPE: &str = "oa basic receivers";

/// `bytes` random bytes as hex: the material of every token, code and link.
pub(crate) fn random_hex(bytes: usize) -> StoreResult<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    Ok(hex::encode(buf))
}

/// What is stored of a secret: its SHA-256, never the secret.
pub(crate) fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// Splits a presented token into selector and verifier; `None` if malformed.
fn split(token: &str) -> Option<(&str, &str)> {
    let token = token.trim();
    let n = SELECTOR_BYTES * 2;
    if token.len() != n + VERIFIER_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(token.split_at(n))
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub account: AccountId,
    pub app_id: i64,
    pub selector: String,
    pub expires: i64,
}

impl Caller {
    /// Whether the token is still live: see [`live_at`].
    pub fn is_live(&self) -> bool {
        live_at(self.expires, now())
    }
}

/// Whether a token stamped to expire at `expires` (whole seconds) is live at
/// second `now`: through the whole second it expires in, so it lives at
/// least the `expires_in` it was issued with. Decision: `expires > now`
/// killed a one-second token issued late in a second within milliseconds.
fn live_at(expires: i64, now: i64) -> bool {
    expires >= now
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Access,
    Refresh,
    Code,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Access => "access",
            Kind::Refresh => "refresh",
            Kind::Code => "code",
        }
    }
}

fn mint(
    db: &Db,
    kind: Kind,
    account: AccountId,
    app_id: i64,
    ttl: i64,
    redirect_uri: &str,
) -> StoreResult<String> {
    let selector = random_hex(SELECTOR_BYTES)?;
    let verifier = random_hex(VERIFIER_BYTES)?;
    let t = now();
    db.exec(
        "INSERT INTO tokens (selector, verifier_hash, kind, account_id, app_id, redirect_uri, created, expires)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![selector, hash(&verifier), kind.as_str(), account.0, app_id, redirect_uri, t, t + ttl],
    )?;
    Ok(format!("{selector}{verifier}"))
}

/// Finds a live token of `kind`; expired, revoked or forged ones are `None`.
/// Also answers the redirect URI it was minted for and when it was made.
fn lookup(db: &Db, kind: Kind, token: &str) -> StoreResult<Option<(Caller, String, i64)>> {
    let Some((selector, verifier)) = split(token) else {
        return Ok(None);
    };
    let row = db.opt_row(
        "SELECT verifier_hash, account_id, app_id, expires, redirect_uri, created FROM tokens
         WHERE selector = ?1 AND kind = ?2",
        params![selector, kind.as_str()],
        |r| {
            Ok((
                r.get::<Vec<u8>>(0)?,
                r.get::<i64>(1)?,
                r.get::<i64>(2)?,
                r.get::<i64>(3)?,
                r.get::<String>(4)?,
                r.get::<i64>(5)?,
            ))
        },
    )?;
    let Some((stored, account, app_id, expires, redirect, created)) = row else {
        return Ok(None);
    };
    if !constant_time_eq::constant_time_eq(&stored, &hash(verifier)) || !live_at(expires, now()) {
        return Ok(None);
    }
    let caller = Caller {
        account: AccountId(account),
        app_id,
        selector: selector.to_string(),
        expires,
    };
    Ok(Some((caller, redirect, created)))
}

/// The account behind an access token, if the token is live.
pub fn authenticate(db: &Db, token: &str) -> StoreResult<Option<Caller>> {
    Ok(lookup(db, Kind::Access, token)?.map(|(c, _, _)| c))
}

/// Revokes a token; whether this call did (another may have just now).
pub fn revoke(db: &Db, selector: &str) -> StoreResult<bool> {
    spend(db, selector)
}

/// Deletes a token; whether this call deleted it. A single-use token is
/// spent by the exchange that deletes it: on PostgreSQL two exchanges of
/// one token at once both find it, and the second delete waits for the
/// first to commit and then finds nothing.
fn spend(db: &Db, selector: &str) -> StoreResult<bool> {
    Ok(db.exec("DELETE FROM tokens WHERE selector = ?1", params![selector])? > 0)
}

/// Issues a fresh access + refresh token pair for an application.
pub fn issue_pair(
    db: &Db,
    account: AccountId,
    app_id: i64,
    ttl: i64,
) -> StoreResult<TokenResponse> {
    // Expired rows are of no use to anyone: sweep them while we are here
    // (those no longer `live_at` now: past the second they expire in).
    db.exec("DELETE FROM tokens WHERE expires < ?1", params![now()])?;
    Ok(TokenResponse {
        access_token: mint(db, Kind::Access, account, app_id, ttl, "")?,
        token_type: "bearer".into(),
        expires_in: ttl,
        refresh_token: mint(db, Kind::Refresh, account, app_id, REFRESH_TTL_SECS, "")?,
        scope: SCOPE.into(),
    })
}

/// An OAuth application, authenticated by its client id and secret.
#[derive(Debug, Clone)]
pub struct App {
    pub id: i64,
    pub account: AccountId,
    pub client_id: String,
}

/// Checks a client id and secret; `None` when either is wrong.
pub fn authenticate_app(db: &Db, client_id: &str, secret: &str) -> StoreResult<Option<App>> {
    let row = db.opt_row(
        "SELECT id, account_id, secret_hash FROM oauth_apps WHERE client_id = ?1",
        params![client_id],
        |r| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?, r.get::<Vec<u8>>(2)?)),
    )?;
    Ok(row.and_then(|(id, account, stored)| {
        constant_time_eq::constant_time_eq(&stored, &hash(secret)).then(|| App {
            id,
            account: AccountId(account),
            client_id: client_id.to_string(),
        })
    }))
}

/// Exchanges a refresh token (single use: it is spent by the exchange).
pub fn refresh(db: &Db, app: &App, token: &str, ttl: i64) -> StoreResult<Option<TokenResponse>> {
    match lookup(db, Kind::Refresh, token)? {
        Some((caller, _, _)) if caller.app_id == app.id => {
            if !spend(db, &caller.selector)? {
                return Ok(None);
            }
            issue_pair(db, caller.account, app.id, ttl).map(Some)
        }
        _ => Ok(None),
    }
}

/// Exchanges an authorization code (single use) minted for this application
/// no more than `code_ttl` seconds ago (the server's `--code-ttl`, which
/// also shortens codes minted with a longer life). A code bound to a
/// redirect URI needs that same URI (RFC 6749 §4.1.3).
pub fn redeem_code(
    db: &Db,
    app: &App,
    code: &str,
    redirect_uri: Option<&str>,
    ttl: i64,
    code_ttl: i64,
) -> StoreResult<Option<TokenResponse>> {
    match lookup(db, Kind::Code, code)? {
        Some((caller, minted_for, created)) if caller.app_id == app.id => {
            if !spend(db, &caller.selector)? {
                return Ok(None);
            }
            if !minted_for.is_empty() && redirect_uri != Some(minted_for.as_str()) {
                return Ok(None);
            }
            if !live_at(created + code_ttl, now()) {
                return Ok(None);
            }
            issue_pair(db, caller.account, app.id, ttl).map(Some)
        }
        _ => Ok(None),
    }
}

/// Mints an authorization code for the account's application, valid
/// [`CODE_TTL_SECS`].
pub fn mint_code(db: &Db, app: &App, redirect_uri: &str) -> StoreResult<String> {
    mint_code_for(db, app, redirect_uri, CODE_TTL_SECS)
}

/// Mints an authorization code valid `code_ttl` seconds.
pub fn mint_code_for(db: &Db, app: &App, redirect_uri: &str, code_ttl: i64) -> StoreResult<String> {
    mint(db, Kind::Code, app.account, app.id, code_ttl, redirect_uri)
}

/// A new account with one OAuth application. Returns the app and its secret.
pub fn create_account(db: &Db, name: &str) -> StoreResult<(App, String)> {
    let name = name.trim();
    if name.is_empty() {
        return super::invalid("an account needs a name");
    }
    // The name's unique key decides, not a check before the insert: on
    // PostgreSQL another server process may create the same name at once.
    let Some(account) = db.opt_row(
        "INSERT INTO accounts (name, email, company, created) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO NOTHING RETURNING id",
        params![name, format!("{name}@listpipe.invalid"), name, now()],
        |r| r.get(0).map(AccountId),
    )?
    else {
        return super::conflict(format!("an account named \"{name}\" exists already"));
    };
    let client_id = random_hex(8)?;
    let secret = random_hex(SELECTOR_BYTES + VERIFIER_BYTES)?;
    let id = db.value(
        "INSERT INTO oauth_apps (account_id, client_id, secret_hash) VALUES (?1, ?2, ?3)
         RETURNING id",
        params![account.0, client_id, hash(&secret)],
    )?;
    let app = App {
        id,
        account,
        client_id,
    };
    Ok((app, secret))
}

/// Gives an account's application a new secret (the old one stops working).
pub fn rotate_secret(db: &Db, app: &App) -> StoreResult<String> {
    let secret = random_hex(SELECTOR_BYTES + VERIFIER_BYTES)?;
    db.exec(
        "UPDATE oauth_apps SET secret_hash = ?1 WHERE id = ?2",
        params![hash(&secret), app.id],
    )?;
    // New credentials retire the old ones: every token of the app stops working.
    db.exec("DELETE FROM tokens WHERE app_id = ?1", params![app.id])?;
    Ok(secret)
}

/// The first application of the account named `name`.
pub fn app_of(db: &Db, name: &str) -> StoreResult<App> {
    db.opt_row(
        "SELECT o.id, o.account_id, o.client_id FROM oauth_apps o JOIN accounts a ON a.id = o.account_id
         WHERE a.name = ?1 ORDER BY o.id LIMIT 1",
        params![name],
        |r| Ok(App { id: r.get(0)?, account: AccountId(r.get(1)?), client_id: r.get(2)? }),
    )?
    .ok_or_else(|| StoreError::NotFound(format!("no account named \"{name}\"")))
}

/// An application as the authorization page shows it.
#[derive(Debug, Clone)]
pub struct AppListing {
    pub app: App,
    /// The name it was given (`accounts app --app-name`); may be empty.
    pub name: String,
    pub account_name: String,
}

/// The application with this client id (the public half of its credentials).
pub fn app_by_client_id(db: &Db, client_id: &str) -> StoreResult<Option<AppListing>> {
    db.opt_row(
        "SELECT o.id, o.account_id, o.name, a.name FROM oauth_apps o
         JOIN accounts a ON a.id = o.account_id WHERE o.client_id = ?1",
        params![client_id],
        |r| {
            Ok(AppListing {
                app: App {
                    id: r.get(0)?,
                    account: AccountId(r.get(1)?),
                    client_id: client_id.to_string(),
                },
                name: r.get(2)?,
                account_name: r.get(3)?,
            })
        },
    )
}

/// Names an application (the authorization page shows the name).
pub fn set_app_name(db: &Db, app: &App, name: &str) -> StoreResult<()> {
    db.exec(
        "UPDATE oauth_apps SET name = ?1 WHERE id = ?2",
        params![name.trim(), app.id],
    )?;
    Ok(())
}

pub fn account_count(db: &Db) -> StoreResult<i64> {
    db.value("SELECT COUNT(*) FROM accounts", params![])
}

/// `whoami`: the account as the API describes a client.
pub fn client_info(db: &Db, account: AccountId) -> StoreResult<ClientInfo> {
    db.opt_row(
        "SELECT id, name, email, company FROM accounts WHERE id = ?1",
        params![account.0],
        |r| {
            let id: i64 = r.get(0)?;
            Ok(ClientInfo {
                id: id.into(),
                name: r.get(1)?,
                firstname: String::new(),
                company: r.get(3)?,
                email: r.get(2)?,
                login_domain: format!("{id}.listpipe.invalid"),
            })
        },
    )?
    .ok_or_else(|| StoreError::NotFound("Not Found: invalid client".into()))
}

//! Accounts (tenants) and their OAuth applications; their tokens are
//! minted and checked in [`super::tokens`].
//!
//! A token or secret is `selector || verifier` in hex: the selector finds
//! the row, the SHA-256 of the verifier is compared in constant time. Only
//! hashes are stored, so a copy of the database grants nothing.

use super::db::{Db, params};
use super::{AccountId, StoreError, StoreResult, now};
use listpipe_api::client_info::ClientInfo;
use sha2::{Digest, Sha256};

pub use super::tokens::{
    Caller, Grant, authenticate, issue_pair, mint_code, mint_code_for, redeem_code, refresh,
    revoke_pair,
};

/// The name of the account created on first start (and the account of
/// events that name none, [`super::events`]).
pub const DEFAULT_ACCOUNT: &str = "default";

pub(crate) const SELECTOR_BYTES: usize = 8;
pub(crate) const VERIFIER_BYTES: usize = 16;
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

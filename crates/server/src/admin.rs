//! The work of `listpipe accounts`: tenants, users, applications and
//! credentials, done on the database directly (the server may be running:
//! SQLite's WAL allows it). The command line reads the flags and prints
//! what these answer.

use crate::serve::DEFAULT_TOKEN_TTL_SECS;
use crate::store::{self, Db, Store, StoreError, accounts, redirect_uris, users};
use listpipe_api::credentials_file::{self, credentials_of, write_credentials};
use listpipe_api::oauth::Credentials;
use std::path::Path;

/// Why an accounts command failed: no password, the database's answer, or
/// the credentials file that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("the environment variable {0} is not set; it must hold the user's password")]
    NoPassword(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Credentials(#[from] credentials_file::WriteError),
}

/// A password handed over in the environment variable `var` (never on the
/// command line, where other users of the machine could read it).
pub fn password_from_env(var: &str) -> Result<String, AdminError> {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Ok(p),
        _ => Err(AdminError::NoPassword(var.to_string())),
    }
}

/// The base URL the server recorded at its last start, or the default one.
fn base_url(conn: &Db) -> Result<String, StoreError> {
    store::setting(conn, "base_url")
        .map(|url| url.unwrap_or_else(|| "http://127.0.0.1:8080".into()))
        .map_err(|e| StoreError::Internal(e.to_string()))
}

/// Adds the account `name` with its application (named "listpipe", the
/// login's callback registered) and, when given, a user who can log in on
/// the authorization page (`(email, password)`); answers its credentials.
pub async fn create_account(
    db: &Path,
    name: &str,
    user: Option<(&str, &str)>,
) -> Result<Credentials, AdminError> {
    let user = match user {
        Some((email, password)) => Some((email.to_string(), users::hash_password(password)?)),
        None => None,
    };
    let store = Store::open(db)?;
    let name = name.to_string();
    let creds = store
        .write(move |c| {
            let (app, secret) = accounts::create_account(c, &name)?;
            accounts::set_app_name(c, &app, "listpipe")?;
            redirect_uris::register(c, app.id, redirect_uris::LOGIN_CALLBACK)?;
            let user = match &user {
                Some((email, hash)) => Some(users::upsert(c, app.account, email, None, hash)?.0),
                None => None,
            };
            let tokens = accounts::issue_pair(c, app.account, app.id, DEFAULT_TOKEN_TTL_SECS)?;
            let url = base_url(c)?;
            let mut creds = credentials_of(&url, &app.client_id, &secret, tokens);
            creds.user_email = user.map(|u| u.email);
            Ok(creds)
        })
        .await?;
    Ok(creds)
}

/// Adds the user `email` to the account `name`, or gives an existing one
/// the new password; `true` with the user when it was added.
pub async fn set_user(
    db: &Path,
    name: &str,
    email: &str,
    display_name: Option<&str>,
    password: &str,
) -> Result<(users::User, bool), AdminError> {
    let hash = users::hash_password(password)?;
    let store = Store::open(db)?;
    let (name, email, display) = (
        name.to_string(),
        email.to_string(),
        display_name.map(str::to_string),
    );
    let added = store
        .write(move |c| {
            let app = accounts::app_of(c, &name)?;
            users::upsert(c, app.account, &email, display.as_deref(), &hash)
        })
        .await?;
    Ok(added)
}

/// Registers `redirect_uris` for the account's application and names it
/// `app_name` (when given); answers the application as `accounts app`
/// prints it: client id, name and redirect URIs.
pub async fn update_app(
    db: &Path,
    name: &str,
    redirect_uris: &[String],
    app_name: Option<&str>,
) -> Result<serde_json::Value, AdminError> {
    let store = Store::open(db)?;
    let (name, uris, app_name) = (
        name.to_string(),
        redirect_uris.to_vec(),
        app_name.map(str::to_string),
    );
    let listing = store
        .write(move |c| {
            let app = accounts::app_of(c, &name)?;
            for uri in &uris {
                redirect_uris::register(c, app.id, uri)?;
            }
            if let Some(n) = &app_name {
                accounts::set_app_name(c, &app, n)?;
            }
            let listing = accounts::app_by_client_id(c, &app.client_id)?;
            Ok(serde_json::json!({
                "client_id": app.client_id,
                "name": listing.map(|l| l.name).unwrap_or_default(),
                "redirect_uris": redirect_uris::of_app(c, app.id)?,
            }))
        })
        .await?;
    Ok(listing)
}

/// Fresh credentials for the account `name`: a new client secret and a new
/// token pair, also written to `out` when given (mode 0600).
pub async fn rotate_credentials(
    db: &Path,
    name: &str,
    out: Option<&Path>,
) -> Result<Credentials, AdminError> {
    let store = Store::open(db)?;
    let name = name.to_string();
    let creds = store
        .write(move |c| {
            let app = accounts::app_of(c, &name)?;
            let secret = accounts::rotate_secret(c, &app)?;
            let tokens = accounts::issue_pair(c, app.account, app.id, DEFAULT_TOKEN_TTL_SECS)?;
            let url = base_url(c)?;
            Ok(credentials_of(&url, &app.client_id, &secret, tokens))
        })
        .await?;
    if let Some(path) = out {
        write_credentials(path, &creds)?;
    }
    Ok(creds)
}

/// Mints an authorization code of the account's application, bound to
/// `redirect_uri`; answers the code and the application's client id.
pub async fn mint_code(
    db: &Path,
    name: &str,
    redirect_uri: &str,
) -> Result<(String, String), AdminError> {
    let store = Store::open(db)?;
    let (name, redirect) = (name.to_string(), redirect_uri.to_string());
    let minted = store
        .write(move |c| {
            let app = accounts::app_of(c, &name)?;
            Ok((accounts::mint_code(c, &app, &redirect)?, app.client_id))
        })
        .await?;
    Ok(minted)
}

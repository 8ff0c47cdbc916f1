//! `listpipe accounts`: tenants of the built-in server, worked on the
//! database directly (the server may be running: SQLite's WAL allows it).

use crate::server::store::{self, Store, accounts, redirect_uris, users};
use crate::server::{DEFAULT_ACCOUNT, DEFAULT_TOKEN_TTL_SECS, credentials_of, write_credentials};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum AccountsCommand {
    /// Add an account (a separate tenant); prints its credentials as JSON.
    Create(CreateArgs),
    /// Issue fresh credentials for an account (new secret and tokens); prints them as JSON.
    Credentials(CredentialsArgs),
    /// Mint an OAuth authorization code (valid 30 s) for the authorization_code grant.
    Code(CodeArgs),
    /// Add a user who can log in on the authorization page, or reset a user's password.
    User(UserArgs),
    /// Show the account's OAuth application; register redirect URIs, name it.
    App(AppArgs),
}

#[derive(Args, Debug)]
pub struct UserArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    /// The account.
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    pub name: String,
    /// The user's login; an existing user of the account gets the new password.
    #[arg(long)]
    pub email: String,
    /// The environment variable that holds the password (at least 8 characters).
    #[arg(long, value_name = "VAR")]
    pub password_env: String,
    /// The user's full name.
    #[arg(long)]
    pub display_name: Option<String>,
}

#[derive(Args, Debug)]
pub struct AppArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    /// The account.
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    pub name: String,
    /// Register a redirect URI (repeat for several). A loopback one
    /// (http://127.0.0.1/…, http://[::1]/…, http://localhost/…) allows any port.
    #[arg(long, value_name = "URI")]
    pub redirect_uri: Vec<String>,
    /// The name the authorization page shows for the application.
    #[arg(long)]
    pub app_name: Option<String>,
}

/// A password handed over in an environment variable (never on the command line,
/// where other users of the machine could read it).
fn password_from_env(var: &str) -> anyhow::Result<String> {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Ok(p),
        _ => anyhow::bail!(
            "the environment variable {var} is not set; it must hold the user's password"
        ),
    }
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    #[arg(long)]
    pub name: String,
    /// Also add a user who can log in on the authorization page.
    #[arg(long, value_name = "EMAIL", requires = "password_env")]
    pub user: Option<String>,
    /// The environment variable that holds that user's password.
    #[arg(long, value_name = "VAR", requires = "user")]
    pub password_env: Option<String>,
}

#[derive(Args, Debug)]
pub struct CredentialsArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    pub name: String,
    /// Also write them to this file (mode 0600).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CodeArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    pub name: String,
    /// The redirect URI the code is bound to (the exchange must send the same).
    #[arg(long, default_value = "")]
    pub redirect_uri: String,
}

fn base_url(conn: &store::Db) -> anyhow::Result<String> {
    Ok(store::setting(conn, "base_url")?.unwrap_or_else(|| "http://127.0.0.1:8080".into()))
}

/// Any failure here is the arguments' or the database's: exit code 2.
pub async fn run(cmd: AccountsCommand) -> super::Outcome {
    accounts(cmd)
        .await
        .map(|_| super::exit::OK)
        .map_err(super::fail(super::exit::USAGE))
}

async fn accounts(cmd: AccountsCommand) -> anyhow::Result<()> {
    match cmd {
        AccountsCommand::Create(a) => {
            let user = match (&a.user, &a.password_env) {
                (Some(email), Some(var)) => Some((
                    email.clone(),
                    users::hash_password(&password_from_env(var)?)?,
                )),
                _ => None,
            };
            let store = Store::open(&a.db)?;
            let creds = store
                .write(move |c| {
                    let (app, secret) = accounts::create_account(c, &a.name)?;
                    accounts::set_app_name(c, &app, "listpipe")?;
                    redirect_uris::register(c, app.id, redirect_uris::LOGIN_CALLBACK)?;
                    let user = match &user {
                        Some((email, hash)) => {
                            Some(users::upsert(c, app.account, email, None, hash)?.0)
                        }
                        None => None,
                    };
                    let tokens =
                        accounts::issue_pair(c, app.account, app.id, DEFAULT_TOKEN_TTL_SECS)?;
                    let url =
                        base_url(c).map_err(|e| store::StoreError::Internal(e.to_string()))?;
                    let mut creds = credentials_of(&url, &app.client_id, &secret, tokens);
                    creds.user_email = user.map(|u| u.email);
                    Ok(creds)
                })
                .await?;
            crate::outln!("{}", serde_json::to_string_pretty(&creds)?);
        }
        AccountsCommand::User(a) => {
            let hash = users::hash_password(&password_from_env(&a.password_env)?)?;
            let store = Store::open(&a.db)?;
            let (name, email, display) = (a.name.clone(), a.email.clone(), a.display_name.clone());
            let (user, created) = store
                .write(move |c| {
                    let app = accounts::app_of(c, &name)?;
                    users::upsert(c, app.account, &email, display.as_deref(), &hash)
                })
                .await?;
            crate::errln!(
                "listpipe: {} user {} of account \"{}\"",
                if created { "added" } else { "new password for" },
                user.email,
                a.name
            );
            let out = serde_json::json!({
                "id": user.id, "email": user.email, "name": user.name, "role": user.role,
            });
            crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        }
        AccountsCommand::App(a) => {
            let store = Store::open(&a.db)?;
            let (name, uris, app_name) = (a.name.clone(), a.redirect_uri.clone(), a.app_name);
            let out = store
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
            crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        }
        AccountsCommand::Credentials(a) => {
            let store = Store::open(&a.db)?;
            let name = a.name.clone();
            let creds = store
                .write(move |c| {
                    let app = accounts::app_of(c, &name)?;
                    let secret = accounts::rotate_secret(c, &app)?;
                    let tokens =
                        accounts::issue_pair(c, app.account, app.id, DEFAULT_TOKEN_TTL_SECS)?;
                    let url =
                        base_url(c).map_err(|e| store::StoreError::Internal(e.to_string()))?;
                    Ok(credentials_of(&url, &app.client_id, &secret, tokens))
                })
                .await?;
            if let Some(path) = &a.out {
                write_credentials(path, &creds)?;
            }
            crate::outln!("{}", serde_json::to_string_pretty(&creds)?);
        }
        AccountsCommand::Code(a) => {
            let store = Store::open(&a.db)?;
            let (name, redirect) = (a.name.clone(), a.redirect_uri.clone());
            let (code, client_id) = store
                .write(move |c| {
                    let app = accounts::app_of(c, &name)?;
                    Ok((accounts::mint_code(c, &app, &redirect)?, app.client_id))
                })
                .await?;
            let out = serde_json::json!({
                "code": code,
                "client_id": client_id,
                "redirect_uri": a.redirect_uri,
                "expires_in": accounts::CODE_TTL_SECS,
            });
            crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        }
    }
    Ok(())
}

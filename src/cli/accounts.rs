//! `listpipe accounts`: tenants of the built-in server, worked on the
//! database directly (the server may be running: SQLite's WAL allows it).

use crate::server::store::{self, Store, accounts};
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
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    #[arg(long)]
    pub name: String,
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

fn base_url(conn: &rusqlite::Connection) -> anyhow::Result<String> {
    Ok(store::setting(conn, "base_url")?.unwrap_or_else(|| "http://127.0.0.1:8080".into()))
}

pub async fn run(cmd: AccountsCommand) -> anyhow::Result<()> {
    match cmd {
        AccountsCommand::Create(a) => {
            let store = Store::open(&a.db)?;
            let creds = store
                .write(move |c| {
                    let (app, secret) = accounts::create_account(c, &a.name)?;
                    let tokens =
                        accounts::issue_pair(c, app.account, app.id, DEFAULT_TOKEN_TTL_SECS)?;
                    let url =
                        base_url(c).map_err(|e| store::StoreError::Internal(e.to_string()))?;
                    Ok(credentials_of(&url, &app.client_id, &secret, tokens))
                })
                .await?;
            println!("{}", serde_json::to_string_pretty(&creds)?);
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
            println!("{}", serde_json::to_string_pretty(&creds)?);
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
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
    }
    Ok(())
}

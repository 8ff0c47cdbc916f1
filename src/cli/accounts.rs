//! `listpipe accounts`: tenants of the built-in server, worked on the
//! database directly ([`crate::server::admin`] does the work; this module
//! reads the flags and prints the answers).

use crate::server::store::accounts::CODE_TTL_SECS;
use crate::server::{DEFAULT_ACCOUNT, admin};
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
            let password = match (&a.user, &a.password_env) {
                (Some(_), Some(var)) => Some(admin::password_from_env(var)?),
                _ => None,
            };
            let user = a.user.as_deref().zip(password.as_deref());
            let creds = admin::create_account(&a.db, &a.name, user).await?;
            crate::outln!("{}", serde_json::to_string_pretty(&creds)?);
        }
        AccountsCommand::User(a) => {
            let password = admin::password_from_env(&a.password_env)?;
            let (user, created) = admin::set_user(
                &a.db,
                &a.name,
                &a.email,
                a.display_name.as_deref(),
                &password,
            )
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
            let app =
                admin::update_app(&a.db, &a.name, &a.redirect_uri, a.app_name.as_deref()).await?;
            crate::outln!("{}", serde_json::to_string_pretty(&app)?);
        }
        AccountsCommand::Credentials(a) => {
            let creds = admin::rotate_credentials(&a.db, &a.name, a.out.as_deref()).await?;
            crate::outln!("{}", serde_json::to_string_pretty(&creds)?);
        }
        AccountsCommand::Code(a) => {
            let (code, client_id) = admin::mint_code(&a.db, &a.name, &a.redirect_uri).await?;
            let out = serde_json::json!({
                "code": code,
                "client_id": client_id,
                "redirect_uri": a.redirect_uri,
                "expires_in": CODE_TTL_SECS,
            });
            crate::outln!("{}", serde_json::to_string_pretty(&out)?);
        }
    }
    Ok(())
}

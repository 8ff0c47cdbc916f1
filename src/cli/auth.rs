//! `listpipe auth`: log in to a v3 API the way its users do, with the
//! OAuth authorization-code flow (spec §5), and check what a credentials
//! file reaches. [`crate::client::login`] does the work: the loopback
//! listener, the code's exchange, the credentials file and its refresh;
//! this module reads the flags and prints.
//!
//! The application must have registered `http://127.0.0.1/callback`
//! (loopback, so any port will do).

use super::{Failure, exit};
use crate::client::login::{self, Login, LoginError, human_duration};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

pub use crate::client::login::authorize_url;

/// Where `auth login` writes and `auth status` reads by default.
pub const DEFAULT_CREDENTIALS: &str = ".listpipe/credentials.json";
/// How long `auth login` waits for the browser unless told otherwise.
pub const DEFAULT_LOGIN_TIMEOUT_SECS: u64 = 300;

#[derive(Subcommand, Debug)]
pub enum AuthCommand {
    /// Log in through the browser (OAuth authorization code) and save credentials for pipelines.
    Login(LoginArgs),
    /// Show which service and account a credentials file reaches and when its token expires.
    Status(StatusArgs),
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// The service's base URL; its authorization page is {URL}/oauth/authorize.php
    /// and its token service {URL}/oauth/token.php.
    #[arg(long, value_name = "URL")]
    pub auth_url: String,
    /// The OAuth application's client id.
    #[arg(long, value_name = "ID")]
    pub client_id: String,
    /// The environment variable that holds the application's client secret.
    #[arg(long, value_name = "VAR")]
    pub client_secret_env: String,
    /// Where to write the credentials (JSON, file mode 0600).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CREDENTIALS)]
    pub credentials: PathBuf,
    /// Print the address to open instead of starting a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// How long to wait for the browser to come back, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LOGIN_TIMEOUT_SECS)]
    pub timeout_secs: u64,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The credentials file (as `auth login` or `serve --credentials` wrote it).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_CREDENTIALS)]
    pub credentials: PathBuf,
}

/// A usage error (exit code 2) or the service's (exit code 3).
fn failure(e: LoginError) -> Failure {
    let code = if e.is_usage() {
        exit::USAGE
    } else {
        exit::TARGET
    };
    (code, e.into())
}

pub async fn run(cmd: AuthCommand) -> super::Outcome {
    match cmd {
        AuthCommand::Login(a) => login(a).await,
        AuthCommand::Status(a) => status(a).await,
    }
    .map_err(failure)
    .map(|_| exit::OK)
}

async fn login(a: LoginArgs) -> Result<(), LoginError> {
    let secret = login::secret_from_env(&a.client_secret_env)?;
    let login = Login::start(&a.auth_url, &a.client_id, secret).await?;
    let url = login.url();
    if !a.no_browser && login::open_browser(url).await {
        crate::errln!(
            "listpipe: a browser window is open to log in and approve (waiting up to {} s); if none appeared, open:\n{url}",
            a.timeout_secs
        );
    } else {
        crate::errln!(
            "listpipe: open this address in a browser, log in and approve (waiting up to {} s):",
            a.timeout_secs
        );
        // Alone on stdout, so a script can pick it up.
        crate::outln!("{url}");
    }
    // `outln!` flushed the address already, or ended the process.
    let base = login.base_url().to_string();
    let who = login
        .finish(&a.credentials, Duration::from_secs(a.timeout_secs))
        .await?;
    crate::errln!(
        "listpipe: logged in to the account {who} at {base}; credentials written to {}",
        a.credentials.display()
    );
    Ok(())
}

async fn status(a: StatusArgs) -> Result<(), LoginError> {
    let s = login::status(&a.credentials, crate::credentials_lock::lock_async).await?;
    crate::outln!("base URL: {}", s.credentials.base_url);
    crate::outln!("account:  \"{}\" (id {})", s.account.name, s.account.id);
    crate::outln!(
        "token:    expires {} (in {})",
        s.ttl.date,
        human_duration(s.ttl.ttl)
    );
    if s.refreshed {
        crate::outln!(
            "          refreshed just now; the new tokens are saved in {}",
            a.credentials.display()
        );
    }
    Ok(())
}

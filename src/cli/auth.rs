//! `listpipe auth`: log in to a v3 API the way its users do, with the
//! OAuth authorization-code flow (spec §5), and check what a credentials
//! file reaches.
//!
//! `login` listens on a loopback port ([`callback`]), opens the service's
//! authorization page in the browser, waits for the person to log in and
//! approve, exchanges the code at once (it lives only seconds) and writes a
//! credentials file that a pipeline's `[target] credentials = ...` names.
//! The application must have registered `http://127.0.0.1/callback`
//! (loopback, so any port will do).

mod callback;

use super::exit;
use crate::api::oauth::Credentials;
use crate::api::paths;
use crate::client::{ApiClient, oauth};
use crate::server::{credentials_of, write_credentials};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

use super::Failure;

fn usage(e: impl Into<anyhow::Error>) -> Failure {
    (exit::USAGE, e.into())
}

fn target(e: impl Into<anyhow::Error>) -> Failure {
    (exit::TARGET, e.into())
}

pub async fn run(cmd: AuthCommand) -> super::Outcome {
    match cmd {
        AuthCommand::Login(a) => login(a).await,
        AuthCommand::Status(a) => status(a).await,
    }
    .map(|_| exit::OK)
}

/// `{base}/oauth/authorize.php?client_id=…&redirect_uri=…&response_type=code&state=…`
pub fn authorize_url(base: &str, client_id: &str, redirect_uri: &str, state: &str) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("response_type", "code")
        .append_pair("state", state)
        .finish();
    format!("{base}{}?{query}", paths::AUTHORIZE)
}

fn base_url(raw: &str) -> Result<String, Failure> {
    let base = raw.trim().trim_end_matches('/');
    if base.starts_with("http://") || base.starts_with("https://") {
        Ok(base.to_string())
    } else {
        Err(usage(anyhow::anyhow!(
            "--auth-url \"{raw}\" must be an http:// or https:// URL, like https://api.example.com"
        )))
    }
}

fn random_state() -> Result<String, Failure> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| target(anyhow::anyhow!("no randomness: {e}")))?;
    Ok(hex::encode(buf))
}

/// Starts the desktop's browser on `url`; `false` when none could be started.
async fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let child = tokio::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    // Some openers return at once, some stay with the browser: still running is fine.
    match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(Ok(status)) => status.success(),
        Ok(Err(_)) => false,
        Err(_) => true,
    }
}

async fn login(a: LoginArgs) -> Result<(), Failure> {
    let secret = match std::env::var(&a.client_secret_env) {
        Ok(s) if !s.is_empty() => s,
        _ => {
            return Err(usage(anyhow::anyhow!(
                "the environment variable {} is not set; it must hold the client secret",
                a.client_secret_env
            )));
        }
    };
    let base = base_url(&a.auth_url)?;
    let state = random_state()?;
    let mut listener = callback::Listener::bind().await.map_err(|e| {
        target(anyhow::anyhow!(
            "cannot listen on 127.0.0.1 for the browser: {e}"
        ))
    })?;
    let redirect_uri = listener.redirect_uri();
    let url = authorize_url(&base, &a.client_id, &redirect_uri, &state);
    if !a.no_browser && open_browser(&url).await {
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

    let answer = listener
        .wait(&state, Duration::from_secs(a.timeout_secs))
        .await;
    let result = match answer {
        None => Err(target(anyhow::anyhow!(
            "no answer from the browser within {} s (raise --timeout-secs, or run the login again)",
            a.timeout_secs
        ))),
        Some(callback::Answer::Error(e)) => {
            Err(target(anyhow::anyhow!("the login was not approved: {e}")))
        }
        Some(callback::Answer::Code(code, pending)) => {
            let saved = finish_login(&a, &base, &secret, &code, &redirect_uri).await;
            match &saved {
                Ok(who) => {
                    pending.finish(true, format!("listpipe is logged in to the account {who}."))
                }
                Err((_, e)) => pending.finish(false, format!("The login failed: {e:#}")),
            }
            saved.map(|who| {
                crate::errln!(
                    "listpipe: logged in to the account {who} at {base}; credentials written to {}",
                    a.credentials.display()
                );
            })
        }
    };
    listener.close().await;
    result
}

/// Exchanges the code, saves the credentials, and answers whom they reach.
async fn finish_login(
    a: &LoginArgs,
    base: &str,
    secret: &str,
    code: &str,
    redirect_uri: &str,
) -> Result<String, Failure> {
    let tokens = oauth::authorization_code(base, &a.client_id, secret, code, redirect_uri)
        .await
        .map_err(|e| target(anyhow::anyhow!("the code could not be exchanged: {e}")))?;
    let creds = credentials_of(base, &a.client_id, secret, tokens);
    write_credentials(&a.credentials, &creds).map_err(usage)?;
    let client = ApiClient::new(base, &creds.access_token).map_err(usage)?;
    let me = client
        .whoami()
        .await
        .map_err(|e| target(anyhow::anyhow!("the new token does not work: {e}")))?;
    Ok(format!("\"{}\" (id {})", me.name, me.id))
}

fn read_credentials(path: &Path) -> Result<Credentials, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(anyhow::anyhow!(
            "cannot read the credentials file {}: {e} (log in with `listpipe auth login`)",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        usage(anyhow::anyhow!(
            "{} is not a credentials file: {e}",
            path.display()
        ))
    })
}

/// "2 h 5 min", "59 s": how long is left, for people.
fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s >= 86_400 => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

async fn status(a: StatusArgs) -> Result<(), Failure> {
    let mut creds = read_credentials(&a.credentials)?;
    let client = ApiClient::new(&creds.base_url, &creds.access_token).map_err(usage)?;
    let base_url = creds.base_url.clone();
    let unreachable =
        |e: crate::client::ClientError| target(anyhow::anyhow!("cannot reach {base_url}: {e}"));
    let mut refreshed = false;
    let ttl = match client.ttl().await {
        Ok(ttl) => ttl,
        Err(e) if e.status() == Some(401) && !creds.refresh_token.is_empty() => {
            // Under the file's lock, and with the file read again: another
            // process may have refreshed (and spent our refresh token) since.
            let _held = crate::credentials_lock::lock_async(&a.credentials)
                .await
                .map_err(|e| target(anyhow::anyhow!(e)))?;
            let on_disk = read_credentials(&a.credentials)?;
            if on_disk.refresh_token != creds.refresh_token {
                creds = on_disk;
                client.set_token(&creds.access_token);
                refreshed = true;
            }
            if let Ok(ttl) = client.ttl().await {
                ttl
            } else {
                let t = oauth::refresh(
                &creds.base_url,
                &creds.client_id,
                &creds.client_secret,
                &creds.refresh_token,
            )
            .await
            .map_err(|e| {
                target(anyhow::anyhow!(
                    "the token has expired and could not be refreshed: {e} (log in again with `listpipe auth login`)"
                ))
            })?;
                client.set_token(&t.access_token);
                creds.access_token = t.access_token;
                creds.refresh_token = t.refresh_token;
                creds.expires_in = t.expires_in;
                write_credentials(&a.credentials, &creds).map_err(usage)?;
                refreshed = true;
                client.ttl().await.map_err(unreachable)?
            }
        }
        Err(e) if e.status() == Some(401) => {
            return Err(target(anyhow::anyhow!(
                "the token was refused and there is no refresh token: {} (log in again with `listpipe auth login`)",
                e.server_message()
            )));
        }
        Err(e) => return Err(unreachable(e)),
    };
    let me = client.whoami().await.map_err(unreachable)?;
    crate::outln!("base URL: {}", creds.base_url);
    crate::outln!("account:  \"{}\" (id {})", me.name, me.id);
    crate::outln!(
        "token:    expires {} (in {})",
        ttl.date,
        human_duration(ttl.ttl)
    );
    if refreshed {
        crate::outln!(
            "          refreshed just now; the new tokens are saved in {}",
            a.credentials.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorize_url_carries_every_parameter_encoded() {
        assert_eq!(
            authorize_url(
                "http://127.0.0.1:8080",
                "c1",
                "http://127.0.0.1:5000/callback",
                "s&1"
            ),
            "http://127.0.0.1:8080/oauth/authorize.php?client_id=c1\
             &redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&response_type=code&state=s%261"
        );
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(59), "59 s");
        assert_eq!(human_duration(3599), "59 min 59 s");
        assert_eq!(human_duration(7500), "2 h 5 min");
        assert_eq!(human_duration(200_000), "2 d 7 h");
    }
}

//! Logging in to a v3 API the way its users do, with the OAuth
//! authorization-code flow (spec §5), and checking what a credentials file
//! reaches: the work of `listpipe auth login` and `auth status`.
//!
//! [`Login::start`] listens on a loopback port (the `callback` module) and
//! makes the service's authorization page address; the caller opens it in
//! the browser ([`open_browser`]) or shows it, and [`Login::finish`] waits
//! for the person to log in and approve, exchanges the code at once (it
//! lives only seconds) and writes a credentials file that a pipeline's
//! `[target] credentials = ...` names. The application must have registered
//! `http://127.0.0.1/callback` (loopback, so any port will do).

mod callback;

use crate::{ApiClient, ClientError, oauth};
use listpipe_api::credentials_file::{self, credentials_of, write_credentials};
use listpipe_api::debug::Ttl;
use listpipe_api::oauth::Credentials;
use listpipe_api::paths;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a login or a check of a credentials file failed. The messages name
/// the flags of `listpipe auth` (`--auth-url`, `--timeout-secs`).
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("the environment variable {0} is not set; it must hold the client secret")]
    NoSecret(String),
    #[error("--auth-url \"{0}\" must be an http:// or https:// URL, like https://api.example.com")]
    BadAuthUrl(String),
    #[error("no randomness: {0}")]
    NoRandomness(String),
    #[error("cannot listen on 127.0.0.1 for the browser: {0}")]
    Listen(std::io::Error),
    #[error(
        "no answer from the browser within {0} s (raise --timeout-secs, or run the login again)"
    )]
    NoAnswer(u64),
    #[error("the login was not approved: {0}")]
    NotApproved(String),
    #[error("the code could not be exchanged: {0}")]
    Exchange(ClientError),
    #[error("the new token does not work: {0}")]
    NewToken(ClientError),
    #[error(transparent)]
    Write(#[from] credentials_file::WriteError),
    /// The client could not be built for the file's base URL.
    #[error(transparent)]
    Client(ClientError),
    #[error("cannot read the credentials file {}: {error} (log in with `listpipe auth login`)", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{} is not a credentials file: {error}", path.display())]
    NotCredentials {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error(transparent)]
    Lock(std::io::Error),
    #[error("cannot reach {url}: {error}")]
    Unreachable { url: String, error: ClientError },
    #[error(
        "the token has expired and could not be refreshed: {0} (log in again with `listpipe auth login`)"
    )]
    Refresh(ClientError),
    #[error(
        "the token was refused and there is no refresh token: {0} (log in again with `listpipe auth login`)"
    )]
    Refused(String),
}

impl LoginError {
    /// The arguments' or the local files' fault (exit code 2), not the
    /// service's or the network's (exit code 3).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LoginError::NoSecret(_)
                | LoginError::BadAuthUrl(_)
                | LoginError::Write(_)
                | LoginError::Client(_)
                | LoginError::Read { .. }
                | LoginError::NotCredentials { .. }
        )
    }
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

/// The application's client secret, from the environment variable `var`
/// (never from the command line, where other users of the machine could read it).
pub fn secret_from_env(var: &str) -> Result<String, LoginError> {
    match std::env::var(var) {
        Ok(s) if !s.is_empty() => Ok(s),
        _ => Err(LoginError::NoSecret(var.to_string())),
    }
}

fn base_url(raw: &str) -> Result<String, LoginError> {
    let base = raw.trim().trim_end_matches('/');
    if base.starts_with("http://") || base.starts_with("https://") {
        Ok(base.to_string())
    } else {
        Err(LoginError::BadAuthUrl(raw.to_string()))
    }
}

fn random_state() -> Result<String, LoginError> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| LoginError::NoRandomness(e.to_string()))?;
    Ok(hex::encode(buf))
}

/// Starts the desktop's browser on `url`; `false` when none could be started.
pub async fn open_browser(url: &str) -> bool {
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

/// A login waiting for the browser: the loopback listener, and the
/// authorization page's address to open.
pub struct Login {
    base: String,
    client_id: String,
    secret: String,
    state: String,
    redirect_uri: String,
    url: String,
    listener: callback::Listener,
}

impl Login {
    /// Checks `auth_url`, listens on a free loopback port and makes the
    /// authorization page's address, with a fresh `state`.
    pub async fn start(
        auth_url: &str,
        client_id: &str,
        secret: String,
    ) -> Result<Login, LoginError> {
        let base = base_url(auth_url)?;
        let state = random_state()?;
        let listener = callback::Listener::bind()
            .await
            .map_err(LoginError::Listen)?;
        let redirect_uri = listener.redirect_uri();
        let url = authorize_url(&base, client_id, &redirect_uri, &state);
        Ok(Login {
            base,
            client_id: client_id.to_string(),
            secret,
            state,
            redirect_uri,
            url,
            listener,
        })
    }

    /// The service's base URL, as the login reaches it.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The authorization page's address, for the browser.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Waits up to `timeout` for the browser, exchanges the code and writes
    /// the credentials to `credentials`; answers whom they reach
    /// (`"name" (id 1)`). The browser is shown how it ended.
    pub async fn finish(
        mut self,
        credentials: &Path,
        timeout: Duration,
    ) -> Result<String, LoginError> {
        let answer = self.listener.wait(&self.state, timeout).await;
        let result = match answer {
            None => Err(LoginError::NoAnswer(timeout.as_secs())),
            Some(callback::Answer::Error(e)) => Err(LoginError::NotApproved(e)),
            Some(callback::Answer::Code(code, pending)) => {
                let saved = self.save(credentials, &code).await;
                match &saved {
                    Ok(who) => {
                        pending.finish(true, format!("listpipe is logged in to the account {who}."))
                    }
                    Err(e) => pending.finish(false, format!("The login failed: {}", chain(e))),
                }
                saved
            }
        };
        self.listener.close().await;
        result
    }

    /// Exchanges the code, saves the credentials, and answers whom they reach.
    async fn save(&self, path: &Path, code: &str) -> Result<String, LoginError> {
        let tokens = oauth::authorization_code(
            &self.base,
            &self.client_id,
            &self.secret,
            code,
            &self.redirect_uri,
        )
        .await
        .map_err(LoginError::Exchange)?;
        let creds = credentials_of(&self.base, &self.client_id, &self.secret, tokens);
        write_credentials(path, &creds)?;
        let client = ApiClient::new(&self.base, &creds.access_token).map_err(LoginError::Client)?;
        let me = client.whoami().await.map_err(LoginError::NewToken)?;
        Ok(format!("\"{}\" (id {})", me.name, me.id))
    }
}

/// The error and its causes joined with ": ", for the browser's page.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

/// Reads a credentials file (as `auth login` or `serve --credentials` wrote it).
pub fn read_credentials(path: &Path) -> Result<Credentials, LoginError> {
    let text = std::fs::read_to_string(path).map_err(|error| LoginError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    serde_json::from_str(&text).map_err(|error| LoginError::NotCredentials {
        path: path.to_path_buf(),
        error,
    })
}

/// What a credentials file reaches, from [`status`].
pub struct Status {
    /// The credentials, with the new tokens when they were refreshed.
    pub credentials: Credentials,
    /// The account's name and id.
    pub account: listpipe_api::client_info::ClientInfo,
    /// How long the token has left.
    pub ttl: Ttl,
    /// The tokens were refreshed (by this check, or by another process
    /// since the file was read) and are saved in the file.
    pub refreshed: bool,
}

/// Checks what the credentials file at `path` reaches. An expired token is
/// refreshed under the file's lock (`lock`, held until the refresh is
/// saved) and the new tokens written back.
pub async fn status<G>(
    path: &Path,
    lock: impl AsyncFnOnce(&Path) -> std::io::Result<G>,
) -> Result<Status, LoginError> {
    let mut creds = read_credentials(path)?;
    let client =
        ApiClient::new(&creds.base_url, &creds.access_token).map_err(LoginError::Client)?;
    let base_url = creds.base_url.clone();
    let unreachable = |error| LoginError::Unreachable {
        url: base_url.clone(),
        error,
    };
    let mut refreshed = false;
    let ttl = match client.ttl().await {
        Ok(ttl) => ttl,
        Err(e) if e.status() == Some(401) && !creds.refresh_token.is_empty() => {
            // Under the file's lock, and with the file read again: another
            // process may have refreshed (and spent our refresh token) since.
            let _held = lock(path).await.map_err(LoginError::Lock)?;
            let on_disk = read_credentials(path)?;
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
                .map_err(LoginError::Refresh)?;
                client.set_token(&t.access_token);
                creds.access_token = t.access_token;
                creds.refresh_token = t.refresh_token;
                creds.expires_in = t.expires_in;
                write_credentials(path, &creds)?;
                refreshed = true;
                client.ttl().await.map_err(unreachable)?
            }
        }
        Err(e) if e.status() == Some(401) => {
            return Err(LoginError::Refused(e.server_message()));
        }
        Err(e) => return Err(unreachable(e)),
    };
    let account = client.whoami().await.map_err(unreachable)?;
    Ok(Status {
        credentials: creds,
        account,
        ttl,
        refreshed,
    })
}

/// "2 h 5 min", "59 s": how long is left, for people.
pub fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s >= 86_400 => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
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

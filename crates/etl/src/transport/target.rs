//! Connecting to the target: the built-in server in-process, or a URL with
//! a token from the command line, an environment variable or a credentials
//! file. The built-in server is started through [`Builtin`], which the
//! binary implements, so this crate does not depend on the server's. A credentials file with a refresh token makes the token renewable:
//! on expiry (401) it is refreshed once and the new tokens are saved back.

use super::ConnectError;
use super::breaker::Breaker;
use super::controller::Controller;
use crate::pipeline::{Concurrency, Target, TargetUrl};
use futures::future::BoxFuture;
use listpipe_api::oauth::Credentials;
use listpipe_client::{ApiClient, oauth};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::Mutex;

/// Command-line and environment overrides of the pipeline's `[target]`.
#[derive(Debug, Clone, Default)]
pub struct TargetOverrides {
    pub url: Option<String>,
    pub token: Option<String>,
    /// `--concurrency N`: pins the requests in flight.
    pub concurrency: Option<usize>,
    /// The run's state folder, where the rate learned from the target is
    /// remembered ([`crate::pipeline::Pipeline::state_dir`];
    /// [`crate::pipeline::STATE_DIR`] of the working directory when `None`).
    pub state_dir: Option<PathBuf>,
}

/// A live connection: the client, what can renew its token, and the
/// in-process server when the target is built in.
pub struct Connected {
    pub client: ApiClient,
    pub base_url: String,
    /// Shared by every request of the run: opens when the target stops
    /// answering (see [`super::breaker`]).
    pub breaker: Breaker,
    /// Shared by every request of the run: the concurrency limit and the
    /// target's rate limit (see [`super::controller`]).
    pub controller: Controller,
    /// The target as journals, locks and ledgers name it: the canonical URL
    /// and the account (`whoami`), the built-in target by its database.
    pub resolved: String,
    refresher: Option<Mutex<Refresher>>,
    server: Option<BuiltinTarget>,
    /// The target's rate remembered between runs ([`super::remembered`]).
    memory: Option<super::remembered::Memory>,
}

/// Starts the built-in target in-process: implemented where the server is
/// linked (the `listpipe` binary), so the ETL is usable without it.
pub trait Builtin {
    /// Starts a server on `database` on a free loopback port, and answers its
    /// address and a token: `token` when given, else the first start's own,
    /// else one newly issued for the default account.
    fn start(
        &self,
        database: &Path,
        token: Option<&str>,
    ) -> BoxFuture<'static, Result<BuiltinTarget, ConnectError>>;
}

/// No built-in target: for a program without the server, whose pipelines
/// name a URL (a `builtin` target is refused with a [`ConnectError`]).
pub struct NoBuiltin;

impl Builtin for NoBuiltin {
    fn start(
        &self,
        database: &Path,
        _token: Option<&str>,
    ) -> BoxFuture<'static, Result<BuiltinTarget, ConnectError>> {
        let what = format!(
            "cannot start the built-in target on {}: this program has no server (the listpipe binary has)",
            database.display()
        );
        Box::pin(async move { Err(ConnectError::new(what, None)) })
    }
}

/// A built-in target started by [`Builtin::start`].
pub struct BuiltinTarget {
    pub base_url: String,
    pub token: String,
    /// Stops the server and waits for it.
    pub stop: Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send + Sync>,
}

struct Refresher {
    path: PathBuf,
    creds: Credentials,
}

impl Connected {
    /// Sends one request through the run's controller (its pause, its rate
    /// and its figures) without retrying it: for the calls that retry in
    /// their own way (a create is not idempotent) or not at all. Every
    /// request counts: a limited target counts them all against its quota.
    pub async fn once<T, F>(&self, call: F) -> listpipe_client::Result<T>
    where
        F: std::future::Future<Output = listpipe_client::Result<T>>,
    {
        let ticket = self.controller.acquire().await;
        let listpipe_client::Answered { result, rate } = listpipe_client::answered(call).await;
        self.controller.finish(ticket, result.as_ref().err(), rate);
        result
    }

    /// Renews the token after a 401, once per expiry: callers that saw the
    /// same old token wait for one refresh. `false` when it cannot be renewed.
    ///
    /// Under the credentials file's lock ([`crate::credentials_lock`]), the
    /// file is read again first: when another process sharing it has
    /// refreshed since, its tokens are taken, because presenting our spent
    /// refresh token again would revoke the whole family, theirs included.
    pub async fn refresh(&self, stale_token: &str) -> bool {
        let Some(lock) = &self.refresher else {
            return false;
        };
        let mut r = lock.lock().await;
        if self.client.token() != stale_token {
            return true;
        }
        tracing::debug!(target: log_target!(), credentials = %r.path.display(), "taking the credentials file's lock to refresh the token");
        let _held = match crate::credentials_lock::lock_async(&r.path).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(target: log_target!(), error = %e, "the token could not be refreshed");
                return false;
            }
        };
        match read_credentials(&r.path) {
            Ok(on_disk)
                if !on_disk.refresh_token.is_empty()
                    && on_disk.refresh_token != r.creds.refresh_token =>
            {
                tracing::info!(target: log_target!(),
                    credentials = %r.path.display(),
                    "the token was refreshed by another process sharing the credentials file: using its tokens"
                );
                self.client.set_token(&on_disk.access_token);
                r.creds = on_disk;
                return true;
            }
            Ok(_) => {}
            // Deliberately not fatal: the tokens in memory are still ours to
            // refresh, and the write below names the file if it is gone for good.
            Err(e) => {
                tracing::warn!(target: log_target!(), error = %e, "the credentials file could not be read again before the refresh")
            }
        }
        let c = &r.creds;
        match oauth::refresh(
            &self.base_url,
            &c.client_id,
            &c.client_secret,
            &c.refresh_token,
        )
        .await
        {
            Ok(t) => {
                self.client.set_token(&t.access_token);
                r.creds.access_token = t.access_token;
                r.creds.refresh_token = t.refresh_token;
                r.creds.expires_in = t.expires_in;
                if let Err(e) = write_credentials(&r.path, &r.creds) {
                    // The run goes on with the new tokens in memory; the file
                    // still holds the spent refresh token, so the next run
                    // must log in again (`listpipe auth login`).
                    tracing::error!(target: log_target!(),
                        error = %e,
                        "the refreshed token could not be saved: the next run must log in again"
                    );
                }
                true
            }
            Err(e) => {
                tracing::warn!(target: log_target!(), error = %e, "the token could not be refreshed");
                false
            }
        }
    }

    /// Remembers the rate the target allowed, for the next run, and stops
    /// the in-process server, if any.
    pub async fn close(self) {
        if let (Some(memory), Some(rate)) = (&self.memory, self.controller.rate_to_remember()) {
            memory.save(rate);
        }
        if let Some(s) = self.server {
            (s.stop)().await;
        }
    }
}

/// Connects as the target and the overrides say, and checks the token
/// (`whoami`), so a wrong address or token stops the run before any work.
pub async fn connect(
    target: &Target,
    overrides: &TargetOverrides,
    builtin: &dyn Builtin,
) -> Result<Connected, ConnectError> {
    let timeout = Duration::from_secs(target.timeout_secs);
    let url = match overrides.url.as_deref() {
        Some("builtin") => Endpoint::Builtin(builtin_db(target)),
        Some(u) => Endpoint::Remote(u.trim_end_matches('/').to_string()),
        None => match &target.url {
            TargetUrl::Builtin { database } => Endpoint::Builtin(database.clone()),
            TargetUrl::Url(u) => Endpoint::Remote(u.clone()),
            TargetUrl::FromCredentials => {
                let path = target
                    .credentials
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""));
                Endpoint::Remote(
                    read_credentials(path)?
                        .base_url
                        .trim_end_matches('/')
                        .to_string(),
                )
            }
        },
    };
    let mut connected = match url {
        Endpoint::Builtin(database) => {
            let running = builtin.start(&database, overrides.token.as_deref()).await?;
            let token = running.token.clone();
            let client = ApiClient::with_timeout(&running.base_url, &token, timeout)
                .map_err(|e| ConnectError::new("cannot connect", Some(e.into())))?;
            let db = std::fs::canonicalize(&database).unwrap_or(database);
            Connected {
                client,
                breaker: Breaker::new(&running.base_url),
                controller: controller(target, overrides),
                resolved: format!("the built-in target on {}", db.display()),
                base_url: running.base_url.clone(),
                refresher: None,
                server: Some(running),
                memory: None,
            }
        }
        Endpoint::Remote(base) => {
            let file = match &target.credentials {
                Some(path) => Some((path.clone(), read_credentials(path)?)),
                None => None,
            };
            let env_token = target
                .token_env
                .as_ref()
                .and_then(|name| std::env::var(name).ok())
                .filter(|t| !t.is_empty());
            let token = overrides
                .token
                .clone()
                .or(env_token)
                .or_else(|| file.as_ref().map(|(_, c)| c.access_token.clone()))
                .ok_or_else(|| {
                    ConnectError::new(format!(
                        "no token for {base}: pass --token, set LISTPIPE_TOKEN{}, or give `credentials` in [target]",
                        target.token_env.as_ref().map(|e| format!(" or {e}")).unwrap_or_default()
                    ), None)
                })?;
            let client = ApiClient::with_timeout(&base, &token, timeout)
                .map_err(|e| ConnectError::new("cannot connect", Some(e.into())))?;
            let refresher = file
                .filter(|(_, c)| !c.refresh_token.is_empty())
                .map(|(path, creds)| Mutex::new(Refresher { path, creds }));
            Connected {
                client,
                breaker: Breaker::new(&base),
                controller: controller(target, overrides),
                resolved: super::identity::canonical_url(&base),
                base_url: base,
                refresher,
                server: None,
                memory: None,
            }
        }
    };
    // A target that drops or refuses a request now and then is retried
    // a few times before it counts as unreachable.
    let mut answer = connected.once(connected.client.whoami()).await;
    for attempt in 0..3 {
        match &answer {
            Err(e) if e.is_transient() => {
                tokio::time::sleep(listpipe_client::backoff::delay(attempt, e.retry_after())).await;
                answer = connected.once(connected.client.whoami()).await;
            }
            _ => break,
        }
    }
    let named = |mut c: Connected, who: listpipe_api::client_info::ClientInfo| {
        c.resolved = super::identity::resolved(&c.resolved, &who.id.to_string());
        // The rate earlier runs learned from this target and account (a
        // remote one: the built-in target in-process has no rate limit).
        if c.server.is_some() {
            return c;
        }
        let state = overrides
            .state_dir
            .as_deref()
            .unwrap_or(Path::new(crate::pipeline::STATE_DIR));
        let memory = super::remembered::Memory::open(state, &c.resolved);
        if let Some(start) = memory.start() {
            tracing::info!(target: log_target!(), "{}", start.describe());
            c.controller.start_from(start);
        }
        c.memory = Some(memory);
        c
    };
    match answer {
        Ok(who) => Ok(named(connected, who)),
        Err(e) if e.status() == Some(401) => {
            let stale = connected.client.token();
            if connected.refresh(&stale).await
                && let Ok(who) = connected.once(connected.client.whoami()).await
            {
                return Ok(named(connected, who));
            }
            let server = connected.server.take();
            if let Some(s) = server {
                (s.stop)().await;
            }
            Err(ConnectError::new(
                format!("the target {} refused the token", connected.base_url),
                Some(e.into()),
            ))
        }
        Err(e) => Err(ConnectError::new(
            format!("cannot reach the target {}", connected.base_url),
            Some(e.into()),
        )),
    }
}

/// The run's controller: `--concurrency N` pins the file's setting.
fn controller(target: &Target, overrides: &TargetOverrides) -> Controller {
    let concurrency = overrides
        .concurrency
        .map_or(target.concurrency, Concurrency::Fixed);
    Controller::new(concurrency, target.max_requests_per_second)
        .with_max_outage(Duration::from_secs(target.max_outage_secs))
}

/// Where a run connects, once the overrides and the file are read.
enum Endpoint {
    Builtin(PathBuf),
    Remote(String),
}

fn builtin_db(target: &Target) -> PathBuf {
    match &target.url {
        TargetUrl::Builtin { database } => database.clone(),
        _ => PathBuf::from(crate::pipeline::DEFAULT_BUILTIN_DB),
    }
}

/// Saves refreshed tokens back, atomically and readable by the owner only.
fn write_credentials(path: &Path, creds: &Credentials) -> std::io::Result<()> {
    let json = creds.file_bytes().map_err(std::io::Error::other)?;
    listpipe_base::state_file::write(path, &json, listpipe_base::state_file::Access::Private)
        .map_err(|e| e.source)
}

fn read_credentials(path: &Path) -> Result<Credentials, ConnectError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConnectError::new(
            format!("cannot read the credentials file {}", path.display()),
            Some(e.into()),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        ConnectError::new(
            format!("{} is not a credentials file", path.display()),
            Some(e.into()),
        )
    })
}

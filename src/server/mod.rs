//! The built-in target server: every endpoint of the v3 API and its OAuth
//! token service on an embedded SQLite database, so pipelines can be
//! rehearsed and tested without the real service.
//!
//! Request path: [`wire::normalize`] (path suffixes, body decoding, XML
//! answers) → router → [`auth::require_token`] for `/v3` → the resource's
//! route → its store module. [`start`] binds, bootstraps a first account and
//! serves until stopped; tests call it with port 0 and a temp database.

pub mod auth;
pub mod error;
pub mod routes;
pub mod store;
pub mod wire;

use crate::api::TokenResponse;
use crate::api::oauth::Credentials;
use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use error::ApiError;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use store::{Store, StoreError, accounts};
use tokio::sync::oneshot;
use tower::Layer;

/// Lifetime of an access token unless `serve --token-ttl` says otherwise.
pub const DEFAULT_TOKEN_TTL_SECS: i64 = 3600;
/// The name of the account created on first start.
pub const DEFAULT_ACCOUNT: &str = "default";

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// Access-token lifetime in seconds.
    pub token_ttl: i64,
}

/// The whole application: routes, the token check on `/v3`, the error body
/// for unknown routes. Wrap it with [`wire::normalize`] to serve (see [`start`]).
pub fn app(state: AppState) -> Router {
    let v3 = routes::v3().route_layer(from_fn_with_state(state.clone(), auth::require_token));
    Router::new()
        .merge(v3)
        .merge(routes::oauth::router())
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: not on this path",
            )
        })
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .with_state(state)
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot write credentials to {path}: {source}")]
    Credentials {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub struct ServeOptions {
    pub db: PathBuf,
    pub listen: String,
    pub credentials: Option<PathBuf>,
    pub token_ttl: i64,
}

impl ServeOptions {
    pub fn new(db: impl Into<PathBuf>, listen: impl Into<String>) -> Self {
        ServeOptions {
            db: db.into(),
            listen: listen.into(),
            credentials: None,
            token_ttl: DEFAULT_TOKEN_TTL_SECS,
        }
    }
}

/// A server running in the background of this process.
pub struct RunningServer {
    pub addr: SocketAddr,
    pub base_url: String,
    /// Set when this start created the default account (the first start).
    pub credentials: Option<Credentials>,
    pub store: Store,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Stops taking connections, lets requests in flight finish, and waits.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Serves until the task ends (for `listpipe serve`).
    pub async fn wait(self) -> std::io::Result<()> {
        let _keep_running = self.shutdown;
        self.task
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}

/// Opens the database, binds, creates the default account on first start
/// (writing its credentials where asked), and serves in the background.
pub async fn start(opts: ServeOptions) -> Result<RunningServer, ServeError> {
    let store = Store::open(&opts.db)?;
    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.listen.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: opts.listen.clone(),
        source,
    })?;
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        addr.ip().to_string()
    };
    let base_url = match addr {
        SocketAddr::V6(_) if !addr.ip().is_unspecified() => {
            format!("http://[{host}]:{}", addr.port())
        }
        _ => format!("http://{host}:{}", addr.port()),
    };

    let ttl = opts.token_ttl;
    let url = base_url.clone();
    let credentials = store
        .write(move |c| {
            store::set_setting(c, "base_url", &url)?;
            if accounts::account_count(c)? > 0 {
                return Ok(None);
            }
            let (app, secret) = accounts::create_account(c, DEFAULT_ACCOUNT)?;
            let tokens = accounts::issue_pair(c, app.account, app.id, ttl)?;
            Ok(Some(credentials_of(&url, &app.client_id, &secret, tokens)))
        })
        .await?;
    if let (Some(creds), Some(path)) = (&credentials, &opts.credentials) {
        write_credentials(path, creds)?;
    }

    let state = AppState {
        store: store.clone(),
        token_ttl: ttl,
    };
    let service = from_fn(wire::normalize).layer(app(state));
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            axum::ServiceExt::<axum::extract::Request>::into_make_service(service),
        )
        .with_graceful_shutdown(async {
            let _ = rx.await;
        })
        .await
    });
    tracing::debug!(%base_url, db = %opts.db.display(), "serving the v3 API");
    Ok(RunningServer {
        addr,
        base_url,
        credentials,
        store,
        shutdown: Some(tx),
        task,
    })
}

pub fn credentials_of(
    base_url: &str,
    client_id: &str,
    secret: &str,
    tokens: TokenResponse,
) -> Credentials {
    Credentials {
        base_url: base_url.to_string(),
        client_id: client_id.to_string(),
        client_secret: secret.to_string(),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_in: tokens.expires_in,
    }
}

/// Writes credentials as JSON readable by the owner only (mode 0600).
pub fn write_credentials(path: &Path, creds: &Credentials) -> Result<(), ServeError> {
    use std::io::Write;
    let err = |source| ServeError::Credentials {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(err)?;
    }
    let json = serde_json::to_string_pretty(creds).map_err(|e| err(std::io::Error::other(e)))?;
    file.write_all(json.as_bytes())
        .and_then(|_| file.write_all(b"\n"))
        .map_err(err)
}

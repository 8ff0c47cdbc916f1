//! Serving: [`app`], the whole application on an [`AppState`], and
//! [`start`], which opens the database, binds the listeners, bootstraps a
//! first account and serves in the background. The top of the crate: it
//! puts together everything below it.

use crate::error::ApiError;
use crate::state::AppState;
use crate::store::accounts::{self, DEFAULT_ACCOUNT};
use crate::store::{self, Store, StoreError};
use crate::{
    auth, auth_failures, connections, faults, metrics, openapi, overload, ratelimit, routes, wire,
};
use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use listpipe_api::credentials_file::{self, credentials_of, write_credentials};
use listpipe_api::oauth::Credentials;
use std::net::SocketAddr;
use std::path::PathBuf;
use tokio::sync::oneshot;
use tower::Layer;

/// The target of this module's log events: the crate's own, as when this
/// was the crate root (what `LISTPIPE_LOG` filters on and log lines show).
const LOG_TARGET: &str =
    const_format::str_replace!(module_path!(), "listpipe_server::serve", "listpipe::server");

/// Lifetime of an access token unless `serve --token-ttl` says otherwise.
pub const DEFAULT_TOKEN_TTL_SECS: i64 = 3600;

/// The whole application: routes, the token check on `/v3`, the error body
/// for unknown routes. Wrap it with [`wire::normalize`] to serve (see [`start`]).
pub fn app(state: AppState) -> Router {
    // Layers run outermost first: faults, the token check, the rate limit.
    let (v3, mut ops) = routes::v3(!state.spec_only).into_parts();
    ops.extend(routes::oauth::operations());
    ops.extend(routes::forms::public_operations());
    let openapi = std::sync::Arc::new(openapi::document(&ops));
    let limited = ratelimit::Limited {
        store: state.store.clone(),
        rate: state.rate_limit.clone(),
    };
    let checked = auth::TokenCheck {
        store: state.store.clone(),
        tokens: state.tokens.clone(),
    };
    let v3 = v3
        .route_layer(from_fn_with_state(limited, ratelimit::limit))
        .route_layer(from_fn_with_state(checked, auth::require_token))
        .route_layer(from_fn_with_state(state.faults.clone(), faults::inject));
    Router::new()
        .merge(v3)
        .route(
            listpipe_api::paths::OPENAPI,
            axum::routing::get(move || async move { axum::Json((*openapi).clone()) }),
        )
        .merge(routes::old_versions())
        .merge(routes::oauth::router())
        .merge(routes::forms::public_router())
        .merge(routes::authorize::router())
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: not on this path",
            )
        })
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        // The route template for `serve --metrics-listen` (see [`metrics`]).
        .layer(from_fn(metrics::route_template))
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
    #[error("cannot read the events file {path}: {source}")]
    Events {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Credentials(#[from] credentials_file::WriteError),
}

pub struct ServeOptions {
    pub db: PathBuf,
    pub listen: String,
    pub credentials: Option<PathBuf>,
    pub token_ttl: i64,
    /// Lifetime of authorization codes in seconds (at least 1).
    pub code_ttl: i64,
    /// Record the base URL in the database, for `accounts` commands to
    /// print (off for the in-process target, whose port is ephemeral).
    pub remember_url: bool,
    /// A JSON-lines file of mailing events to record on start (see `store::events`).
    pub events: Option<PathBuf>,
    /// Requests per second allowed per account on `/v3`; `None` (the default) is no limit.
    pub rate_limit: Option<std::num::NonZeroU32>,
    /// FOR TESTS ONLY: failures to inject on `/v3` (see [`faults`]); `None`,
    /// the default, injects nothing. Only `serve --faults` sets it.
    pub faults: Option<faults::FaultSpec>,
    /// The seed of the fault draws (the same seed, the same faults for
    /// requests sent one after another).
    pub fault_seed: u64,
    /// Serve the spec's endpoints only: the live service's extensions
    /// (batch upsert, activate...) answer 404, as on a target without them.
    pub spec_only: bool,
    /// Requests handled at once; more are answered 503 with `Retry-After` (see [`overload`]).
    pub max_in_flight: usize,
    /// How long a request may take before it is answered 503.
    pub request_timeout: std::time::Duration,
    /// The longest wait for the next bytes of a request body; a slower body
    /// is answered 408 (see [`overload`]).
    pub body_timeout: std::time::Duration,
    /// Header-read and idle timeouts, the cap on header size and on open
    /// connections (see [`connections`]).
    pub connections: connections::Limits,
    /// The time tokens, codes, stamps and the rate limit go by: real by
    /// default; tests give a [`store::Clock::test`] and move it on.
    pub clock: store::Clock,
    /// `serve --trusted-proxy`: reverse proxies whose `X-Forwarded-For` or
    /// `Forwarded` header tells where a request comes from, for the limits
    /// of [`auth_failures`]; none by default (the peer address counts).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// `serve --metrics-listen`: where `GET /metrics` answers in the
    /// Prometheus text format, on a listener of its own, never the API's
    /// (see [`metrics`]); `None` (the default) is no metrics.
    pub metrics_listen: Option<String>,
}

impl ServeOptions {
    pub fn new(db: impl Into<PathBuf>, listen: impl Into<String>) -> Self {
        ServeOptions {
            db: db.into(),
            listen: listen.into(),
            credentials: None,
            token_ttl: DEFAULT_TOKEN_TTL_SECS,
            code_ttl: accounts::CODE_TTL_SECS,
            remember_url: true,
            events: None,
            rate_limit: None,
            faults: None,
            fault_seed: 0,
            spec_only: false,
            max_in_flight: overload::DEFAULT_MAX_IN_FLIGHT,
            request_timeout: std::time::Duration::from_secs(overload::DEFAULT_REQUEST_TIMEOUT_SECS),
            body_timeout: std::time::Duration::from_secs(overload::DEFAULT_BODY_TIMEOUT_SECS),
            connections: connections::Limits::default(),
            clock: store::Clock::real(),
            trusted_proxies: Vec::new(),
            metrics_listen: None,
        }
    }

    /// The options with every lifetime, timeout and limit at least its
    /// smallest working value: 1 (second, request, connection), and
    /// [`connections::MIN_MAX_HEADER_BYTES`] for the headers. What `serve`
    /// makes of its flags, so a 0 there never stops the server.
    pub fn bounded(mut self) -> Self {
        let second = std::time::Duration::from_secs(1);
        self.token_ttl = self.token_ttl.max(1);
        self.code_ttl = self.code_ttl.max(1);
        self.max_in_flight = self.max_in_flight.max(1);
        self.request_timeout = self.request_timeout.max(second);
        self.body_timeout = self.body_timeout.max(second);
        let c = &mut self.connections;
        c.header_timeout = c.header_timeout.max(second);
        c.idle_timeout = c.idle_timeout.max(second);
        c.max_connections = c.max_connections.max(1);
        c.max_header_bytes = c.max_header_bytes.max(connections::MIN_MAX_HEADER_BYTES);
        self
    }
}

/// A server running in the background of this process.
pub struct RunningServer {
    pub addr: SocketAddr,
    pub base_url: String,
    /// Set when this start created the default account (the first start).
    pub credentials: Option<Credentials>,
    /// Connections open at once at most: `--max-connections`, or fewer
    /// when the open-file limit is lower.
    pub max_connections: usize,
    /// The open-file limit, found and raised at start (`None`: unknown).
    pub open_files: Option<connections::OpenFiles>,
    pub store: Store,
    /// Where `GET /metrics` answers, when `metrics_listen` was given.
    pub metrics_addr: Option<SocketAddr>,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    metrics_task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningServer {
    /// Stops taking connections, lets requests in flight finish, and waits.
    pub async fn stop(mut self) {
        if let Some(m) = self.metrics_task.take() {
            m.abort();
        }
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
    let open_files = connections::raise_open_file_limit();
    let max_connections = match open_files {
        Some(files) => files.cap(opts.connections.max_connections),
        None => opts.connections.max_connections.max(1),
    };
    if max_connections < opts.connections.max_connections {
        tracing::warn!(target: LOG_TARGET,
            max_connections,
            asked = opts.connections.max_connections,
            "fewer connections than asked: the open-file limit is lower"
        );
    }
    let store = Store::open_with_clock(&opts.db, opts.clock.clone())?;
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
    let remember_url = opts.remember_url;
    let credentials = store
        .write(move |c| {
            if remember_url {
                store::set_setting(c, "base_url", &url)?;
            }
            if accounts::account_count(c)? > 0 {
                return Ok(None);
            }
            // On PostgreSQL another server process may make it since the
            // count: that start then created it, and this one did not.
            let (app, secret) = match accounts::create_account(c, DEFAULT_ACCOUNT) {
                Err(StoreError::Conflict(_)) => return Ok(None),
                made => made?,
            };
            // The login of `listpipe auth login` works out of the box.
            accounts::set_app_name(c, &app, "listpipe")?;
            store::redirect_uris::register(c, app.id, store::redirect_uris::LOGIN_CALLBACK)?;
            let (email, password) = store::users::create_first(c, app.account)?;
            let tokens = accounts::issue_pair(c, app.account, app.id, ttl)?;
            let mut creds = credentials_of(&url, &app.client_id, &secret, tokens);
            creds.user_email = Some(email);
            creds.user_password = Some(password);
            Ok(Some(creds))
        })
        .await?;
    if let (Some(creds), Some(path)) = (&credentials, &opts.credentials) {
        write_credentials(path, creds)?;
    }

    if let Some(path) = &opts.events {
        let text = std::fs::read_to_string(path).map_err(|source| ServeError::Events {
            path: path.clone(),
            source,
        })?;
        let loaded = store.write(move |c| store::events::load(c, &text)).await?;
        for skipped in &loaded.skipped {
            tracing::warn!(target: LOG_TARGET, file = %path.display(), "event skipped: {skipped}");
        }
        tracing::info!(target: LOG_TARGET, file = %path.display(), events = loaded.events, "mailing events recorded");
    }
    if let Some(spec) = &opts.faults {
        tracing::warn!(target: LOG_TARGET, faults = %spec, seed = opts.fault_seed, "FAULT INJECTION IS ON: requests fail on purpose");
    }
    let state = AppState {
        store: store.clone(),
        base_url: base_url.clone(),
        token_ttl: ttl,
        code_ttl: opts.code_ttl.max(1),
        rate_limit: opts
            .rate_limit
            .map(|n| std::sync::Arc::new(ratelimit::RateLimit::per_second(n, &opts.clock))),
        faults: opts
            .faults
            .clone()
            .map(|spec| std::sync::Arc::new(faults::Faults::new(spec, opts.fault_seed))),
        tokens: auth::TokenCache::default(),
        auth_failures: std::sync::Arc::new(auth_failures::AuthFailures::new(
            opts.trusted_proxies.clone(),
        )),
        spec_only: opts.spec_only,
    };
    // Outermost: the bounds, so a refused request costs no decoding at all.
    let bounds = overload::Bounds::new(opts.max_in_flight, opts.request_timeout, opts.body_timeout);
    let (metrics, metrics_addr, metrics_task) = match &opts.metrics_listen {
        Some(listen) => {
            let (m, addr, task) = serve_metrics(listen, &store).await?;
            (Some(m), Some(addr), Some(task))
        }
        None => (None, None, None),
    };
    // Outside even the bounds, so their 503s are counted too (a no-op
    // without `metrics_listen`).
    let service = from_fn_with_state(metrics, metrics::record).layer(
        from_fn_with_state(bounds, overload::bound)
            .layer(from_fn(wire::normalize).layer(app(state))),
    );
    let (tx, rx) = oneshot::channel::<()>();
    let limits = opts.connections;
    let task = tokio::spawn(connections::serve(
        listener,
        service,
        limits,
        max_connections,
        async {
            let _ = rx.await;
        },
    ));
    tracing::debug!(target: LOG_TARGET, %base_url, db = %opts.db.display(), "serving the v3 API");
    Ok(RunningServer {
        addr,
        base_url,
        credentials,
        max_connections,
        open_files,
        store,
        metrics_addr,
        shutdown: Some(tx),
        task,
        metrics_task,
    })
}

/// Binds `listen` and serves `GET /metrics` there in the background, with
/// the figures of `store` among them.
async fn serve_metrics(
    listen: &str,
    store: &Store,
) -> Result<
    (
        std::sync::Arc<metrics::Metrics>,
        SocketAddr,
        tokio::task::JoinHandle<()>,
    ),
    ServeError,
> {
    let bind = |source| ServeError::Bind {
        addr: listen.to_string(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let m = std::sync::Arc::new(metrics::Metrics::new().with_store(store));
    let router = metrics::router(m.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(target: LOG_TARGET, cause = %e, "the metrics listener stopped");
        }
    });
    tracing::debug!(target: LOG_TARGET, %addr, "serving /metrics");
    Ok((m, addr, task))
}

//! `serve --metrics-listen ADDR` (issue 61): the server's own figures in the
//! Prometheus text format, at `GET /metrics` on a listener of its own.
//!
//! Why a separate listener: the API's port is the one exposed to clients
//! (often to the internet through a proxy); `/metrics` needs no token and
//! tells how busy the server is, so it is never on that port. It is off
//! unless asked for, and loopback (`127.0.0.1:9464`) is the natural address.
//!
//! How a request is recorded: [`record`] is the outermost layer (outside
//! the overload bounds, so their 503s count too) and measures status and
//! latency; but the route template ([`axum::extract::MatchedPath`], e.g.
//! `/v3/groups/{group_id}/receivers`) is known only inside the router. So
//! [`record`] puts an empty [`RouteSlot`] into the request's extensions and
//! [`route_template`], a `Router::layer` of [`crate::serve::app`], fills it in.
//! (Request extensions travel inward intact; the response is rebuilt by
//! the wire layer, so its extensions would not come back out.) A request
//! no route matched is `route="unmatched"`: the raw path would make one
//! series per URL a client tries.
//!
//! The store's figures: the rows its writes committed, by table and
//! operation (`listpipe_server_rows_written_total{table, op}`, counted by
//! the store itself, [`crate::store::written`]: a write rolled back counts
//! nothing), and its connections, read when `/metrics` is asked for
//! (in use and idle, at most, and on SQLite the writer's queue).

use crate::store::Store;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectionLabels {
    state: &'static str,
}

/// The store's connections, set from [`Store::pool`] at each scrape.
struct Pool {
    store: Store,
    connections: Family<ConnectionLabels, Gauge>,
    max: Gauge,
    /// SQLite only.
    write_queue: Option<Gauge>,
}

/// Latency buckets in seconds: 1 ms to 10 s, the span of a batch upsert
/// on SQLite to a request held up to `--request-timeout`.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The server's metrics: one per process, shared by every request.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    rate_limited: Counter,
    unavailable: Counter,
    token_grants: Counter,
    auth_failures: Counter,
    pool: Option<Pool>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "listpipe_server_requests",
            "Requests answered, by route template, method and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "listpipe_server_request_duration_seconds",
            "Time from a request's arrival to its answer, by route template and method",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "listpipe_server_requests_in_flight",
            "Requests being handled now",
            in_flight.clone(),
        );
        let rate_limited = Counter::default();
        registry.register(
            "listpipe_server_rate_limited",
            "Requests answered 429 Too Many Requests (serve --rate-limit)",
            rate_limited.clone(),
        );
        let unavailable = Counter::default();
        registry.register(
            "listpipe_server_unavailable",
            "Requests answered 503 Service Unavailable (over --max-in-flight or --request-timeout)",
            unavailable.clone(),
        );
        let token_grants = Counter::default();
        registry.register(
            "listpipe_server_token_grants",
            "Tokens granted by the token endpoint (its 200 answers)",
            token_grants.clone(),
        );
        let auth_failures = Counter::default();
        registry.register(
            "listpipe_server_auth_failures",
            "Requests answered 401 Unauthorized (a missing, wrong or expired token, or client credentials refused)",
            auth_failures.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            in_flight,
            rate_limited,
            unavailable,
            token_grants,
            auth_failures,
            pool: None,
        }
    }

    /// These metrics with the store's: the rows it wrote, its connections.
    pub fn with_store(mut self, store: &Store) -> Self {
        self.registry.register(
            "listpipe_server_rows_written",
            "Rows the store's committed writes inserted (or upserted), updated or deleted, by table and operation",
            store.rows_written().clone(),
        );
        let connections = Family::<ConnectionLabels, Gauge>::default();
        self.registry.register(
            "listpipe_server_store_connections",
            "The store's database connections now, in use (running a statement) or idle (open and free)",
            connections.clone(),
        );
        let max = Gauge::default();
        self.registry.register(
            "listpipe_server_store_connections_max",
            "The store's database connections at most (SQLite: its writer and readers; PostgreSQL: the pool's size)",
            max.clone(),
        );
        let write_queue = store.pool().write_queue.map(|_| {
            let g = Gauge::default();
            self.registry.register(
                "listpipe_server_store_write_queue",
                "SQLite: writes queued for the writer thread's next group commit (at most 1024, then 503)",
                g.clone(),
            );
            g
        });
        self.pool = Some(Pool {
            store: store.clone(),
            connections,
            max,
            write_queue,
        });
        self
    }

    /// The registry in the Prometheus text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        if let Some(p) = &self.pool {
            let now = p.store.pool();
            let set = |g: &Gauge, n: usize| g.set(i64::try_from(n).unwrap_or(i64::MAX));
            set(
                &p.connections
                    .get_or_create(&ConnectionLabels { state: "in_use" }),
                now.in_use,
            );
            set(
                &p.connections
                    .get_or_create(&ConnectionLabels { state: "idle" }),
                now.idle,
            );
            set(&p.max, now.max);
            if let (Some(g), Some(n)) = (&p.write_queue, now.write_queue) {
                set(g, n);
            }
        }
        let mut text = String::new();
        prometheus_text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    fn observe(&self, route: String, method: String, status: u16, seconds: f64) {
        match status {
            429 => {
                self.rate_limited.inc();
            }
            503 => {
                self.unavailable.inc();
            }
            401 => {
                self.auth_failures.inc();
            }
            _ => {}
        }
        // The token endpoint and its alias without `.php`.
        if status == 200 && matches!(route.as_str(), listpipe_api::paths::TOKEN | "/oauth/token") {
            self.token_grants.inc();
        }
        self.latency
            .get_or_create(&RouteLabels {
                route: route.clone(),
                method: method.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
    }
}

/// Where [`route_template`] leaves the matched route for [`record`].
#[derive(Clone, Default)]
pub struct RouteSlot(Arc<OnceLock<String>>);

/// The outermost layer: counts and times every request, when metrics are on.
pub async fn record(
    State(m): State<Option<Arc<Metrics>>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(m) = m else {
        return next.run(req).await;
    };
    let slot = RouteSlot::default();
    req.extensions_mut().insert(slot.clone());
    let method = req.method().as_str().to_string();
    // Counts down even if the request's future is dropped (a client gone).
    struct InFlight(Gauge);
    impl Drop for InFlight {
        fn drop(&mut self) {
            self.0.dec();
        }
    }
    m.in_flight.inc();
    let _in_flight = InFlight(m.in_flight.clone());
    let started = Instant::now();
    let res = next.run(req).await;
    let route = slot
        .0
        .get()
        .cloned()
        .unwrap_or_else(|| "unmatched".to_string());
    m.observe(
        route,
        method,
        res.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    res
}

/// Inside the router: hands the route template to [`record`].
pub async fn route_template(req: Request, next: Next) -> Response {
    if let (Some(slot), Some(path)) = (
        req.extensions().get::<RouteSlot>(),
        req.extensions().get::<MatchedPath>(),
    ) {
        let _ = slot.0.set(path.as_str().to_string());
    }
    next.run(req).await
}

/// The metrics listener's one route.
async fn metrics(State(m): State<Arc<Metrics>>) -> Response {
    match m.encode() {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                prometheus_text::CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(_) => axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The router of the metrics listener: `GET /metrics`, nothing else.
pub fn router(m: Arc<Metrics>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .with_state(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::params;
    use crate::store::invalid;

    #[tokio::test]
    async fn the_store_series_count_committed_rows_only_and_show_the_connections() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("m.db")).unwrap();
        let m = Metrics::new().with_store(&store);
        store
            .write(|c| c.batch("CREATE TABLE t (n INTEGER)"))
            .await
            .unwrap();
        for n in 0..3i64 {
            store
                .write(move |c| c.exec("INSERT INTO t (n) VALUES (?1)", params![n]))
                .await
                .unwrap();
        }
        // Written, then refused: rolled back to its savepoint, not counted.
        let refused = store
            .write(|c| {
                c.exec("INSERT INTO t (n) VALUES (9)", params![])?;
                invalid::<()>("refused".to_string())
            })
            .await;
        assert!(refused.is_err());
        store
            .call(|c| c.exec("UPDATE t SET n = n + 1 WHERE n < 2", params![]))
            .await
            .unwrap();
        store
            .write(|c| c.exec("DELETE FROM t WHERE n = 9", params![]))
            .await
            .unwrap();
        let text = m.encode().unwrap();
        for line in [
            "listpipe_server_rows_written_total{table=\"t\",op=\"insert\"} 3",
            "listpipe_server_rows_written_total{table=\"t\",op=\"update\"} 2",
            "listpipe_server_store_connections{state=\"in_use\"} 0",
            "listpipe_server_store_connections{state=\"idle\"} 5",
            "listpipe_server_store_connections_max 5",
            "listpipe_server_store_write_queue 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        // Nothing deleted: no series for it.
        assert!(!text.contains("op=\"delete\""), "{text}");
    }
}

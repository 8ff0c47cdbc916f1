//! `listpipe serve`: the built-in target server in the foreground.

use crate::server::faults::FaultSpec;
use crate::server::{self, DEFAULT_TOKEN_TTL_SECS, ServeOptions};
use clap::{Args, Subcommand};
use std::num::NonZeroU32;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub action: Option<ServeAction>,
    /// The database: a SQLite file, or a PostgreSQL database as
    /// postgres://user:password@host:port/name (several `serve` processes
    /// may share one). Created with a default account on first start.
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    /// Address to listen on; port 0 picks a free port (the URL is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Where the first start writes the default account's credentials (JSON, mode 0600).
    #[arg(long)]
    pub credentials: Option<PathBuf>,
    /// Lifetime of access tokens in seconds.
    #[arg(long, default_value_t = DEFAULT_TOKEN_TTL_SECS)]
    pub token_ttl: i64,
    /// Lifetime of authorization codes in seconds (the authorization page's codes).
    #[arg(long, value_name = "SECS", default_value_t = crate::server::store::accounts::CODE_TTL_SECS)]
    pub code_ttl: i64,
    /// Mailing events to record on start: JSON lines
    /// {"email", "mailing_id", "type": send|open|click|bounce, "stamp"} (for the svcevent_mail_* filter fields).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Requests per second allowed per account on /v3 (all its tokens together); over it answers 429 with
    /// Retry-After. No limit unless given.
    #[arg(long, value_name = "N")]
    pub rate_limit: Option<NonZeroU32>,
    /// FOR TESTING CLIENTS ONLY: fail a share of /v3 requests on purpose, e.g.
    /// 500=0.05,429=0.05,reset=0.01,reset_after=0.01,delay=200ms@0.05
    /// (see docs/server.md, "Fault injection"). Off unless given.
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<FaultSpec>,
    /// The seed of --faults: the same seed gives the same faults to requests
    /// sent one after another.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "faults")]
    pub fault_seed: u64,
    /// Serve only the spec's endpoints: the live service's extensions (batch
    /// upsert, insert, activate...) answer 404, as a target without them would.
    #[arg(long)]
    pub spec_only: bool,
    /// Requests handled at once; more are answered at once with 503 and
    /// Retry-After (nothing of them is written).
    #[arg(long, value_name = "N", default_value_t = crate::server::overload::DEFAULT_MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
    /// Seconds a request may take; a slower one is answered 503 with Retry-After.
    #[arg(long, value_name = "SECS", default_value_t = crate::server::overload::DEFAULT_REQUEST_TIMEOUT_SECS)]
    pub request_timeout: u64,
    /// Seconds a request body may go without a byte (and it must arrive whole
    /// within --request-timeout); a slower one is answered 408 and the
    /// connection closed. A body is read before the request counts against
    /// --max-in-flight, so slow uploads hold no one else up.
    #[arg(long, value_name = "SECS", default_value_t = crate::server::overload::DEFAULT_BODY_TIMEOUT_SECS)]
    pub body_timeout_secs: u64,
    /// Bytes of a request's line and headers together (at least 8192); more
    /// is answered 431 and the connection closed.
    #[arg(long, value_name = "BYTES", default_value_t = crate::server::connections::DEFAULT_MAX_HEADER_BYTES)]
    pub max_header_bytes: usize,
    /// Seconds from the first byte of a request to its last header; a slower
    /// client is disconnected (a half-sent request holds no connection for long).
    #[arg(long, value_name = "SECS", default_value_t = crate::server::connections::DEFAULT_HEADER_TIMEOUT_SECS)]
    pub header_timeout_secs: u64,
    /// Seconds a connection may stay open without a request (keep-alive)
    /// before the server closes it.
    #[arg(long, value_name = "SECS", default_value_t = crate::server::connections::DEFAULT_IDLE_TIMEOUT_SECS)]
    pub idle_timeout_secs: u64,
    /// Connections open at once (fewer if the open-file limit is lower); past
    /// it the connection idle the longest is closed to make room.
    #[arg(long, value_name = "N", default_value_t = crate::server::connections::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// A reverse proxy in front of this server (repeatable): from it, the
    /// address in X-Forwarded-For (or Forwarded) is where a request comes
    /// from, for the limits on failed logins and client authentications.
    /// From other peers those headers are ignored. None unless given.
    #[arg(long = "trusted-proxy", value_name = "ADDR")]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Answer GET /metrics (Prometheus text format: requests by route,
    /// method and status, latency, requests in flight, 429s and 503s) on
    /// this address, a listener of its own, never the API's port, without
    /// a token: keep it on loopback (e.g. 127.0.0.1:9464). Off unless given.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ServeAction {
    /// Bring the database's schema up to date and exit (`serve` does it on
    /// start too): for a deployment that migrates before it starts servers.
    Migrate {
        /// The database: a SQLite file or a postgres:// URL.
        #[arg(long, default_value = ".listpipe/server.db")]
        db: PathBuf,
    },
}

/// Serves until stopped; a server that cannot start is exit code 3.
pub async fn run(args: ServeArgs) -> super::Outcome {
    if let Some(ServeAction::Migrate { db }) = &args.action {
        return migrate(db)
            .map(|_| super::exit::OK)
            .map_err(super::fail(super::exit::TARGET));
    }
    serve(args)
        .await
        .map(|_| super::exit::OK)
        .map_err(super::fail(super::exit::TARGET))
}

fn migrate(db: &std::path::Path) -> anyhow::Result<()> {
    let store = crate::server::store::Store::open(db)?;
    crate::errln!(
        "listpipe: the schema of {} is up to date ({:?})",
        crate::server::store::shown(db),
        store.backend()
    );
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let secs = std::time::Duration::from_secs;
    let opts = ServeOptions {
        credentials: args.credentials.clone(),
        token_ttl: args.token_ttl,
        code_ttl: args.code_ttl,
        rate_limit: args.rate_limit,
        events: args.events.clone(),
        faults: args.faults.clone(),
        fault_seed: args.fault_seed,
        spec_only: args.spec_only,
        max_in_flight: args.max_in_flight,
        request_timeout: secs(args.request_timeout),
        body_timeout: secs(args.body_timeout_secs),
        connections: crate::server::connections::Limits {
            header_timeout: secs(args.header_timeout_secs),
            idle_timeout: secs(args.idle_timeout_secs),
            max_connections: args.max_connections,
            max_header_bytes: args.max_header_bytes,
        },
        trusted_proxies: args.trusted_proxies.clone(),
        metrics_listen: args.metrics_listen.clone(),
        ..ServeOptions::new(args.db.clone(), args.listen.clone())
    }
    .bounded();
    let running = server::start(opts).await?;
    crate::errln!(
        "listpipe: serving the v3 API at {} (database {})",
        running.base_url,
        crate::server::store::shown(&args.db)
    );
    crate::errln!(
        "listpipe: connections: at most {} open{}; header timeout {} s, idle timeout {} s",
        running.max_connections,
        match running.open_files {
            Some(f) if f.soft > f.was =>
                format!(" (open-file limit raised from {} to {})", f.was, f.soft),
            Some(f) => format!(" (open-file limit {})", f.soft),
            None => String::new(),
        },
        args.header_timeout_secs.max(1),
        args.idle_timeout_secs.max(1)
    );
    if !args.trusted_proxies.is_empty() {
        let proxies: Vec<String> = args.trusted_proxies.iter().map(|p| p.to_string()).collect();
        crate::errln!(
            "listpipe: trusted proxies (their X-Forwarded-For or Forwarded tells the client's address): {}",
            proxies.join(", ")
        );
    }
    if let Some(addr) = running.metrics_addr {
        crate::errln!("listpipe: metrics at http://{addr}/metrics");
    }
    if let Some(n) = args.rate_limit {
        crate::errln!("listpipe: rate limit: {n} requests per second per account");
    }
    if let Some(spec) = &args.faults {
        crate::errln!(
            "listpipe: WARNING: FAULT INJECTION IS ON ({spec}, seed {}): this server fails requests ON PURPOSE; never use it as a real target",
            args.fault_seed
        );
    }
    // The password goes only into the credentials (the file, or stdout
    // without one), never into the log on stderr.
    if let Some(c) = &running.credentials
        && let (Some(email), Some(_)) = (&c.user_email, &c.user_password)
    {
        crate::errln!(
            "listpipe: first start: user {email} of account \"default\" has a random password \
             (for the login page {}/oauth/authorize.php; it is in the credentials as \"user_password\"; \
             change it with `listpipe accounts user`)",
            running.base_url
        );
    }
    match (&running.credentials, &args.credentials) {
        (Some(_), Some(path)) => {
            crate::errln!(
                "listpipe: first start: credentials of account \"default\" written to {}",
                path.display()
            )
        }
        (Some(creds), None) => {
            crate::errln!(
                "listpipe: first start: credentials of account \"default\" (keep them; pass --credentials FILE to save them):"
            );
            crate::outln!("{}", serde_json::to_string_pretty(creds)?);
        }
        (None, _) => crate::errln!(
            "listpipe: existing database; new credentials: listpipe accounts credentials --db {} --name default",
            crate::server::store::shown(&args.db)
        ),
    }
    tokio::select! {
        r = running.wait() => r?,
        _ = tokio::signal::ctrl_c() => crate::errln!("listpipe: stopped"),
    }
    Ok(())
}

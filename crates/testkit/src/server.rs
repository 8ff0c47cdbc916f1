//! A built-in server on port 0 with a temp database, and a client holding
//! its first account's token (moved here from the root package's
//! `tests/it/support.rs`, which builds on it).
//!
//! The database is SQLite in the test's temp dir, or with
//! `LISTPIPE_TEST_BACKEND=postgres` a fresh PostgreSQL database: on the
//! server named by `LISTPIPE_TEST_PG_URL` (one the suite shares, see
//! `crates/server/tests/api/backends.rs`), else on a throwaway server of
//! the test's own.

use crate::pg::PgServer;
use listpipe_api::oauth::Credentials;
use listpipe_api::{Group, GroupInput};
use listpipe_client::ApiClient;
use listpipe_server::store::Clock;
use listpipe_server::{self as server, RunningServer, ServeOptions};
use std::path::PathBuf;

pub struct TestServer {
    pub server: Option<RunningServer>,
    pub creds: Credentials,
    pub client: ApiClient,
    /// The database: the SQLite file's path or a PostgreSQL URL.
    db: PathBuf,
    /// The test's own PostgreSQL server, stopped after the test's server.
    _pg: Option<PgServer>,
    /// The server's clock, kept across restarts: real unless the test
    /// started on a test clock ([`TestServer::start_on_test_clock`]).
    clock: Clock,
    pub dir: tempfile::TempDir,
}

/// Whether this run's servers keep their data in PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("LISTPIPE_TEST_BACKEND").as_deref() == Ok("postgres")
}

/// A fresh database for one test server: its `--db` and, when the test
/// started one, its own PostgreSQL server (keep it while the database is
/// used).
pub fn fresh_database(dir: &std::path::Path) -> (PathBuf, Option<PgServer>) {
    if !on_postgres() {
        return (dir.join("server.db"), None);
    }
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let (admin, own) = match std::env::var("LISTPIPE_TEST_PG_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let pg = PgServer::start().expect("LISTPIPE_TEST_BACKEND=postgres needs PostgreSQL");
            (pg.url(), Some(pg))
        }
    };
    let name = format!(
        "t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let create = format!("CREATE DATABASE {name}");
    let admin_url = admin.clone();
    // The synchronous client must not run inside the test's tokio runtime.
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin_url, postgres::NoTls).expect("connects");
        c.batch_execute(&create).expect("database created");
    })
    .join()
    .expect("create thread");
    let base = admin.rsplit_once('/').expect("a URL with a database").0;
    (PathBuf::from(format!("{base}/{name}")), own)
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with_ttl(server::DEFAULT_TOKEN_TTL_SECS).await
    }

    pub async fn start_with_ttl(ttl: i64) -> TestServer {
        Self::start_with(|o| o.token_ttl = ttl).await
    }

    /// A server on a test clock, which [`TestServer::advance`] moves on
    /// (tokens and codes expire, rate-limit quotas refill, without waiting),
    /// started with options of the test's choosing.
    pub async fn start_on_test_clock(configure: impl FnOnce(&mut ServeOptions)) -> TestServer {
        Self::start_with(|o| {
            o.clock = Clock::test();
            configure(o);
        })
        .await
    }

    /// A server started with options of the test's choosing.
    pub async fn start_with(configure: impl FnOnce(&mut ServeOptions)) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let (db, pg) = fresh_database(dir.path());
        let mut opts = ServeOptions::new(db.clone(), "127.0.0.1:0");
        configure(&mut opts);
        opts.credentials = Some(dir.path().join("credentials.json"));
        let clock = opts.clock.clone();
        let server = server::start(opts).await.expect("server starts");
        let creds = server
            .credentials
            .clone()
            .expect("first start creates credentials");
        let client = ApiClient::new(&server.base_url, &creds.access_token).expect("client");
        TestServer {
            server: Some(server),
            creds,
            client,
            db,
            _pg: pg,
            clock,
            dir,
        }
    }

    /// The server's clock (give it to the options of a restart).
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Moves the server's clock `secs` seconds on (a server started with
    /// [`TestServer::start_on_test_clock`] only).
    pub fn advance(&self, secs: u64) {
        self.clock.advance(secs);
    }

    /// The database's `--db`: the SQLite file, or a PostgreSQL URL.
    pub fn db(&self) -> PathBuf {
        self.db.clone()
    }

    pub fn base_url(&self) -> String {
        self.server.as_ref().expect("running").base_url.clone()
    }

    /// Stops the server and starts it again on the same database.
    pub async fn restart(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
        let mut opts = ServeOptions::new(self.db(), "127.0.0.1:0");
        opts.clock = self.clock();
        let s = server::start(opts).await.expect("server restarts");
        assert!(
            s.credentials.is_none(),
            "a restart must not create a new default account"
        );
        self.client = ApiClient::new(&s.base_url, &self.creds.access_token).expect("client");
        self.server = Some(s);
    }

    /// A client of a second account (another tenant) on the same server.
    pub async fn other_tenant(&self, name: &str) -> ApiClient {
        let url = self.base_url();
        let store = self.server.as_ref().expect("running").store.clone();
        let name = name.to_string();
        let token = store
            .write(move |c| {
                let (app, _) = server::store::accounts::create_account(c, &name)?;
                server::store::accounts::issue_pair(c, app.account, app.id, 3600)
            })
            .await
            .expect("second account");
        ApiClient::new(&url, &token.access_token).expect("client")
    }

    pub async fn group(&self, name: &str) -> Group {
        self.client
            .create_group(&GroupInput::named(name))
            .await
            .expect("group created")
    }

    /// The group named `name` (it must exist).
    pub async fn group_named(&self, name: &str) -> Group {
        self.client
            .groups(None)
            .await
            .expect("groups")
            .into_iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("no group named {name}"))
    }

    /// Every receiver of the group named `name` (up to 5,000), with all detail.
    pub async fn receivers_of(&self, name: &str) -> Vec<listpipe_api::Receiver> {
        let g = self.group_named(name).await;
        let q = listpipe_api::ReceiverQuery {
            pagesize: Some(5000),
            detail: Some(listpipe_api::detail::ALL),
            ..Default::default()
        };
        self.client.receivers(g.id, &q).await.expect("receivers")
    }

    /// A raw HTTP client for wire-level tests, with the token at hand.
    pub fn raw(&self) -> (reqwest::Client, String, String) {
        listpipe_client::init_tls();
        (
            reqwest::Client::new(),
            self.base_url(),
            self.creds.access_token.clone(),
        )
    }
}

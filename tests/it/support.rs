//! Test fixtures: a built-in server on port 0 with a temp database, and a
//! client holding its first account's token: the test-support crate's
//! ([`listpipe_testkit::TestServer`], shared with the server crate's own
//! tests), and what only this package's tests ask of it.
//!
//! The database is SQLite in the test's temp dir, or with
//! `LISTPIPE_TEST_BACKEND=postgres` a fresh PostgreSQL database: on the
//! server named by `LISTPIPE_TEST_PG_URL` (one the suite shares, see
//! `backends.rs`), else on a throwaway server of the test's own.

use listpipe::server::ServeOptions;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

pub(crate) use listpipe_testkit::{free_port, fresh_database, on_postgres, wait_up};

/// The test-support crate's server, and [`TestServer::resolved`], which
/// needs the pipelines' identity of a target (`listpipe::load`, not in the
/// test-support crate: it builds without polars).
pub(crate) struct TestServer(listpipe_testkit::TestServer);

impl Deref for TestServer {
    type Target = listpipe_testkit::TestServer;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for TestServer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl TestServer {
    pub(crate) async fn start() -> TestServer {
        TestServer(listpipe_testkit::TestServer::start().await)
    }

    /// A server on a test clock, which `advance` moves on (tokens and codes
    /// expire, rate-limit quotas refill, without waiting), started with
    /// options of the test's choosing.
    pub(crate) async fn start_on_test_clock(
        configure: impl FnOnce(&mut ServeOptions),
    ) -> TestServer {
        TestServer(listpipe_testkit::TestServer::start_on_test_clock(configure).await)
    }

    /// A server started with options of the test's choosing.
    pub(crate) async fn start_with(configure: impl FnOnce(&mut ServeOptions)) -> TestServer {
        TestServer(listpipe_testkit::TestServer::start_with(configure).await)
    }

    /// This server as a run given `--target-url` `base_url` and the
    /// client's token resolves it (canonical URL and account): what
    /// journals and ledgers are keyed by.
    pub(crate) async fn resolved(&self) -> String {
        let who = self.client.whoami().await.expect("whoami");
        listpipe::load::identity::resolved(
            &listpipe::load::identity::canonical_url(&self.base_url()),
            &who.id.to_string(),
        )
    }
}

/// The `listpipe` binary Cargo built for these tests.
pub(crate) const BINARY: &str = env!("CARGO_BIN_EXE_listpipe");

/// The one way these tests start the binary (the test-support crate's
/// runner), for what only a process shows. Pipelines that only need their
/// report, the server's state and what the run says run in this process
/// instead (`in_process::run_here`, `check_here`).
pub(crate) fn binary() -> std::process::Command {
    listpipe_testkit::cli::command(BINARY)
}

/// `listpipe serve` as a child process on `port`, its database and
/// credentials in `dir`, with `--faults` when given (seed 5).
pub(crate) fn serve_child(
    dir: &std::path::Path,
    port: u16,
    faults: Option<&str>,
) -> std::process::Child {
    let mut cmd = binary();
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--db")
        .arg(dir.join("child.db"))
        .arg("--credentials")
        .arg(dir.join("child-credentials.json"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(f) = faults {
        cmd.args(["--faults", f, "--fault-seed", "5"]);
    }
    cmd.spawn().unwrap()
}

/// `app` served on a free loopback port until the test's runtime ends; its
/// address.
pub(crate) async fn serve_app(app: axum::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// `req` passed on to the server at `target` (a test's proxy), and its
/// answer passed back.
pub(crate) async fn forward(req: axum::extract::Request, target: &str) -> axum::response::Response {
    let url = format!(
        "{target}{}",
        req.uri().path_and_query().map_or("/", |p| p.as_str())
    );
    let (method, headers) = (req.method().clone(), req.headers().clone());
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap();
    let mut forward = reqwest::Client::new().request(method, url).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            forward = forward.header(name, value);
        }
    }
    let answer = forward.send().await.unwrap();
    let status = answer.status();
    let headers = answer.headers().clone();
    let mut response =
        axum::response::Response::new(axum::body::Body::from(answer.bytes().await.unwrap()));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if name != "content-length" && name != "transfer-encoding" {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
}

/// The journal of `step` of the pipeline keyed `pipeline` under `dir`
/// when one target and group wrote it: journals are named
/// `<step>-<16 hex of the target and group>.jsonl` since issue 41 (were
/// `<step>.jsonl`). A path that does not exist while there is none.
pub(crate) fn journal_of_step(dir: &std::path::Path, pipeline: &str, step: &str) -> PathBuf {
    let folder = dir.join(".listpipe/journal").join(pipeline);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&folder)
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.strip_prefix(&format!("{step}-"))
                .and_then(|rest| rest.strip_suffix(".jsonl"))
                .is_some_and(|key| key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect();
    assert!(found.len() <= 1, "journals of several targets: {found:?}");
    found
        .pop()
        .unwrap_or_else(|| folder.join(format!("{step}-none-yet.jsonl")))
}

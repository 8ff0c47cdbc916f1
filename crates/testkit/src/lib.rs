//! What the tests of every crate share (issue 59): the built-in server
//! in-process on port 0 with a temp database ([`TestServer`]), a throwaway
//! PostgreSQL server ([`pg::PgServer`]), a throwaway S3-compatible server
//! (moto's, [`s3::S3Server`]), a command-line runner ([`cli::command`]),
//! a free loopback port and one poll
//! helper ([`eventually`]). It builds on the server, client and API crates
//! only: the server's tests (`crates/server/tests/api`) build without the
//! pipelines and polars.
//!
//! Decision: a fixture that cannot start fails the test that asked for it,
//! as the tests' own unwraps do; this crate is only ever built for tests
//! (`publish = false`, a dev-dependency), so unwrap and expect are allowed
//! here as at the integration tests' roots.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod cli;
pub mod pg;
pub mod s3;
mod server;

pub use server::{TestServer, fresh_database, on_postgres};

use listpipe_client::ApiClient;
use std::time::{Duration, Instant};

/// How often [`eventually`] and [`eventually_blocking`] look again.
const POLL: Duration = Duration::from_millis(100);

/// A free loopback port (the OS picks it; a child server binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `condition` every 100 ms until it holds or `timeout` has passed:
/// whether it held (the caller asserts, saying what it waited for).
pub async fn eventually<F, Fut>(timeout: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`eventually`] outside an async runtime.
pub fn eventually_blocking(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// A client of the server at `url`, once it answers (within a minute).
pub async fn wait_up(url: &str, token: &str) -> ApiClient {
    let client = ApiClient::new(url, token).expect("client");
    let probe = &client;
    let up = eventually(Duration::from_secs(60), move || async move {
        probe.validate().await.is_ok()
    })
    .await;
    assert!(up, "the server at {url} did not come up");
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventually_waits_for_a_condition_and_gives_up_after_its_timeout() {
        let mut calls = 0;
        assert!(eventually_blocking(Duration::from_secs(10), || {
            calls += 1;
            calls == 3
        }));
        assert_eq!(calls, 3);
        let started = Instant::now();
        assert!(!eventually_blocking(Duration::from_millis(250), || false));
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    #[tokio::test]
    async fn eventually_polls_an_async_condition() {
        let mut calls = 0;
        let held = eventually(Duration::from_secs(10), || {
            calls += 1;
            let now = calls;
            async move { now == 2 }
        })
        .await;
        assert!(held);
        assert_eq!(calls, 2);
    }
}

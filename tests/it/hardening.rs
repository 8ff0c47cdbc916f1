//! Connection limits of the built-in server (issue 43): a slowloris of idle
//! and half-sent connections neither starves a normal client nor holds its
//! connections past the timeouts, and a server below its open-file limit
//! makes room by closing the connection idle the longest. And (issue 56)
//! slow bodies hold no in-flight slot and are answered 408 after the body
//! timeout, and a head over the header cap is answered 431, so that
//! unfinished heads cost bounded memory.

use crate::support::TestServer;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `listpipe serve` as a child process whose open-file limit is `soft`
/// (and `hard`), on a port of its choosing; killed when dropped.
pub(crate) struct LimitedServer {
    child: Child,
    pub base_url: String,
    pub token: String,
    /// What it said on stderr up to its first-start credentials.
    said: Vec<String>,
    /// What it said after.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    pub dir: tempfile::TempDir,
}

impl LimitedServer {
    pub(crate) fn start(soft: u64, hard: u64, args: &[&str]) -> LimitedServer {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = crate::support::binary();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(dir.path().join("server.db"))
            .arg("--credentials")
            .arg(dir.path().join("credentials.json"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: setrlimit only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let done = line.contains("credentials of account \"default\" written");
            said.push(line);
            if done {
                break;
            }
        }
        // Keep reading, so that the child never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let base_url = said
            .iter()
            .find_map(|l| l.split("serving the v3 API at ").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no URL in {said:?}"))
            .to_string();
        let creds: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("credentials.json")).unwrap())
                .unwrap();
        LimitedServer {
            child,
            base_url,
            token: creds["access_token"].as_str().unwrap().to_string(),
            said,
            log,
            dir,
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn said(&self, start: &str) -> &str {
        self.said
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in {:?}", self.said))
    }
}

impl Drop for LimitedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This test process needs a file per connection it opens.
pub(crate) fn raise_own_open_file_limit() -> u64 {
    listpipe::server::connections::raise_open_file_limit()
        .expect("the open-file limit")
        .soft
}

/// Whether the server closed `stream` (without waiting).
fn is_closed(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match stream.try_read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// Reads until the server closes `stream`; false if it is still open at `deadline`.
async fn closed_by(stream: &mut TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

async fn validate(http: &reqwest::Client, base: &str, token: &str) -> reqwest::StatusCode {
    http.get(format!("{base}/v3/debug/validate"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .expect("an answer within 3 s")
        .status()
}

#[tokio::test]
async fn at_1024_open_files_1100_idle_and_half_sent_connections_leave_a_client_answered_and_are_closed_after_the_timeouts()
 {
    assert!(
        raise_own_open_file_limit() >= 2400,
        "this test opens 1,100 connections"
    );
    let server = LimitedServer::start(
        1024,
        1024,
        &["--header-timeout-secs", "3", "--idle-timeout-secs", "3"],
    );
    assert_eq!(
        server.said("listpipe: connections:"),
        "listpipe: connections: at most 896 open (open-file limit 1024); header timeout 3 s, idle timeout 3 s"
    );
    let addr = server.base_url.trim_start_matches("http://").to_string();

    // The attack: 1,100 connections, every other one with half a request line.
    let opened = Instant::now();
    let mut held = Vec::with_capacity(1100);
    for n in 0..1100 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        if n % 2 == 1 {
            s.write_all(b"GET /v3/debug/validate HT").await.unwrap();
        }
        held.push(s);
    }

    // A normal client is answered at once, five times in a row.
    listpipe::client::init_tls();
    let http = reqwest::Client::new();
    for _ in 0..5 {
        let asked = Instant::now();
        assert_eq!(validate(&http, &server.base_url, &server.token).await, 200);
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
    }
    // The server held most of them meanwhile: only those past its cap of
    // 896 were closed to make room (unless the opening itself took longer
    // than the timeouts).
    let open = held.iter().filter(|s| !is_closed(s)).count();
    if opened.elapsed() < Duration::from_secs(2) {
        assert!((600..=896).contains(&open), "{open} open");
    }

    // Every one is closed once the timeouts pass, and the server goes on.
    let deadline = Instant::now() + Duration::from_secs(15);
    for s in held.iter_mut() {
        assert!(
            closed_by(s, deadline).await,
            "a connection outlived the timeouts"
        );
    }
    assert!(
        opened.elapsed() >= Duration::from_secs(3),
        "closed before the timeout"
    );
    assert_eq!(validate(&http, &server.base_url, &server.token).await, 200);
}

#[tokio::test]
async fn a_server_raises_its_soft_open_file_limit_to_the_hard_limit() {
    let hard = raise_own_open_file_limit().min(4096);
    assert!(hard > 1024, "this test needs a hard limit above 1024");
    let server = LimitedServer::start(1024, hard, &["--max-connections", "100"]);
    assert_eq!(
        server.said("listpipe: connections:"),
        format!(
            "listpipe: connections: at most 100 open (open-file limit raised from 1024 to {hard}); header timeout 10 s, idle timeout 75 s"
        )
    );
}

#[tokio::test]
async fn past_max_connections_the_connection_idle_the_longest_is_closed_for_a_new_one() {
    let t = TestServer::start_with(|o| o.connections.max_connections = 3).await;
    let addr = t.base_url().trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (http, base, token) = t.raw();
    assert_eq!(validate(&http, &base, &token).await, 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    assert!(
        closed_by(&mut idle[0], deadline).await,
        "the oldest stays open"
    );
    assert!(!is_closed(&idle[1]) && !is_closed(&idle[2]));
}

#[tokio::test]
async fn past_max_connections_with_every_connection_busy_a_new_one_is_answered_503() {
    let t = TestServer::start_with(|o| {
        o.connections.max_connections = 2;
        o.faults = Some("delay=800ms@1".parse().unwrap());
    })
    .await;
    let (_, base, token) = t.raw();
    // Two requests being handled (each on its own connection) fill the cap.
    let slow = (0..2).map(|_| {
        let (base, token) = (base.clone(), token.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            validate(&http, &base, &token).await
        })
    });
    let slow: Vec<_> = slow.collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /v3/debug/validate HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(3), s.read_to_string(&mut answer)).await;
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with(
            r#"{"error":{"code":503,"message":"Service Unavailable: too many connections; retry after 1 s"}}"#
        ),
        "{answer}"
    );
    for task in slow {
        assert_eq!(task.await.unwrap(), 200);
    }
}

/// The server's resident memory now and its peak so far, in KiB
/// (`VmRSS` and `VmHWM` of /proc/PID/status).
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Reads what the server sends on `stream` until it closes it or `deadline`.
async fn answer_by(stream: &mut TcpStream, deadline: Instant) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

#[tokio::test]
async fn six_hundred_slow_bodies_hold_no_in_flight_slot_and_are_answered_408_after_the_body_timeout()
 {
    assert!(
        raise_own_open_file_limit() >= 1400,
        "this test opens 600 connections"
    );
    // 600 is more than the 512 requests handled at once: before issue 56
    // every other client was answered 503 until --request-timeout.
    let server = LimitedServer::start(4096, 4096, &["--body-timeout-secs", "2"]);
    let addr = server.base_url.trim_start_matches("http://").to_string();
    let head = format!(
        "POST /v3/groups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{",
        server.token
    );
    // Connected first, then the heads sent in one quick pass, so that every
    // body starts within a few milliseconds of the others.
    let mut slow = Vec::with_capacity(600);
    for _ in 0..600 {
        slow.push(TcpStream::connect(&addr).await.unwrap());
    }
    let started = Instant::now();
    for s in slow.iter_mut() {
        s.write_all(head.as_bytes()).await.unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    // Ten normal requests meanwhile, each answered 200 within 3 s.
    listpipe::client::init_tls();
    let (base, token) = (server.base_url.clone(), server.token.clone());
    let normal = tokio::spawn(async move {
        let http = reqwest::Client::new();
        for _ in 0..10 {
            let asked = Instant::now();
            assert_eq!(validate(&http, &base, &token).await, 200);
            assert!(asked.elapsed() < Duration::from_secs(3));
        }
    });

    // A byte now and then, each within the body timeout: 2.7 s in all,
    // longer than the timeout, and no body is answered meanwhile.
    let mut last_byte = started;
    for drip in 1..=3u32 {
        tokio::time::sleep_until((started + Duration::from_millis(900) * drip).into()).await;
        for s in slow.iter_mut() {
            let mut buf = [0u8; 512];
            let got = s.try_read(&mut buf);
            assert!(
                matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
                "a body still arriving was answered or closed after {:?} (drip {drip}): {got:?} {}",
                started.elapsed(),
                String::from_utf8_lossy(&buf)
            );
            s.write_all(b" ").await.unwrap();
        }
        last_byte = Instant::now();
    }
    tokio::time::timeout(Duration::from_secs(30), normal)
        .await
        .expect("ten requests within 30 s")
        .unwrap();

    // Then silence: each is answered 408 after the body timeout, and closed.
    tokio::time::sleep_until((last_byte + Duration::from_millis(1500)).into()).await;
    let deadline = last_byte + Duration::from_secs(10);
    let mut timed_out = 0;
    for s in slow.iter_mut() {
        let (answer, closed) = answer_by(s, deadline).await;
        assert!(closed, "a slow body outlived the body timeout");
        if answer.is_empty() {
            continue; // closed without an answer: allowed
        }
        assert!(
            answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{answer}"
        );
        assert!(answer.contains("connection: close\r\n"), "{answer}");
        assert!(
            answer.ends_with(
                r#"{"error":{"code":408,"message":"Request Timeout: the request body came too slowly (more than 2 s without a byte, or not whole within 60 s)"}}"#
            ),
            "{answer}"
        );
        timed_out += 1;
    }
    eprintln!("{timed_out} of 600 slow bodies answered 408, the others closed");
    assert!(timed_out >= 590, "only {timed_out} of 600 answered 408");
    let http = reqwest::Client::new();
    assert_eq!(validate(&http, &server.base_url, &server.token).await, 200);
}

#[tokio::test]
async fn a_head_over_max_header_bytes_is_answered_431_and_one_below_it_is_served() {
    let server = LimitedServer::start(1024, 1024, &[]);
    let addr = server.base_url.trim_start_matches("http://").to_string();
    let ask = |pad: usize| {
        format!(
            "GET /v3/debug/validate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
             X-Pad: {}\r\nConnection: close\r\n\r\n",
            server.token,
            "a".repeat(pad)
        )
    };
    // The default cap is 64 KiB for the request line and headers together.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(ask(60 * 1024).as_bytes()).await.unwrap();
    let (answer, _) = answer_by(&mut s, Instant::now() + Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");

    let mut s = TcpStream::connect(&addr).await.unwrap();
    // The server may close before it took all of it.
    let _ = s.write_all(ask(70 * 1024).as_bytes()).await;
    let (answer, closed) = answer_by(&mut s, Instant::now() + Duration::from_secs(5)).await;
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer}"
    );
    assert!(closed, "the connection stays open after a 431");

    // The option moves the cap.
    let small = LimitedServer::start(1024, 1024, &["--max-header-bytes", "16384"]);
    let addr = small.base_url.trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let _ = s.write_all(ask(20 * 1024).as_bytes()).await;
    let (answer, _) = answer_by(&mut s, Instant::now() + Duration::from_secs(5)).await;
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_thousand_unfinished_400_kb_heads_raise_the_servers_memory_by_at_most_128_mib() {
    assert!(
        raise_own_open_file_limit() >= 2400,
        "this test opens 2,000 connections"
    );
    let server = LimitedServer::start(4096, 4096, &["--header-timeout-secs", "30"]);
    let addr = server.base_url.trim_start_matches("http://").to_string();
    let pid = server.pid();
    listpipe::client::init_tls();
    let http = reqwest::Client::new();
    assert_eq!(validate(&http, &server.base_url, &server.token).await, 200);
    let (before, _) = rss_kib(pid);

    // 1,000 connections, each sending 400 KB of an unfinished head, from
    // eight tasks; then 1,000 each holding 60 KB of one, just under the cap.
    let heads = |pad: usize| {
        let addr = addr.clone();
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let addr = addr.clone();
                tokio::spawn(async move {
                    let head = format!(
                        "GET /v3/groups HTTP/1.1\r\nHost: x\r\nX-Pad: {}",
                        "a".repeat(pad)
                    );
                    let mut held = Vec::with_capacity(125);
                    for _ in 0..125 {
                        let mut s = TcpStream::connect(&addr).await.unwrap();
                        // Refused with a 431 and closed part of the way: fine.
                        let sent = tokio::time::timeout(
                            Duration::from_secs(5),
                            s.write_all(head.as_bytes()),
                        );
                        let _ = sent.await;
                        held.push(s);
                    }
                    held
                })
            })
            .collect();
        async move {
            let mut held = Vec::with_capacity(1000);
            for t in tasks {
                held.extend(t.await.unwrap());
            }
            held
        }
    };
    let started = Instant::now();
    let mut over = tokio::time::timeout(Duration::from_secs(60), heads(400 * 1000))
        .await
        .expect("1,000 heads of 400 KB within 60 s");
    // Give the server a moment to have read what it was sent.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (after_over, peak_over) = rss_kib(pid);
    let mut refused = 0;
    for s in over.iter_mut().take(50) {
        let (answer, closed) = answer_by(s, Instant::now() + Duration::from_secs(2)).await;
        if closed && (answer.is_empty() || answer.starts_with("HTTP/1.1 431 ")) {
            refused += 1;
        }
    }
    assert_eq!(refused, 50, "heads over the cap are refused and closed");
    drop(over);

    let under = tokio::time::timeout(Duration::from_secs(60), heads(60 * 1024))
        .await
        .expect("1,000 heads of 60 KiB within 60 s");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (after_under, peak_under) = rss_kib(pid);
    let open = under.iter().filter(|s| !is_closed(s)).count();
    assert!(
        started.elapsed() > Duration::from_secs(30) || open == 1000,
        "{open} of 1,000 heads under the cap held"
    );
    eprintln!(
        "server RSS: {before} KiB before; 1,000 × 400 KB heads: {after_over} KiB (peak {peak_over}); \
         1,000 × 60 KiB heads held: {after_under} KiB (peak {peak_under})"
    );
    let rise = peak_over.max(peak_under).saturating_sub(before);
    assert!(rise <= 128 * 1024, "memory rose by {rise} KiB");
    drop(under);
}

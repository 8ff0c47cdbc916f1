//! Where the data lives (issue 18): compressed files read as the text inside them, and
//! `http://` sources downloaded from a server the test starts on a loopback port, with
//! their ETag remembered, retries, and every failure an exit 2 naming the URL without its
//! credentials.

use crate::import::run;
use crate::in_process::run_here;
use crate::support::TestServer;
use axum::Router;
use axum::extract::State;
use axum::http::header::{AUTHORIZATION, ETAG, IF_NONE_MATCH, LAST_MODIFIED};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A small CSV as a shop would export it: a header, three customers, one of them twice.
pub(crate) const CUSTOMERS: &str = "email,first name,city\nanna@example.com,Anna,Berlin\nbernd@example.com,Bernd,Bonn\nanna@example.com,Anna,Berlin\ncarla@example.com,Carla,Köln\n";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An import step named `name` reading `source` into the group `group`.
pub(crate) fn import_step(name: &str, source: &str, group: &str) -> String {
    format!(
        "[[import]]\nname = \"{name}\"\nsource = \"{source}\"\ngroup = \"{group}\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.global_attributes]\nfirstname = \"first name\"\ncity = \"city\"\n"
    )
}

/// The group's receivers as (email, global attributes), sorted.
async fn people(t: &TestServer, group: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut people: Vec<_> = t
        .receivers_of(group)
        .await
        .into_iter()
        .map(|r| (r.email, r.global_attributes.into_iter().collect()))
        .collect();
    people.sort();
    people
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[tokio::test]
async fn gzip_and_zstd_files_import_the_same_receivers_as_the_plain_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::create_dir(dir.join("daily")).unwrap();
    write(dir, "customers.csv", CUSTOMERS.as_bytes());
    write(dir, "customers.csv.gz", &gzip(CUSTOMERS.as_bytes()));
    let zst = zstd::encode_all(CUSTOMERS.as_bytes(), 3).unwrap();
    write(&dir.join("daily"), "customers.csv.zst", &zst);
    let tsv = CUSTOMERS.replace(',', "\t");
    write(&dir.join("daily"), "more.tsv.gz", &gzip(tsv.as_bytes()));
    let pipeline = dir.join("p.toml");
    let text = [
        import_step("plain", "customers.csv", "Plain"),
        import_step("gzip", "customers.csv.gz", "Gzip"),
        import_step("glob", "daily/*", "Glob"),
    ]
    .concat();
    std::fs::write(&pipeline, text).unwrap();
    let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let plain = people(&t, "Plain").await;
    assert_eq!(plain.len(), 3);
    assert_eq!(people(&t, "Gzip").await, plain);
    assert_eq!(people(&t, "Glob").await, plain);
    assert_eq!(report["steps"][2]["prepare"]["rows_read"], 8);
}

#[tokio::test]
async fn a_corrupt_gzip_file_stops_with_exit_2_naming_the_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let whole = gzip(CUSTOMERS.as_bytes());
    write(dir, "customers.csv.gz", &whole[..whole.len() / 2]);
    let pipeline = dir.join("p.toml");
    std::fs::write(
        &pipeline,
        import_step("gzip", "customers.csv.gz", "Customers"),
    )
    .unwrap();
    let (code, _, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "p.toml:3:10: {} is not a readable gzip file (",
            dir.join("customers.csv.gz").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("); check the file, or compress it again"),
        "{stderr}"
    );
}

/// What the test's HTTP server has been asked.
#[derive(Default)]
struct Hits {
    export: AtomicUsize,
    not_modified: AtomicUsize,
    flaky: AtomicUsize,
}

/// An HTTP server on a loopback port serving exports the way file hosts do: `/export.csv`
/// with an ETag (answering 304 to a matching `If-None-Match`), `/export.csv.gz`, `/flaky.csv`
/// (a 500 first, then the file), `/private/export.csv` behind basic auth (ann / s3cret),
/// and 404 for anything else. Stopped when the test's runtime ends.
async fn file_server() -> (String, Arc<Hits>) {
    async fn export(State(hits): State<Arc<Hits>>, headers: HeaderMap) -> Response {
        hits.export.fetch_add(1, Ordering::SeqCst);
        if headers.get(IF_NONE_MATCH).is_some_and(|v| v == "\"v1\"") {
            hits.not_modified.fetch_add(1, Ordering::SeqCst);
            return (StatusCode::NOT_MODIFIED, [(ETAG, "\"v1\"")]).into_response();
        }
        (
            [
                (ETAG, "\"v1\""),
                (LAST_MODIFIED, "Mon, 02 Mar 2026 08:00:00 GMT"),
            ],
            CUSTOMERS,
        )
            .into_response()
    }
    async fn gzipped() -> Response {
        gzip(CUSTOMERS.as_bytes()).into_response()
    }
    async fn flaky(State(hits): State<Arc<Hits>>) -> Response {
        match hits.flaky.fetch_add(1, Ordering::SeqCst) {
            0 => (StatusCode::INTERNAL_SERVER_ERROR, "try again").into_response(),
            _ => CUSTOMERS.into_response(),
        }
    }
    async fn private(headers: HeaderMap) -> Response {
        // "ann:s3cret" in base64.
        match headers.get(AUTHORIZATION) {
            Some(v) if v == "Basic YW5uOnMzY3JldA==" => CUSTOMERS.into_response(),
            _ => StatusCode::UNAUTHORIZED.into_response(),
        }
    }
    let hits = Arc::new(Hits::default());
    let app = Router::new()
        .route("/export.csv", get(export))
        .route("/export.csv.gz", get(gzipped))
        .route("/flaky.csv", get(flaky))
        .route("/private/export.csv", get(private))
        .with_state(hits.clone());
    let addr = crate::support::serve_app(app).await;
    (format!("http://{addr}"), hits)
}

/// An HTTP server on a loopback port serving `bytes` at `/{name}` (and 404 elsewhere); the
/// file's URL. Stopped when the test's runtime ends.
pub(crate) async fn serve_bytes(name: &str, bytes: Vec<u8>) -> String {
    let app = Router::new().route(
        &format!("/{name}"),
        get(move || {
            let bytes = bytes.clone();
            async move { bytes.into_response() }
        }),
    );
    let addr = crate::support::serve_app(app).await;
    format!("http://{addr}/{name}")
}

/// A server that announces 1,000 bytes, sends the header row and one customer, and hangs
/// up: a transfer cut off midway, on every try.
async fn cutting_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: text/csv\r\n\r\nemail,first name,city\nanna@example.com,Anna,Berlin\n")
                .await;
            let _ = socket.shutdown().await;
        }
    });
    format!("http://{addr}")
}

async fn groups(t: &TestServer) -> Vec<String> {
    t.client
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect()
}

/// The downloads folder holds nothing once the run is over.
pub(crate) fn downloads_left(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".listpipe/downloads"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_url_source_imports_what_the_file_does_and_an_unchanged_one_is_skipped_the_next_run() {
    let t = TestServer::start().await;
    let (base, hits) = file_server().await;
    let dir = t.dir.path();
    write(dir, "customers.csv", CUSTOMERS.as_bytes());
    let pipeline = dir.join("p.toml");
    let text = [
        import_step("plain", "customers.csv", "Plain"),
        import_step("web", &format!("{base}/export.csv"), "Web"),
        import_step("web gzip", &format!("{base}/export.csv.gz"), "Web gzip"),
    ]
    .concat();
    std::fs::write(&pipeline, text).unwrap();
    let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let plain = people(&t, "Plain").await;
    assert_eq!(people(&t, "Web").await, plain);
    assert_eq!(people(&t, "Web gzip").await, plain);
    assert_eq!(report["steps"][1]["import"]["created"], 3);
    assert_eq!(downloads_left(dir), 0);
    assert!(dir.join(".listpipe/remote/p/web.json").exists());

    let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(hits.export.load(Ordering::SeqCst), 2);
    assert_eq!(hits.not_modified.load(Ordering::SeqCst), 1);
    let web = &report["steps"][1];
    assert_eq!(
        web["skipped"],
        "source unchanged since Mon, 02 Mar 2026 08:00:00 GMT"
    );
    assert!(web.get("import").is_none(), "{web}");
    assert_eq!(web["prepare"]["rows_read"], 0);
    assert!(
        stderr.contains("web: skipped: source unchanged since Mon, 02 Mar 2026 08:00:00 GMT\n"),
        "{stderr}"
    );
    // The gzip URL has no validators: downloaded and read again, nothing new to write.
    assert_eq!(report["steps"][2]["import"]["unchanged"], 3);
}

#[tokio::test]
async fn two_same_named_pipelines_of_two_folders_remember_their_url_sources_apart() {
    let t = TestServer::start().await;
    let (base, _hits) = file_server().await;
    let dir = t.dir.path();
    let pipeline = |folder: &str, group: &str| {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        let path = dir.join(folder).join("p.toml");
        std::fs::write(
            &path,
            import_step("web", &format!("{base}/export.csv"), group),
        )
        .unwrap();
        path
    };
    let (a, b) = (pipeline("a", "Web A"), pipeline("b", "Web B"));
    let (code, _, stderr) = run_here(&t, &a, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    // b's step has never imported the URL: a's download must not skip it
    // (one `.listpipe/remote/p/web.json` for both once did).
    let (code, report, stderr) = run_here(&t, &b, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 3, "{report}");
    assert_eq!(people(&t, "Web B").await, people(&t, "Web A").await);
    for folder in ["a", "b"] {
        assert!(
            dir.join(format!(".listpipe/remote/{folder}/p/web.json"))
                .exists()
        );
    }
    assert!(!dir.join(".listpipe/remote/p").exists());
    // Each remembers its own: a's next run is skipped, unchanged.
    let (code, report, stderr) = run_here(&t, &a, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        report["steps"][0]["skipped"]
            .as_str()
            .is_some_and(|s| s.starts_with("source unchanged since")),
        "{report}"
    );
    assert_eq!(downloads_left(dir), 0);
}

#[tokio::test]
async fn a_server_error_is_retried_and_the_file_imported_once() {
    let t = TestServer::start().await;
    let (base, hits) = file_server().await;
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        import_step("web", &format!("{base}/flaky.csv"), "Web"),
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(hits.flaky.load(Ordering::SeqCst), 2);
    assert_eq!(report["steps"][0]["import"]["created"], 3);
    assert_eq!(people(&t, "Web").await.len(), 3);
}

#[tokio::test]
async fn a_missing_url_stops_the_step_with_exit_2_naming_it_and_creates_nothing() {
    let t = TestServer::start().await;
    let (base, _) = file_server().await;
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        import_step("web", &format!("{base}/gone.csv?token=abc"), "Web"),
    )
    .unwrap();
    let (code, report, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "web: cannot download {base}/gone.csv?…: not found (HTTP 404); check the URL in `source`"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("token=abc"), "{stderr}");
    // The step is in the report with its error and nothing written (issue
    // 41: the report lists the steps a run tried; before, `[]`).
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 1, "{report}");
    assert_eq!(steps[0]["name"], "web");
    assert!(steps[0]["import"].is_null(), "{report}");
    let error = steps[0]["error"].as_str().expect("the step's error");
    assert!(error.starts_with("cannot download "), "{error}");
    assert!(!error.contains("token=abc"), "{error}");
    assert!(!groups(&t).await.contains(&"Web".to_string()));
    assert_eq!(downloads_left(t.dir.path()), 0);
}

#[tokio::test]
async fn a_download_cut_short_of_its_content_length_is_never_imported() {
    let t = TestServer::start().await;
    let base = cutting_server().await;
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        import_step("web", &format!("{base}/export.csv"), "Web"),
    )
    .unwrap();
    let (code, _, stderr) = crate::import::run(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "web: cannot download {base}/export.csv (4 tries): the transfer broke off after 51 of 1000 bytes ("
        )),
        "{stderr}"
    );
    assert!(stderr.contains("); nothing was imported\n"), "{stderr}");
    assert!(!groups(&t).await.contains(&"Web".to_string()));
}

#[tokio::test]
async fn the_password_of_a_url_never_appears_in_messages_or_the_report() {
    let t = TestServer::start().await;
    let (base, _) = file_server().await;
    let host = base.trim_start_matches("http://");
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        [
            import_step(
                "web",
                &format!("http://ann:s3cret@{host}/private/export.csv"),
                "Web",
            ),
            import_step(
                "wrong",
                &format!("http://ann:wrong-pw@{host}/private/export.csv"),
                "Wrong",
            ),
        ]
        .concat(),
    )
    .unwrap();
    let (code, report, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(people(&t, "Web").await.len(), 3);
    assert!(
        stderr.contains(&format!(
            "wrong: cannot download {base}/private/export.csv: access denied (HTTP 401); check the credentials (user:password in the URL) and that they may read this file"
        )),
        "{stderr}"
    );
    let report = report.to_string();
    let state = state_text(&t.dir.path().join(".listpipe"));
    for secret in ["s3cret", "wrong-pw", "ann:"] {
        assert!(!stderr.contains(secret), "{stderr}");
        assert!(!report.contains(secret), "{report}");
        assert!(!state.contains(secret), "{state}");
    }
}

/// Every file under `dir`, as text, one after the other.
fn state_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text += &state_text(&path);
        } else {
            text += &String::from_utf8_lossy(&std::fs::read(&path).unwrap());
        }
    }
    text
}

#[tokio::test]
async fn a_column_missing_from_a_downloaded_source_fails_the_step_with_exit_2() {
    let t = TestServer::start().await;
    let (base, _) = file_server().await;
    let pipeline = t.dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[[import]]\nname = \"web\"\nsource = \"{base}/export.csv\"\ngroup = \"Web\"\ncreate_group = true\n[import.receiver]\nemail = \"e-mail\"\n"
        ),
    )
    .unwrap();
    let (code, _, stderr) = run_here(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("web: the source has no column the step names (\"e-mail\" not found); check the step's column names against the source's header"),
        "{stderr}"
    );
    assert!(!dir_has_validators(t.dir.path()));
}

/// Whether any step's validators were saved.
fn dir_has_validators(dir: &Path) -> bool {
    dir.join(".listpipe/remote/p/web.json").exists()
}

#[test]
fn url_sources_are_checked_offline_for_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[import]]\nsource = \"https://exports.example.com/a.csv\"\ngroup = \"News\"\nother_columns = \"global_attributes\"\n\
         [import.receiver]\nemail = \"email\"\n\
         [[import]]\nsource = \"https://ann:pw@exa mple.com/b.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let err = listpipe::pipeline::load(&file).unwrap_err().to_string();
    let f = file.display();
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            format!(
                "{f}:2:10: `other_columns` needs the source's columns when the pipeline is loaded, and a URL source is downloaded only when the step runs; map its columns by name instead"
            ),
            format!(
                "{f}:8:10: https://exa mple.com/b.csv is not a valid URL (invalid international domain name); write it as https://host/path/file.csv"
            ),
        ]
    );
}

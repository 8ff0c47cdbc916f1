//! Object stores (issue 18): `s3://` sources and exports against an S3-compatible server the
//! test starts (`s3`, moto's server mode). The same rows read from a file, over HTTP, from
//! S3 and from PostgreSQL import the same receivers; an unchanged object skips its step; a
//! glob reads the objects it matches; a missing object or bucket exits 2 naming it; an
//! export appears as an object only when its upload completes, and a failed upload leaves
//! none. The CLI gets the endpoint and credentials in its own environment, as a user sets
//! them for MinIO; none of them appears in what it prints or keeps.

use crate::pg::PgServer;
use crate::remote::{CUSTOMERS, downloads_left, import_step, serve_bytes};
use crate::support::TestServer;
use crate::warehouse::{csv_of, people, pipeline, receivers, sql_of};
use axum::Router;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use listpipe_testkit::s3::{S3Server, SECRET};
use serde_json::Value;
use std::path::Path;

/// `listpipe run` of `pipeline` against the test server with `env` in the child's
/// environment (and no cloud variable of this process's); the exit code, report and stderr.
async fn run_with(
    t: &TestServer,
    pipeline: &Path,
    env: Vec<(&'static str, String)>,
) -> (i32, Value, String) {
    let report = t.dir.path().join("report.json");
    let _ = std::fs::remove_file(&report);
    let mut cmd = crate::support::binary();
    cmd.current_dir(t.dir.path())
        .arg("run")
        .arg(pipeline)
        .args(["--target-url", &t.base_url(), "--token", &t.client.token()])
        .arg("--report")
        .arg(&report)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN");
    for (key, _) in std::env::vars() {
        if ["AWS_", "GOOGLE_", "AZURE_"]
            .iter()
            .any(|p| key.starts_with(p))
        {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn write(t: &TestServer, name: &str, text: &str) -> std::path::PathBuf {
    let path = t.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file under `dir`, as text, one after the other.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text += &all_text(&path);
        } else {
            text += &String::from_utf8_lossy(&std::fs::read(&path).unwrap());
        }
    }
    text
}

#[tokio::test]
async fn the_same_csv_read_locally_over_http_from_s3_and_as_a_postgres_table_imports_the_same_receivers()
 {
    let Some(s3) = S3Server::start() else {
        return;
    };
    let Some(pg) = PgServer::start() else {
        return;
    };
    let rows = people(1000);
    let csv = csv_of(&rows);
    pg.execute(&sql_of(&rows));
    s3.create_bucket("exports").await;
    s3.put("exports", "daily/people.csv", csv.as_bytes()).await;
    let http = serve_bytes("people.csv", csv.clone().into_bytes()).await;
    let t = TestServer::start().await;
    write(&t, "people.csv", &csv);

    let query = "select email, firstname, birthday, points from people order by id;";
    let sources = [
        ("FromFile", "\"people.csv\"".to_string()),
        ("FromHttp", format!("\"{http}\"")),
        ("FromS3", "\"s3://exports/daily/people.csv\"".to_string()),
        (
            "FromPg",
            format!("{{ postgres = \"{}\", query = \"{query}\" }}", pg.url()),
        ),
    ];
    let mut counts = Vec::new();
    for (i, (group, source)) in sources.iter().enumerate() {
        let path = write(&t, &format!("p{i}.toml"), &pipeline(group, source));
        let (code, report, stderr) = run_with(&t, &path, s3.env()).await;
        assert_eq!(code, 1, "{group}: rows were rejected: {stderr}");
        counts.push(report["steps"][0]["prepare"].clone());
    }
    let from_file = receivers(&t, "FromFile").await;
    assert_eq!(from_file.len(), 1000 - 19 - 11);
    for ((group, _), c) in sources.iter().zip(&counts).skip(1) {
        assert_eq!(receivers(&t, group).await, from_file, "{group}");
        assert_eq!(c["rows_read"], 1000, "{group}");
        for key in ["rejected", "duplicates", "reject_examples"] {
            assert_eq!(c[key], counts[0][key], "{group}: {key}");
        }
    }
    assert_eq!(downloads_left(t.dir.path()), 0);
}

#[tokio::test]
async fn an_unchanged_object_skips_the_step_and_a_changed_one_is_read_again() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("exports").await;
    s3.put("exports", "daily/customers.csv", CUSTOMERS.as_bytes())
        .await;
    let t = TestServer::start().await;
    let p = write(
        &t,
        "p.toml",
        &import_step("s3", "s3://exports/daily/customers.csv", "S3"),
    );

    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 3);
    assert_eq!(downloads_left(t.dir.path()), 0);
    let remembered = std::fs::read_to_string(t.dir.path().join(".listpipe/remote/p/s3.json"))
        .expect("the object's ETag is remembered");
    assert!(
        remembered.contains("\"url\": \"s3://exports/daily/customers.csv\""),
        "{remembered}"
    );

    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    let step = &report["steps"][0];
    let skipped = step["skipped"].as_str().unwrap_or_default();
    assert!(skipped.starts_with("source unchanged since "), "{step}");
    assert!(skipped.ends_with(" GMT"), "{step}");
    assert!(step.get("import").is_none(), "{step}");
    assert!(
        stderr.contains(&format!("s3: skipped: {skipped}\n")),
        "{stderr}"
    );

    let more = format!("{CUSTOMERS}dora@example.com,Dora,Dresden\n");
    s3.put("exports", "daily/customers.csv", more.as_bytes())
        .await;
    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 1);
    assert_eq!(report["steps"][0]["import"]["unchanged"], 3);

    for secret in [SECRET, "listpipe-test"] {
        assert!(!stderr.contains(secret), "{stderr}");
        assert!(!report.to_string().contains(secret));
        assert!(!all_text(&t.dir.path().join(".listpipe")).contains(secret));
    }
}

#[tokio::test]
async fn a_glob_in_the_key_reads_the_objects_it_matches_in_that_folder() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("exports").await;
    let header = "email,first name,city\n";
    for (key, row) in [
        (
            "daily/a.csv",
            "anna@example.com,Anna,Berlin\nbernd@example.com,Bernd,Bonn\n",
        ),
        ("daily/b.csv", "carla@example.com,Carla,Köln\n"),
        ("daily/old/c.csv", "dora@example.com,Dora,Dresden\n"),
        ("weekly/d.csv", "emil@example.com,Emil,Essen\n"),
    ] {
        s3.put("exports", key, format!("{header}{row}").as_bytes())
            .await;
    }
    let t = TestServer::start().await;
    let p = write(
        &t,
        "p.toml",
        &import_step("daily", "s3://exports/daily/*.csv", "Daily"),
    );
    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["prepare"]["rows_read"], 3);
    let mut emails: Vec<String> = t
        .receivers_of("Daily")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    emails.sort();
    assert_eq!(
        emails,
        ["anna@example.com", "bernd@example.com", "carla@example.com"]
    );

    let (_, report, _) = run_with(&t, &p, s3.env()).await;
    assert!(report["steps"][0]["skipped"].is_string(), "{report}");

    // An object gone from the matches is a change, though the ones left are not.
    s3.delete("exports", "daily/b.csv").await;
    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(report["steps"][0].get("skipped").is_none(), "{report}");
    assert_eq!(report["steps"][0]["prepare"]["rows_read"], 2);
}

#[tokio::test]
async fn a_missing_object_a_missing_bucket_and_an_empty_glob_exit_2_naming_them() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("exports").await;
    let t = TestServer::start().await;
    let p = write(
        &t,
        "p.toml",
        &[
            import_step("missing", "s3://exports/gone.csv", "Missing"),
            import_step("no bucket", "s3://no-such-bucket/a.csv", "NoBucket"),
            import_step("no match", "s3://exports/none/*.csv", "NoMatch"),
        ]
        .concat(),
    );
    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 2, "{stderr}");
    for line in [
        "listpipe: missing: cannot download s3://exports/gone.csv: not found; check the bucket and key in the URL\n",
        "listpipe: no bucket: cannot download s3://no-such-bucket/a.csv: the bucket \"no-such-bucket\" does not exist; check the bucket in the URL (and AWS_ENDPOINT_URL or AWS_REGION)\n",
        "listpipe: no match: cannot download s3://exports/none/*.csv: no object matches; check the pattern and the bucket in `source`\n",
    ] {
        assert!(stderr.contains(line), "{line}\n{stderr}");
    }
    // Each step is in the report with its error and nothing written
    // (issue 41: the report lists the steps a run tried; before, `[]`).
    let steps = report["steps"].as_array().expect("steps");
    let names: Vec<&str> = steps.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["missing", "no bucket", "no match"], "{report}");
    assert!(
        steps.iter().all(|s| s["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot download"))
            && s["import"].is_null()),
        "{report}"
    );
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert_eq!(
        t.client.groups(None).await.unwrap().len(),
        0,
        "no group was created"
    );
    assert_eq!(downloads_left(t.dir.path()), 0);
}

/// A server that takes connections and never answers: a store that hangs.
async fn silent_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_store_that_does_not_answer_within_the_timeout_exits_2_saying_so() {
    let t = TestServer::start().await;
    let p = write(
        &t,
        "p.toml",
        &format!(
            "[target]\ntimeout_secs = 1\n{}",
            import_step("hangs", "s3://exports/a.csv", "Hangs")
        ),
    );
    let env = vec![
        ("AWS_ENDPOINT_URL", silent_server().await),
        ("AWS_ALLOW_HTTP", "true".to_string()),
        ("AWS_ACCESS_KEY_ID", "listpipe-test".to_string()),
        ("AWS_SECRET_ACCESS_KEY", SECRET.to_string()),
    ];
    let (code, _, stderr) = run_with(&t, &p, env).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "listpipe: hangs: cannot download s3://exports/a.csv: no answer within 1 s (timed out)\n"
        ),
        "{stderr}"
    );
}

/// An import of the customers into "Customers", then its export to `out`.
fn import_then_export(out: &str) -> String {
    format!(
        "{}[[export]]\nname = \"export\"\ngroup = \"Customers\"\nout = \"{out}\"\n",
        import_step("import", "customers.csv", "Customers")
    )
}

#[tokio::test]
async fn an_export_to_s3_uploads_what_an_export_to_a_file_writes() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("exports").await;
    let t = TestServer::start().await;
    write(&t, "customers.csv", CUSTOMERS);
    let p = write(
        &t,
        "p.toml",
        &format!(
            "{}[[export]]\nname = \"local\"\ngroup = \"Customers\"\nout = \"local.csv\"\n",
            import_then_export("s3://exports/out/customers.csv")
        ),
    );
    let (code, report, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][1]["export"]["rows"], 3);
    assert_eq!(
        report["steps"][1]["export"]["file"],
        "s3://exports/out/customers.csv"
    );
    let local = std::fs::read(t.dir.path().join("local.csv")).unwrap();
    assert!(String::from_utf8_lossy(&local).contains("bernd@example.com"));
    assert_eq!(s3.get("exports", "out/customers.csv").await, Some(local));
    assert_eq!(s3.uploads_in_progress("exports").await, 0);
    let staged = std::fs::read_dir(t.dir.path().join(".listpipe/exports")).map_or(0, |d| d.count());
    assert_eq!(staged, 0, "the staged file is removed after the upload");
}

/// A proxy in front of the S3 server that refuses every part of a multipart upload
/// (`403 AccessDenied`) and passes everything else on: an upload that fails midway.
async fn refusing_parts(target: String) -> String {
    async fn pass(req: Request, target: String) -> Response {
        let query = req.uri().query().unwrap_or("").to_string();
        if req.method() == Method::PUT && query.contains("partNumber=") {
            return (
                StatusCode::FORBIDDEN,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
            )
                .into_response();
        }
        crate::support::forward(req, &target).await
    }
    listpipe::client::init_tls();
    let app = Router::new().fallback(move |req: Request| pass(req, target.clone()));
    let addr = crate::support::serve_app(app).await;
    format!("http://{addr}")
}

#[tokio::test]
async fn a_failed_upload_is_aborted_and_leaves_no_object() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("exports").await;
    let t = TestServer::start().await;
    write(&t, "customers.csv", CUSTOMERS);

    let proxy = refusing_parts(s3.endpoint()).await;
    let env: Vec<_> = s3
        .env()
        .into_iter()
        .map(|(k, v)| {
            if k == "AWS_ENDPOINT_URL" {
                (k, proxy.clone())
            } else {
                (k, v)
            }
        })
        .collect();
    let p = write(&t, "p.toml", &import_then_export("s3://exports/fail.csv"));
    let (code, _, stderr) = run_with(&t, &p, env).await;
    assert_eq!(code, 74, "{stderr}");
    assert!(
        stderr.contains("listpipe: export: cannot write s3://exports/fail.csv: access denied; check the credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or the machine's role) and that they may use this object; the upload was aborted and no object was written\n"),
        "{stderr}"
    );
    assert_eq!(s3.get("exports", "fail.csv").await, None);
    assert_eq!(
        s3.uploads_in_progress("exports").await,
        0,
        "the parts were removed"
    );

    let p = write(
        &t,
        "q.toml",
        &import_then_export("s3://no-such-bucket/list.csv"),
    );
    let (code, _, stderr) = run_with(&t, &p, s3.env()).await;
    assert_eq!(code, 74, "{stderr}");
    assert!(
        stderr.contains("listpipe: export: cannot write s3://no-such-bucket/list.csv: the bucket \"no-such-bucket\" does not exist; check the bucket in the URL (and AWS_ENDPOINT_URL or AWS_REGION); nothing was uploaded\n"),
        "{stderr}"
    );
    assert!(!stderr.contains(SECRET), "{stderr}");
}

#[test]
fn object_urls_are_checked_when_the_pipeline_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[import]]\nsource = \"s3://exports\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n\
         [[export]]\ngroup = \"News\"\nout = \"gs://exports/*.csv\"\n",
    )
    .unwrap();
    let err = listpipe::pipeline::load(&file).unwrap_err().to_string();
    let f = file.display();
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            format!(
                "{f}:2:10: s3://exports names no object (the key after the bucket is empty or ends in /); write it as s3://exports/path/file.csv"
            ),
            format!(
                "{f}:8:7: gs://exports/*.csv is a pattern; an export writes one object: name it without *, ? or ["
            ),
        ]
    );
}

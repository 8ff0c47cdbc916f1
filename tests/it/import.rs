//! `listpipe run` and `check` end to end: the real binary, the shipped
//! pipelines and samples, against a built-in server on port 0; then the
//! server's state read back.

use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::{ReceiverQuery, detail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

pub(crate) fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs the binary in `dir` (where `.listpipe/` goes) with `args`.
pub(crate) fn listpipe(dir: &Path, args: &[&str]) -> Output {
    listpipe_with(dir, args, &[])
}

/// `listpipe export --target-url URL --token TOKEN ARGS...` against the test
/// server in its folder, on a blocking thread (the server goes on answering).
pub(crate) fn spawn_export(t: &TestServer, args: &[&str]) -> tokio::task::JoinHandle<Output> {
    let mut all = vec![
        "export".to_string(),
        "--target-url".into(),
        t.base_url(),
        "--token".into(),
        t.client.token(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    let dir = t.dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        listpipe(&dir, &all.iter().map(String::as_str).collect::<Vec<_>>())
    })
}

/// [`listpipe`] with environment variables set for the child only (the
/// test process's own environment is shared by every test).
pub(crate) fn listpipe_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    crate::support::binary()
        .current_dir(dir)
        .args(args)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// `listpipe run` against the test server, returning the exit code and the JSON report.
pub(crate) async fn run(t: &TestServer, pipeline: &Path, extra: &[&str]) -> (i32, Value, String) {
    run_with(t, pipeline, extra, &[]).await
}

/// [`run`] with environment variables set for the child only.
pub(crate) async fn run_with(
    t: &TestServer,
    pipeline: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, String) {
    run_at(t, &t.base_url(), pipeline, extra, env).await
}

/// [`run_with`] against `url`, a proxy in front of the test server.
pub(crate) async fn run_at(
    t: &TestServer,
    url: &str,
    pipeline: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, String) {
    let report = t.dir.path().join("report.json");
    let token = t.client.token();
    let mut args = vec![
        "run",
        pipeline.to_str().unwrap(),
        "--target-url",
        url,
        "--token",
        &token,
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let dir = t.dir.path().to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        listpipe_with(
            &dir,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &env,
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()
}

#[tokio::test]
async fn the_quickstart_imports_every_valid_row_once_and_rejects_the_rest() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run_here(&t, &repo("pipelines/quickstart.toml"), &[]).await;
    assert_eq!(
        code, 1,
        "rows were rejected, so the exit code is 1\n{stderr}"
    );

    let shop = step(&report, "shop-customers");
    assert_eq!(shop["prepare"]["rows_read"], 40);
    assert_eq!(
        shop["prepare"]["rejected"],
        serde_json::json!({"invalid birthday": 1, "invalid email": 2, "missing email": 1, "wrong number of fields": 1})
    );
    assert_eq!(shop["prepare"]["duplicates"], 2);
    assert_eq!(
        (
            shop["import"]["created"].as_u64(),
            shop["import"]["blocked"].as_u64()
        ),
        (Some(31), Some(2))
    );

    let c = &t.client;
    let groups = c.groups(None).await.unwrap();
    let news = groups.iter().find(|g| g.name == "Newsletter").unwrap();
    let crm = groups.iter().find(|g| g.name == "CRM").unwrap();
    let stats = c.group_stats(news.id).await.unwrap();
    // 33 unique customers, 2 on the blacklist; 7 without newsletter consent await activation.
    assert_eq!(
        (stats.total_count, stats.active_count, stats.inactive_count),
        (31, 24, 7)
    );
    assert_eq!(stats.order_count, 28);
    assert_eq!(c.group_stats(crm.id).await.unwrap().total_count, 14);

    // The duplicate in other case and spaces was merged into the first row.
    let j = c
        .group_receiver(news.id, "juergen.schulz@example.com", detail::ALL)
        .await
        .unwrap();
    assert_eq!(j.global_attributes["city"], "Stuttgart");
    assert_eq!(j.global_attributes["firstname"], "Jürgen");
    assert_eq!(j.global_attributes["salutation"], "m");
    assert_eq!(j.global_attributes["zip"], "70173");
    assert_eq!(j.attributes["customer_group"], "stammkunde");
    assert_eq!(j.tags.unwrap(), ["Shop.Outdoor", "Shop.Sport"]);
    assert_eq!(j.orders.unwrap().len(), 1);
    let b = c
        .group_receiver(news.id, "baerbel.mueller@example.com", detail::ORDERS)
        .await
        .unwrap();
    assert_eq!(b.orders.unwrap().len(), 5);
    assert!(b.active && b.registered == b.activated && b.registered > 0);
    // Leading zeros of zip codes survive (text, not numbers).
    assert_eq!(b.global_attributes["zip"], "01067");

    // Blacklisted customers are blocked, not imported.
    assert_eq!(
        c.receiver("thomas.baecker@example.com", None, 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    let blacklist = c.blacklist().await.unwrap();
    assert_eq!(blacklist.len(), 9);
    assert!(blacklist.iter().any(|e| e.email == "*@spam.example"));

    // The XLSX: dates from date cells, phone numbers whole, consent not invented.
    let lena = c
        .group_receiver(crm.id, "lena.hoffmann@example.org", detail::TAGS)
        .await
        .unwrap();
    assert_eq!(lena.global_attributes["birthday"], "1991-04-17");
    assert_eq!(lena.global_attributes["phone"], "4915112345678");
    assert!(!lena.active && lena.registered > 0);
    assert_eq!(lena.tags.unwrap(), ["crm", "newsletter", "vip"]);

    // The rejects file: the input's own delimiter and columns, with row number, field and
    // reason, in UTF-8 (the source is Windows-1252; issue 12).
    let rejects = std::fs::read(
        t.dir
            .path()
            .join(quickstart_rejects(t.dir.path(), "shop-customers")),
    )
    .unwrap();
    let text = String::from_utf8(rejects).expect("the rejects file is UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].ends_with(";Kundengruppe;row_number;field;reason"),
        "{}",
        lines[0]
    );
    // Read as CSV: a reason may hold the delimiter (then it is quoted).
    let rows: Vec<String> = csv::ReaderBuilder::new()
        .delimiter(b';')
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().rev().nth(2).unwrap().to_string())
        .collect();
    assert_eq!(rows, ["6", "10", "13", "18", "22"]);
    assert!(
        text.contains("K-10012;Frau;Katrin;Löffler;"),
        "raw values kept"
    );
    assert!(
        text.contains(";13;birthday;\"\"\"31.02.1990\"\" is not a date in the format %d.%m.%Y\""),
        "{text}"
    );
    let orders = std::fs::read_to_string(
        t.dir
            .path()
            .join(quickstart_rejects(t.dir.path(), "shop-customers-orders")),
    )
    .unwrap();
    assert!(
        orders.contains("unknown.customer@example.net") && orders.contains(",price,"),
        "{orders}"
    );
}

#[tokio::test]
async fn a_second_run_of_the_same_files_writes_nothing() {
    let t = TestServer::start().await;
    run_here(&t, &repo("pipelines/quickstart.toml"), &[]).await;
    let (_, report, stderr) = run_here(&t, &repo("pipelines/quickstart.toml"), &[]).await;
    for s in report["steps"].as_array().unwrap() {
        let load = if s["kind"] == "import" {
            &s["import"]
        } else {
            &s["blacklist"]
        };
        for key in ["created", "updated", "added", "failed", "write_requests"] {
            assert!(
                load[key].is_null() || load[key] == 0,
                "{} {key}: {}\n{stderr}",
                s["name"],
                load[key]
            );
        }
    }
    assert_eq!(step(&report, "shop-customers")["import"]["unchanged"], 31);
}

#[tokio::test]
async fn a_dry_run_plans_every_row_and_changes_nothing() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run(&t, &repo("pipelines/quickstart.toml"), &["--dry-run"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(t.client.groups(None).await.unwrap().is_empty());
    assert!(t.client.blacklist().await.unwrap().is_empty());
    let plan_path = t.dir.path().join(
        step(&report, "shop-customers")["plan_file"]
            .as_str()
            .unwrap(),
    );
    let plan = std::fs::read_to_string(plan_path).unwrap();
    let count = |action: &str| {
        plan.lines()
            .filter(|l| l.split(',').nth(2) == Some(action))
            .count()
    };
    assert_eq!(
        (count("create"), count("invalid"), count("duplicate")),
        (33, 5, 2),
        "{plan}"
    );
    assert!(
        plan.starts_with("row_number,email,action,detail\n2,baerbel.mueller@example.com,create,")
    );
}

#[tokio::test]
async fn blacklist_batches_never_carry_more_than_1000_entries() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut csv = String::from("address;note\n");
    for i in 0..2500 {
        csv.push_str(&format!("person{i}@example.com;import\n"));
    }
    std::fs::write(dir.join("list.csv"), csv).unwrap();
    std::fs::write(
        dir.join("bl.toml"),
        "[[blacklist]]\nsource = \"list.csv\"\nemail = \"address\"\ncomment = \"note\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &dir.join("bl.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let b = &report["steps"][0]["blacklist"];
    assert_eq!(
        (
            b["added"].as_u64(),
            b["requests"].as_u64(),
            b["largest_batch"].as_u64()
        ),
        (Some(2500), Some(3), Some(1000))
    );
    assert_eq!(t.client.blacklist().await.unwrap().len(), 2500);
}

#[tokio::test]
async fn a_row_the_target_refuses_goes_to_the_rejects_file_with_the_servers_message() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let g = t.group("News").await;
    // The target holds `size` as a number; the pipeline sends text.
    t.client
        .create_group_attribute(
            g.id,
            &listpipe::api::AttributeInput::new("size", listpipe::api::AttributeType::Number),
        )
        .await
        .unwrap();
    std::fs::write(
        dir.join("in.csv"),
        "email,size\na@example.com,42\nb@example.com,large\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[[import]]\nname = \"sizes\"\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n[import.attributes]\nsize = \"size\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        (
            report["steps"][0]["import"]["created"].as_u64(),
            report["steps"][0]["import"]["failed"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let rejects =
        std::fs::read_to_string(dir.join(".listpipe/rejects/p/sizes.rejects.csv")).unwrap();
    assert_eq!(rejects.lines().count(), 2, "{rejects}");
    assert!(
        // Written in a batch upsert: the item's status is the server's message.
        rejects.contains("b@example.com,large,3,email,\"Bad Request: \"\"size\"\" is a number attribute; \"\"large\"\" is not a number\""),
        "{rejects}"
    );
    let listed = t
        .client
        .receivers(g.id, &ReceiverQuery::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
}

// Multi-threaded: the binary runs blocking while this runtime serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_target_or_a_bad_token_exits_3_and_a_bad_file_exits_2() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("in.csv"), "email\na@example.com\n").unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
    let p = dir.join("p.toml");
    let p = p.to_str().unwrap();
    // A closed port: bind one, note it, drop it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = listpipe(
        dir,
        &[
            "run",
            p,
            "--target-url",
            &format!("http://{closed}"),
            "--token",
            "x",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = listpipe(
        dir,
        &["run", p, "--target-url", &t.base_url(), "--token", "wrong"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused the token"));
    std::fs::write(dir.join("bad.toml"), "[[import]]\nsorce = 1\n").unwrap();
    let out = listpipe(dir, &["run", dir.join("bad.toml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // A group that does not exist (and may not be created) is reported; the run goes on and exits 1.
    let out = listpipe(
        dir,
        &[
            "run",
            p,
            "--target-url",
            &t.base_url(),
            "--token",
            &t.client.token(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set `create_group = true`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn an_expired_token_is_refreshed_from_the_credentials_file_and_saved() {
    let t = TestServer::start_on_test_clock(|o| o.token_ttl = 1).await;
    let dir = t.dir.path();
    std::fs::write(dir.join("in.csv"), "email\na@example.com\n").unwrap();
    let pipeline = format!(
        "[target]\nurl = \"{}\"\ncredentials = \"credentials.json\"\n[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n",
        t.base_url()
    );
    std::fs::write(dir.join("p.toml"), pipeline).unwrap();
    t.advance(2);
    let d = dir.to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        listpipe(&d, &["run", d.join("p.toml").to_str().unwrap()])
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved: listpipe::api::oauth::Credentials =
        serde_json::from_slice(&std::fs::read(dir.join("credentials.json")).unwrap()).unwrap();
    assert_ne!(
        saved.refresh_token, t.creds.refresh_token,
        "the new refresh token was saved"
    );
}

#[test]
fn check_previews_counts_and_writes_rejects_without_a_target() {
    let dir = tempfile::tempdir().unwrap();
    let out = listpipe(
        dir.path(),
        &["check", repo("pipelines/quickstart.toml").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("row 2: {\"email\":\"baerbel.mueller@example.com\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("33 receivers to send, 28 orders"),
        "{stdout}"
    );
    assert!(
        dir.path()
            .join(quickstart_rejects(dir.path(), "shop-customers"))
            .exists()
    );
}

#[tokio::test]
async fn every_shipped_pipeline_runs_against_the_builtin_server() {
    let mut shipped: Vec<PathBuf> = std::fs::read_dir(repo("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    shipped.sort();
    assert!(shipped.len() >= 2);
    for pipeline in shipped {
        let t = TestServer::start().await;
        let (code, report, stderr) = run_here(&t, &pipeline, &[]).await;
        assert!(
            code == 0 || code == 1,
            "{}: exit {code}\n{stderr}",
            pipeline.display()
        );
        let wrote: u64 = report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s["import"]["created"]
                    .as_u64()
                    .or(s["blacklist"]["added"].as_u64())
                    .or(s["export"]["rows"].as_u64())
                    .unwrap_or(0)
            })
            .sum();
        assert!(wrote > 0, "{} wrote nothing\n{stderr}", pipeline.display());
        for s in report["steps"].as_array().unwrap() {
            if s["kind"] == "export" {
                continue;
            }
            let failed = s["import"]["failed"]
                .as_u64()
                .or(s["blacklist"]["failed"].as_u64());
            assert_eq!(failed, Some(0), "{}: {}", pipeline.display(), s["name"]);
        }
    }
}

#[tokio::test]
async fn orders_on_rows_keep_every_line_of_a_customer_imported_once() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run_here(&t, &repo("pipelines/orders-on-rows.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["created"], 4);
    let g = t
        .client
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.name == "Shop buyers")
        .unwrap();
    let mia = t
        .client
        .group_receiver(
            g.id,
            "mia.schmidt@example.com",
            detail::ORDERS | detail::TAGS,
        )
        .await
        .unwrap();
    let orders = mia.orders.unwrap();
    assert_eq!(orders.len(), 3);
    assert_eq!((orders[0].price, orders[1].quantity), (129.9, 2));
    assert_eq!(mia.tags.unwrap(), ["Shop.buyer"]);
    assert!(!mia.active, "buyers are registered, not activated");
    let noah = t
        .client
        .group_receiver(g.id, "noah.fischer@example.com", detail::ORDERS)
        .await
        .unwrap();
    assert!(
        noah.orders.unwrap().iter().any(|o| o.price == 1299.0),
        "1.299,00 with a decimal comma"
    );
}

#[tokio::test]
async fn consent_is_not_invented_and_now_timestamps_are_set_once() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("in.csv"),
        "email,salutation\na@example.com,Herr\nb@example.com,Dr.\n",
    )
    .unwrap();
    // No timestamps mapped: receivers are registered, not active.
    std::fs::write(
        dir.join("plain.toml"),
        "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n[import.global_attributes]\nsalutation = { column = \"salutation\", type = \"gender\" }\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &dir.join("plain.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["group_created"], true);
    assert!(stderr.contains("group created"), "{stderr}");
    assert_eq!(
        report["steps"][0]["prepare"]["rejected"]["invalid salutation"], 1,
        "\"Dr.\" is no gender"
    );
    let g = t.client.groups(None).await.unwrap().remove(0);
    let a = t
        .client
        .group_receiver(g.id, "a@example.com", 0)
        .await
        .unwrap();
    assert!(!a.active && a.registered > 0 && a.activated == 0);

    // `value = "now"` is the time of the first import: a later run leaves it.
    std::fs::write(
        dir.join("now.toml"),
        "[[import]]\nsource = \"in.csv\"\ngroup = \"Now\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\nactivated = { value = \"now\" }\n",
    )
    .unwrap();
    run_here(&t, &dir.join("now.toml"), &[]).await;
    // The first import's time, moved an hour back in the target, so that it
    // differs from any later run's "now" without waiting for the clock to
    // turn a second: a later run that sent its "now" would change it.
    let g = t.group_named("Now").await;
    let mut first = Vec::new();
    for email in ["a@example.com", "b@example.com"] {
        let r = t.client.group_receiver(g.id, email, 0).await.unwrap();
        let earlier = listpipe::api::ReceiverInput {
            registered: Some(r.registered - 3600),
            activated: Some(r.activated - 3600),
            ..Default::default()
        };
        t.client
            .update_receiver(g.id, email, &earlier)
            .await
            .unwrap();
        first.push(r.activated - 3600);
    }
    let (_, report, _) = run_here(&t, &dir.join("now.toml"), &[]).await;
    assert_eq!(
        (
            report["steps"][0]["import"]["updated"].as_u64(),
            report["steps"][0]["import"]["unchanged"].as_u64()
        ),
        (Some(0), Some(2))
    );
    for (email, first) in ["a@example.com", "b@example.com"].into_iter().zip(first) {
        let r = t.client.group_receiver(g.id, email, 0).await.unwrap();
        assert_eq!(r.activated, first, "{email}");
    }
}

/// The rejects file of `step` of the repository's quickstart run from
/// `cwd`: outside it, the pipeline's state is keyed by its name and a hash
/// of its path.
fn quickstart_rejects(cwd: &Path, step: &str) -> PathBuf {
    let state =
        listpipe::pipeline::state_name_in(cwd, &repo("pipelines/quickstart.toml"), "quickstart");
    assert!(state.starts_with("quickstart-"), "{state}");
    PathBuf::from(format!(".listpipe/rejects/{state}/{step}.rejects.csv"))
}

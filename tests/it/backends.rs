//! The built-in server on PostgreSQL (issue 19). The API suite (the modules
//! that exercise the server's endpoints) runs again in a child process of
//! this test binary with `LISTPIPE_TEST_BACKEND=postgres`, each test server
//! on a fresh database of one throwaway PostgreSQL server (`pg.rs`),
//! stopped after; `LISTPIPE_PG_SUITE` (space-separated test filters) runs
//! others instead. Then what only PostgreSQL has: several server processes
//! on one database, and a database that goes away.

use crate::pg::PgServer;
use crate::support::{free_port, wait_up};
use listpipe::api::{GroupInput, ReceiverQuery};
use listpipe::client::ApiClient;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tests that run on both backends: the modules of the suite that
/// exercise the server's endpoints (the others test pipelines, sources and
/// the client, whatever the server stores in). The tests of the endpoints
/// alone are the server crate's (`crates/server/tests/api`), which runs all
/// of them again on PostgreSQL itself (`backends.rs` there).
const SUITE: &[&str] = &[
    "accounts::",
    "addresses::",
    "authorize::",
    "dates::",
    "export::",
    "fidelity::",
    "forms::",
    "import::",
    "safety::",
    "third_party::",
    "token_security::",
    "writes::",
];
/// Tests left out: one gives its tokens a lifetime of a second or two and
/// then runs a whole import on them (the server crate's suite leaves out
/// another for the same reason), which a loaded machine can
/// outrun on PostgreSQL, where no process caches a checked token (SQLite's
/// five-second cache hides it).
const SKIP: &[&str] =
    &["import::an_expired_token_is_refreshed_from_the_credentials_file_and_saved"];

#[test]
fn the_api_suite_passes_on_postgres() {
    if crate::support::on_postgres() {
        return; // the child run itself
    }
    let Some(pg) = PgServer::start() else { return };
    let chosen = std::env::var("LISTPIPE_PG_SUITE").ok();
    let filters: Vec<&str> = match &chosen {
        Some(list) => list.split_whitespace().collect(),
        None => SUITE.to_vec(),
    };
    listpipe_testkit::pg::rerun_on_postgres(&pg, &filters, SKIP);
}

/// `n` rows from `from` on, each with a tag, and a pipeline importing them
/// into the group "Shared".
fn pipeline(dir: &Path, name: &str, from: usize, n: usize) -> PathBuf {
    let mut csv = String::from("email,tags\n");
    for i in from..from + n {
        csv.push_str(&format!("user{i}@example.com,t{}\n", i % 7));
    }
    std::fs::write(dir.join(format!("{name}.csv")), csv).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"[target]
url = "builtin"
concurrency = 4
retries = 12

[[import]]
name = "{name}"
source = "{name}.csv"
group = "Shared"

[import.receiver]
email = "email"

[import.tags]
columns = "tags"
"#
        ),
    )
    .unwrap();
    path
}

/// Two `serve` processes on one PostgreSQL database are one server: started
/// at once they make one default account, a token of one works on the
/// other, and two imports of overlapping files, one through each at the
/// same time, end with every address once, the same through both.
#[tokio::test]
async fn two_server_processes_on_one_database_are_one_server() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let db = pg.database("shared");
    let bin = crate::support::BINARY;

    let migrated = Command::new(bin)
        .args(["serve", "migrate", "--db", &db])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&migrated.stderr);
    assert!(migrated.status.success(), "{said}");
    assert!(said.contains("is up to date"), "{said}");
    assert!(
        !said.contains(crate::pg::PASSWORD),
        "the password is shown: {said}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ports = [free_port(), free_port()];
    let mut servers: Vec<Child> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            Command::new(bin)
                .args([
                    "serve",
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--db",
                    &db,
                ])
                .arg("--credentials")
                .arg(dir.join(format!("credentials{i}.json")))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let read_token = |i: usize| -> Option<String> {
        let bytes = std::fs::read(dir.join(format!("credentials{i}.json"))).ok()?;
        let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        json["access_token"].as_str().map(str::to_string)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let token = loop {
        if let Some(t) = read_token(0).or_else(|| read_token(1)) {
            break t;
        }
        assert!(Instant::now() < deadline, "no server wrote credentials");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let urls = ports.map(|p| format!("http://127.0.0.1:{p}"));
    let first = wait_up(&urls[0], &token).await;
    let second = wait_up(&urls[1], &token).await;
    assert!(
        read_token(0).is_none() || read_token(1).is_none(),
        "both processes made a default account"
    );
    let group = first
        .create_group(&GroupInput::named("Shared"))
        .await
        .unwrap();

    // Rows 0..1500 through one, 1000..2500 through the other: 500 in both.
    let runs: Vec<Child> = [("a", 0, &urls[0]), ("b", 1000, &urls[1])]
        .into_iter()
        .map(|(name, from, url)| {
            let path = pipeline(dir, name, from, 1500);
            Command::new(bin)
                .current_dir(dir)
                .args(["run", path.to_str().unwrap(), "--quiet"])
                .args(["--target-url", url, "--token", &token])
                .env_remove("LISTPIPE_URL")
                .env_remove("LISTPIPE_TOKEN")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = tokio::task::spawn_blocking(move || run.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let query = ReceiverQuery {
        pagesize: Some(5000),
        detail: Some(listpipe::api::detail::ALL),
        ..Default::default()
    };
    let through_first = first.receivers(group.id, &query).await.unwrap();
    let through_second = second.receivers(group.id, &query).await.unwrap();
    let emails: BTreeSet<String> = through_first.iter().map(|r| r.email.clone()).collect();
    let expected: BTreeSet<String> = (0..2500).map(|i| format!("user{i}@example.com")).collect();
    assert_eq!(through_first.len(), 2500, "every address once");
    assert_eq!(emails, expected);
    let ids = |rs: &[listpipe::api::Receiver]| rs.iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(&through_first), ids(&through_second));
    for r in &through_first {
        let i: usize = r.email[4..r.email.find('@').unwrap()].parse().unwrap();
        assert_eq!(
            r.tags.as_deref(),
            Some(&[format!("t{}", i % 7)][..]),
            "{}",
            r.email
        );
    }
    for mut s in servers.drain(..) {
        let _ = s.kill();
        let _ = s.wait();
    }
}

/// A server in this process on a new database `name` of `pg`: the server,
/// its first access token and the database's URL.
async fn serve_on(pg: &PgServer, name: &str) -> (listpipe::server::RunningServer, String, String) {
    serve(pg.database(name)).await
}

/// A server in this process on the database at `db`: the server, its
/// first access token and the URL.
async fn serve(db: String) -> (listpipe::server::RunningServer, String, String) {
    let running = listpipe::server::start(listpipe::server::ServeOptions::new(
        db.clone(),
        "127.0.0.1:0",
    ))
    .await
    .expect("server starts");
    let token = running
        .credentials
        .clone()
        .expect("first start")
        .access_token;
    (running, token, db)
}

/// While its database is down the server answers 503 with `Retry-After`
/// (a client's signal to wait and retry), writes nothing, and serves again
/// once the database is back, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_503_with_retry_after_until_it_is_back() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let (running, token, _) = serve_on(&pg, "down").await;
    let client = ApiClient::new(&running.base_url, &token).unwrap();
    client
        .create_group(&GroupInput::named("Before"))
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let groups = format!("{}/v3/groups.json", running.base_url);

    tokio::task::block_in_place(|| pg.stop());
    for attempt in 0..3 {
        let answer = http
            .post(&groups)
            .bearer_auth(&token)
            .json(&serde_json::json!({"name": format!("During {attempt}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 503, "attempt {attempt}");
        assert_eq!(answer.headers()["retry-after"], "1");
        let body: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], 503, "{body}");
    }

    tokio::task::block_in_place(|| pg.start_again());
    let names: Vec<String> = client
        .groups(None)
        .await
        .expect("served again")
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(names, ["Before"], "nothing was written while it was down");
    running.stop().await;
}

/// `--rate-limit` holds for a token across the server processes sharing a
/// database: 20 requests at once, half through each of two servers with a
/// limit of 5 per second, pass about 5 in all, not 5 through each.
#[tokio::test]
async fn a_rate_limit_holds_across_servers_on_one_database() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let db = pg.database("limited");
    let mut servers = Vec::new();
    for _ in 0..2 {
        let mut opts = listpipe::server::ServeOptions::new(db.clone(), "127.0.0.1:0");
        opts.rate_limit = std::num::NonZeroU32::new(5);
        servers.push(listpipe::server::start(opts).await.expect("server starts"));
    }
    let token = servers[0]
        .credentials
        .clone()
        .expect("first start")
        .access_token;
    assert!(servers[1].credentials.is_none(), "one default account");
    let clients: Vec<ApiClient> = servers
        .iter()
        .map(|s| ApiClient::new(&s.base_url, &token).unwrap())
        .collect();
    let calls = (0..20).map(|i| clients[i % 2].validate());
    let started = std::time::Instant::now();
    let refused = futures::future::join_all(calls)
        .await
        .into_iter()
        .filter(|r| r.as_ref().is_err_and(|e| e.status() == Some(429)))
        .count();
    // The burst of 5 and a few more (up to 8), or 5 a second for as long as
    // the calls took to arrive where that is more (on a loaded machine they
    // spread: 9 passed once in a full run beside a build). Two limits of
    // their own would pass 10 at once.
    let passed = 20 - refused;
    let allowed = 8.max(6 + (5.0 * started.elapsed().as_secs_f64()).ceil() as usize);
    assert!(
        (5..=allowed).contains(&passed),
        "{passed} of 20 passed in {:?}",
        started.elapsed()
    );
    for s in servers {
        s.stop().await;
    }
}

/// On PostgreSQL an address differing only in the case of a non-ASCII
/// letter is the same contact (the `nocase` collation), and a batch that
/// names it so updates the receiver instead of failing on the unique key.
#[tokio::test]
async fn a_batch_finds_an_address_whatever_the_case_of_its_letters() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let (running, token, _) = serve_on(&pg, "umlauts").await;
    let client = ApiClient::new(&running.base_url, &token).unwrap();
    let group = client.create_group(&GroupInput::named("U")).await.unwrap();
    for (email, tag) in [
        ("Ärger@example.com", "first"),
        ("ärger@EXAMPLE.com", "second"),
    ] {
        let item = serde_json::json!({"email": email, "tags": [tag]});
        let answer = client.upsert_receivers(group.id, &[item]).await.unwrap();
        assert!(
            format!("{answer:?}").contains("success"),
            "{email}: {answer:?}"
        );
    }
    let query = ReceiverQuery {
        detail: Some(listpipe::api::detail::ALL),
        ..Default::default()
    };
    let all = client.receivers(group.id, &query).await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].email, "Ärger@example.com");
    assert_eq!(
        all[0].tags.as_deref(),
        Some(&["first".to_string(), "second".to_string()][..])
    );
    running.stop().await;
}

/// A receiver's tags come in SQLite's order of text, byte by byte, even on
/// a database whose locale sorts otherwise (ICU's root locale puts `é` and
/// `E` before `f`): its create, its read, its group's page and its tag list
/// all agree.
#[tokio::test]
async fn tags_keep_one_order_whatever_the_database_locale() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let db = pg.database_with(
        "root_locale",
        "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C'",
    );
    let (running, token, _) = serve(db).await;
    let client = ApiClient::new(&running.base_url, &token).unwrap();
    let group = client.create_group(&GroupInput::named("T")).await.unwrap();
    let input = listpipe::api::ReceiverInput {
        tags: Some(vec!["é".into(), "f".into(), "E".into()]),
        ..listpipe::api::ReceiverInput::email("t@example.com")
    };
    let bytewise = ["E", "f", "é"].map(String::from).to_vec();
    let created = client.create_receiver(group.id, &input).await.unwrap();
    assert_eq!(created.tags.as_ref(), Some(&bytewise), "create");
    let id = created.id.0.to_string();
    let all = listpipe::api::detail::ALL;
    let read = client.receiver(&id, Some(group.id), all).await.unwrap();
    assert_eq!(read.tags.as_ref(), Some(&bytewise), "read");
    let query = ReceiverQuery {
        detail: Some(all),
        ..Default::default()
    };
    let page = client.receivers(group.id, &query).await.unwrap();
    assert_eq!(page[0].tags.as_ref(), Some(&bytewise), "page");
    assert_eq!(
        client.receiver_tags(&id, None).await.unwrap(),
        bytewise,
        "tag list"
    );
    running.stop().await;
}

/// Rows that hang on nothing: receivers of a deleted group, values of a
/// deleted attribute, and whatever a deleted contact carried. PostgreSQL
/// has no foreign keys on these tables (migration 003), so the store's own
/// deletes and locks are what keeps this at zero.
const ORPHANS: &str = "SELECT
    (SELECT COUNT(*) FROM receivers r WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.id = r.group_id))
  + (SELECT COUNT(*) FROM attribute_values v WHERE NOT EXISTS (SELECT 1 FROM attributes a WHERE a.id = v.attribute_id))
  + (SELECT COUNT(*) FROM attribute_values v WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = v.contact_id))
  + (SELECT COUNT(*) FROM tags t WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = t.contact_id))
  + (SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = o.contact_id))
  + (SELECT COUNT(*) FROM contacts c WHERE NOT EXISTS (SELECT 1 FROM receivers r WHERE r.contact_id = c.id))";

fn attribute(name: &str) -> listpipe::api::AttributeInput {
    serde_json::from_value(serde_json::json!({"name": name, "type": "text"})).unwrap()
}

fn item(email: &str) -> serde_json::Value {
    serde_json::json!({
        "email": email,
        "attributes": {"size": "L"},
        "global_attributes": {"city": "Berlin"},
        "tags": ["vip"],
        "orders": [{"order_id": "o1", "product": "shoe", "price": 9.5, "quantity": 1}],
    })
}

/// Removing a receiver, clearing a group, deleting an attribute or a group
/// deletes everything that hung on it, on PostgreSQL as on SQLite's
/// cascades, and so does a group deleted while batches are still writing
/// into it: every batch ends before the delete (and is deleted with the
/// group) or after it (and is refused), none leaves rows behind.
#[tokio::test]
async fn deletes_leave_nothing_behind_even_while_batches_write() {
    if crate::support::on_postgres() {
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let (running, token, db) = serve_on(&pg, "deletes").await;
    let client = ApiClient::new(&running.base_url, &token).unwrap();
    let city = client.create_attribute(&attribute("city")).await.unwrap();
    let (a, b) = (
        client.create_group(&GroupInput::named("A")).await.unwrap(),
        client.create_group(&GroupInput::named("B")).await.unwrap(),
    );
    for g in [a.id, b.id] {
        client
            .create_group_attribute(g, &attribute("size"))
            .await
            .unwrap();
        client
            .upsert_receivers(g, &[item("both@example.com")])
            .await
            .unwrap();
    }
    client
        .upsert_receivers(a.id, &[item("one@example.com")])
        .await
        .unwrap();

    client
        .delete_receiver("one@example.com", Some(a.id))
        .await
        .unwrap();
    client.clear_group(a.id).await.unwrap();
    assert_eq!(pg.number(&db, ORPHANS), 0, "after a removal and a clear");
    assert_eq!(
        pg.number(&db, "SELECT COUNT(*) FROM attribute_values"),
        2,
        "both@ keeps its city and its size in B"
    );
    client.delete_attribute(city.id).await.unwrap();
    client.delete_group(b.id).await.unwrap();
    assert_eq!(
        pg.number(&db, ORPHANS),
        0,
        "after deleting an attribute and a group"
    );
    for table in [
        "contacts",
        "receivers",
        "attribute_values",
        "tags",
        "orders",
    ] {
        let n = pg.number(&db, &format!("SELECT COUNT(*) FROM {table}"));
        assert_eq!(n, 0, "{table} left behind");
    }

    // A group deleted while eight writers fill it.
    let c = client.create_group(&GroupInput::named("C")).await.unwrap();
    client
        .create_group_attribute(c.id, &attribute("size"))
        .await
        .unwrap();
    client.create_attribute(&attribute("city")).await.unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (client, done) = (client.clone(), done.clone());
            tokio::spawn(async move {
                let mut written = 0;
                for batch in 0..40 {
                    let items: Vec<_> = (0..50)
                        .map(|i| item(&format!("w{w}b{batch}i{i}@example.com")))
                        .collect();
                    match client.upsert_receivers(c.id, &items).await {
                        Ok(_) => written += 1,
                        Err(_) => break, // the group is gone
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                written
            })
        })
        .collect();
    while done.load(std::sync::atomic::Ordering::Relaxed) < 16 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    client.delete_group(c.id).await.unwrap();
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(written > 0 && written < 8 * 40, "{written} batches written");
    assert_eq!(pg.number(&db, ORPHANS), 0, "after a delete among writers");
    assert_eq!(pg.number(&db, "SELECT COUNT(*) FROM receivers"), 0);
    running.stop().await;
}

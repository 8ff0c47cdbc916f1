//! `listpipe export` end to end: the quickstart imported into a server on
//! port 0, exported in each format by the real binary, and read back with
//! polars and calamine; segments; the round trip; an interrupted export.

use crate::import::{listpipe, repo, run};
use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::filter::{FilterInput, Rule};
use listpipe::api::{Receiver, ReceiverInput};
use listpipe::server::{self, ServeOptions};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

/// Runs `listpipe export` against the test server (without blocking it).
async fn export(t: &TestServer, args: &[&str]) -> Output {
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
    .await
    .unwrap()
}

async fn quickstart() -> TestServer {
    let t = TestServer::start().await;
    let (code, _, stderr) = run(&t, &repo("pipelines/quickstart.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    t
}

async fn group_receivers(t: &TestServer, name: &str) -> Vec<Receiver> {
    t.receivers_of(name).await
}

fn iso(secs: i64) -> Option<String> {
    (secs != 0).then(|| {
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    })
}

fn strings(df: &DataFrame, col: &str) -> Vec<Option<String>> {
    df.column(col)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|v| v.map(str::to_string))
        .collect()
}

/// A JSON-lines file's rows.
fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One field of JSON-lines rows as text (`None` for null or absent).
fn json_strings(rows: &[serde_json::Value], field: &str) -> Vec<Option<String>> {
    rows.iter()
        .map(|r| r.get(field).and_then(|v| v.as_str()).map(str::to_string))
        .collect()
}

/// Whether every value of a field is of one JSON type, as a column of that
/// type reads them (nulls aside), and at least one is there.
fn json_typed(rows: &[serde_json::Value], field: &str, is: fn(&serde_json::Value) -> bool) -> bool {
    let values: Vec<&serde_json::Value> = rows
        .iter()
        .filter_map(|r| r.get(field))
        .filter(|v| !v.is_null())
        .collect();
    !values.is_empty() && values.into_iter().all(is)
}

fn ints(df: &DataFrame, col: &str) -> Vec<Option<i64>> {
    df.column(col).unwrap().i64().unwrap().iter().collect()
}

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_group_exports_to_each_format_with_the_same_rows_values_and_types() {
    let t = quickstart().await;
    let want = group_receivers(&t, "Newsletter").await;
    assert_eq!(want.len(), 31);
    let dir = t.dir.path();
    for f in ["n.csv", "n.parquet", "n.jsonl", "n.xlsx"] {
        ok(&export(&t, &["--group", "Newsletter", "--out", f, "-q"]).await);
    }
    let emails: Vec<Option<String>> = want.iter().map(|r| Some(r.email.clone())).collect();
    let activated: Vec<Option<String>> = want.iter().map(|r| iso(r.activated)).collect();
    let zips: Vec<Option<String>> = want
        .iter()
        .map(|r| Some(r.global_attributes["zip"].clone()))
        .collect();
    let tags: Vec<Option<String>> = want
        .iter()
        .map(|r| Some(r.tags.clone().unwrap_or_default().join(",")))
        .collect();

    // CSV: all text, read back as text.
    let csv = CsvReadOptions::default()
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(dir.join("n.csv")))
        .unwrap()
        .finish()
        .unwrap();
    let header: Vec<&str> = csv.get_column_names().iter().map(|c| c.as_str()).collect();
    assert_eq!(
        &header[..14],
        [
            "id",
            "email",
            "group_id",
            "registered",
            "activated",
            "deactivated",
            "imported",
            "bounced",
            "source",
            "points",
            "last_ip",
            "last_location",
            "last_client",
            "active"
        ]
    );
    assert_eq!(header.last(), Some(&"tags"));
    assert!(header.contains(&"customer_group") && header.contains(&"phone"));
    assert_eq!(strings(&csv, "email"), emails);
    assert_eq!(strings(&csv, "activated"), activated);
    assert_eq!(strings(&csv, "zip"), zips);
    // An empty CSV field reads back as null.
    let csv_tags: Vec<Option<String>> = strings(&csv, "tags")
        .into_iter()
        .map(|t| Some(t.unwrap_or_default()))
        .collect();
    assert_eq!(csv_tags, tags);

    // Parquet: typed columns.
    let pq = ParquetReader::new(std::fs::File::open(dir.join("n.parquet")).unwrap())
        .finish()
        .unwrap();
    assert_eq!(pq.height(), 31);
    // Issue 45: ids are integers and timestamps TIMESTAMP(ms, UTC), no longer text and epoch seconds.
    assert_eq!(pq.column("id").unwrap().dtype(), &DataType::Int64);
    assert_eq!(pq.column("points").unwrap().dtype(), &DataType::Int64);
    assert_eq!(
        pq.column("activated").unwrap().dtype(),
        &DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
    );
    assert_eq!(pq.column("active").unwrap().dtype(), &DataType::Boolean);
    assert_eq!(strings(&pq, "email"), emails);
    assert_eq!(
        ints(&pq, "id"),
        want.iter().map(|r| Some(r.id.0)).collect::<Vec<_>>()
    );
    assert_eq!(strings(&pq, "zip"), zips);
    let activated_ms: Vec<Option<i64>> = pq
        .column("activated")
        .unwrap()
        .datetime()
        .unwrap()
        .physical()
        .iter()
        .collect();
    assert_eq!(
        activated_ms,
        want.iter()
            .map(|r| (r.activated != 0).then_some(r.activated * 1000))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        pq.column("active")
            .unwrap()
            .bool()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        want.iter().map(|r| Some(r.active)).collect::<Vec<_>>()
    );

    // JSON lines: typed values, ISO timestamps.
    let jl = json_lines(&dir.join("n.jsonl"));
    assert_eq!(json_strings(&jl, "email"), emails);
    assert_eq!(json_strings(&jl, "activated"), activated);
    assert_eq!(json_strings(&jl, "zip"), zips);
    assert!(json_typed(&jl, "points", serde_json::Value::is_i64));
    assert!(json_typed(&jl, "active", serde_json::Value::is_boolean));

    // XLSX: date cells, identifiers and zips as text.
    use calamine::{Data, Reader, Xlsx, open_workbook};
    let mut wb: Xlsx<_> = open_workbook(dir.join("n.xlsx")).unwrap();
    let range = wb.worksheet_range("export").unwrap();
    let rows: Vec<&[Data]> = range.rows().collect();
    assert_eq!(rows.len(), 32);
    let col = |name: &str| {
        rows[0]
            .iter()
            .position(|c| c == &Data::String(name.into()))
            .unwrap()
    };
    let (id, email, act, zip, active) = (
        col("id"),
        col("email"),
        col("activated"),
        col("zip"),
        col("active"),
    );
    for (row, r) in rows[1..].iter().zip(&want) {
        // Issue 45: ids are number cells, no longer text.
        assert_eq!(row[id], Data::Float(r.id.0 as f64));
        assert_eq!(row[email], Data::String(r.email.clone()));
        assert_eq!(row[zip], Data::String(r.global_attributes["zip"].clone()));
        assert_eq!(row[active], Data::Bool(r.active));
        match &row[act] {
            Data::DateTime(d) => {
                assert_eq!(d.as_datetime().unwrap().and_utc().timestamp(), r.activated)
            }
            Data::Empty => assert_eq!(r.activated, 0),
            other => panic!("activated is not a date cell: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_segment_export_holds_exactly_the_receivers_the_filter_selects() {
    let t = quickstart().await;
    let all = group_receivers(&t, "Newsletter").await;
    let g = all[0].group_id;
    let rule = Rule {
        field: "city".into(),
        logic: "eq".into(),
        condition: "Dresden".into(),
    };
    t.client
        .create_filter(
            g,
            &FilterInput {
                name: Some("Dresden".into()),
                rules: Some(vec![rule]),
                operator: Some("AND".into()),
            },
        )
        .await
        .unwrap();
    let want: Vec<String> = all
        .iter()
        .filter(|r| r.global_attributes["city"] == "Dresden")
        .map(|r| r.email.clone())
        .collect();
    assert!(!want.is_empty() && want.len() < all.len());

    ok(&export(
        &t,
        &[
            "--group",
            "Newsletter",
            "--filter",
            "Dresden",
            "--out",
            "saved.jsonl",
        ],
    )
    .await);
    let runtime = export(
        &t,
        &[
            "--group",
            "Newsletter",
            "--rule",
            "city:eq:Dresden",
            "--out",
            "runtime.csv",
            "--columns",
            "email,city=Stadt",
        ],
    )
    .await;
    ok(&runtime);
    let saved = json_lines(&t.dir.path().join("saved.jsonl"));
    let got: Vec<String> = json_strings(&saved, "email")
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(got, want);
    let text = std::fs::read_to_string(t.dir.path().join("runtime.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("email,Stadt"));
    let got: Vec<String> = lines
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert_eq!(got, want);
}

/// What a round trip must keep: email, timestamps (registered, activated,
/// deactivated, bounced), source, points, global and group attributes, tags, orders.
type State = (
    String,
    [i64; 4],
    String,
    i64,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
    Vec<String>,
    Vec<String>,
);

fn state(r: &Receiver) -> State {
    let mut orders: Vec<String> = r
        .orders
        .iter()
        .flatten()
        .map(|o| {
            format!(
                "{}|{}|{}|{}|{}|{}|{}|{}",
                o.order_id,
                o.product_id,
                o.product,
                o.price,
                o.currency,
                o.quantity,
                o.mailing_id,
                o.stamp
            )
        })
        .collect();
    orders.sort();
    (
        r.email.clone(),
        [r.registered, r.activated, r.deactivated, r.bounced],
        r.source.clone(),
        r.points,
        r.global_attributes.clone(),
        r.attributes.clone(),
        r.tags.clone().unwrap_or_default(),
        orders,
    )
}

#[tokio::test]
async fn an_export_reimports_with_a_pipeline_to_the_same_state() {
    let a = quickstart().await;
    ok(&export(
        &a,
        &[
            "--group",
            "Newsletter",
            "--out",
            "rt/newsletter.csv",
            "--orders-out",
            "rt/orders.csv",
        ],
    )
    .await);
    let g = group_receivers(&a, "Newsletter").await[0].group_id;
    let globals = a.client.attributes(None).await.unwrap();
    let locals = a.client.group_attributes(g).await.unwrap();
    let attr = |attrs: &[listpipe::api::Attribute]| {
        attrs
            .iter()
            .map(|x| {
                format!(
                    "{} = {{ column = \"{}\", type = \"{}\" }}\n",
                    x.name, x.name, x.kind
                )
            })
            .collect::<String>()
    };
    let pipeline = format!(
        r#"[[import]]
name = "reimport"
source = "newsletter.csv"
group = "Newsletter"
create_group = true

[import.receiver]
email = "email"
registered = "registered"
activated = "activated"
deactivated = "deactivated"
bounced = "bounced"
source = "source"
points = "points"

[import.global_attributes]
{}
[import.attributes]
{}
[import.tags]
columns = ["tags"]

[import.orders]
source = "orders.csv"
email = "email"
order_id = "order_id"
product_id = "product_id"
product = "product"
price = "price"
currency = "currency"
quantity = "quantity"
mailing_id = "mailing_id"
stamp = "stamp"
"#,
        attr(&globals),
        attr(&locals)
    );
    let dir = a.dir.path().join("rt");
    std::fs::write(dir.join("reimport.toml"), pipeline).unwrap();

    let b = TestServer::start().await;
    let (code, report, stderr) = run_here(&b, &dir.join("reimport.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    // Imports write concurrently, so ids (and list order) differ: compare by address.
    let mut before: Vec<_> = group_receivers(&a, "Newsletter")
        .await
        .iter()
        .map(state)
        .collect();
    let mut after: Vec<_> = group_receivers(&b, "Newsletter")
        .await
        .iter()
        .map(state)
        .collect();
    before.sort();
    after.sort();
    assert_eq!(before.len(), 31);
    assert_eq!(after, before);
}

/// Pages are decoded and encoded on several threads at once; the files
/// must still hold every row once, in the order of one page read at a time.
#[tokio::test]
async fn pages_prepared_at_once_are_written_in_order() {
    let t = quickstart().await;
    let read = |name: &str| std::fs::read(t.dir.path().join(name)).unwrap();
    for ext in ["csv", "jsonl"] {
        for (name, pages, concurrency) in [("one", "5000", "1"), ("many", "2", "8")] {
            ok(&export(
                &t,
                &[
                    "--group",
                    "Newsletter",
                    "--out",
                    &format!("{name}.{ext}"),
                    "--orders-out",
                    &format!("{name}-orders.{ext}"),
                    "--page-size",
                    pages,
                    "--concurrency",
                    concurrency,
                ],
            )
            .await);
        }
        let (one, many) = (read(&format!("one.{ext}")), read(&format!("many.{ext}")));
        assert_eq!(
            String::from_utf8_lossy(&many),
            String::from_utf8_lossy(&one)
        );
        assert_eq!(
            one.iter().filter(|&&b| b == b'\n').count(),
            31 + usize::from(ext == "csv")
        );
        let orders = read(&format!("one-orders.{ext}"));
        assert!(orders.len() > 100, "the quickstart has orders");
        assert_eq!(read(&format!("many-orders.{ext}")), orders);
    }
}

#[tokio::test]
async fn an_interrupted_export_leaves_no_file_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ServeOptions::new(dir.path().join("server.db"), "127.0.0.1:0");
    opts.credentials = Some(dir.path().join("credentials.json"));
    // Every request waits a little, so the export is still running when the server stops.
    opts.faults = Some("delay=50ms@1".parse().unwrap());
    let s = server::start(opts).await.unwrap();
    let token = s.credentials.clone().unwrap().access_token;
    let client = listpipe::client::ApiClient::new(&s.base_url, &token).unwrap();
    let g = client
        .create_group(&listpipe::api::GroupInput::named("Big"))
        .await
        .unwrap();
    let items: Vec<ReceiverInput> = (0..400)
        .map(|i| ReceiverInput::email(format!("r{i}@example.com")))
        .collect();
    client.upsert_receivers(g.id, &items).await.unwrap();

    let out: PathBuf = dir.path().join("big.csv");
    // The temporary file beside the output: `.big.csv.<random>.tmp`.
    let tmp = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(".big.csv.") && n.ends_with(".tmp"))
    };
    let args: Vec<String> = [
        "export",
        "--target-url",
        &s.base_url,
        "--token",
        &token,
        "--group",
        "Big",
        "--out",
        out.to_str().unwrap(),
        "--page-size",
        "10",
        "--concurrency",
        "1",
        "--retries",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cwd = dir.path().to_path_buf();
    let child = tokio::task::spawn_blocking(move || {
        listpipe(&cwd, &args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    for _ in 0..1000 {
        if tmp().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(
        tmp().is_some(),
        "the export never started its temporary file"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    s.stop().await;
    let done = child.await.unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the export stopped after") && stderr.contains("was not written"),
        "{stderr}"
    );
    assert!(!out.exists(), "no output file after a failed export");
    assert_eq!(tmp(), None, "the temporary file is removed");
}

#[test]
fn export_steps_report_every_problem_with_its_position_and_the_valid_choices() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[export]]\ngroup = \"News\"\nout = \"a.csv\"\nformt = \"csv\"\ntype = \"sometimes\"\n\n[[export]]\nblacklist = true\nout = \"b.txt2\"\nrules = [{ field = \"email\", logic = \"ends\" }]\n",
    )
    .unwrap();
    let err = listpipe::pipeline::load(&file).unwrap_err().to_string();
    let f = file.display();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{f}:4:1: unknown key `formt` in [[export]] step 1; valid keys: `name`, `group`, `filter`, `rules`, `operator`, `activeonly`, `blacklist`, `type`, `out`, `format`, `columns`, `tags_separator`, `timestamps`, `delimiter`, `encoding`, `bom`, `quoting`, `orders_out` or `incremental`"
            ),
            format!(
                "{f}:5:8: unknown type \"sometimes\"; valid values: `all`, `active`, `inactive` or `bounce`"
            ),
            format!(
                "{f}:9:7: cannot tell the format of \"b.txt2\" from its extension; set `format` to `csv`, `xlsx`, `parquet` or `jsonl`"
            ),
            format!("{f}:10:9: `rules` cannot go with `blacklist = true`"),
        ]
    );
}

/// A `kill -9` leaves an export's hidden temporary file beside its `out`:
/// the next export to that `out` removes it (older than its start, locked
/// by no one), says so, and leaves a temporary a live writer holds locked
/// and any other destination's.
#[tokio::test]
async fn an_export_removes_the_temporary_files_an_earlier_killed_one_left() {
    let t = TestServer::start().await;
    let g = t
        .client
        .create_group(&listpipe::api::GroupInput::named("Left"))
        .await
        .unwrap();
    let items: Vec<ReceiverInput> = (0..3)
        .map(|i| ReceiverInput::email(format!("l{i}@example.com")))
        .collect();
    t.client.upsert_receivers(g.id, &items).await.unwrap();
    let dir = t.dir.path();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let stale = |name: &str| {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        file.set_modified(hour_ago).unwrap();
        file
    };
    drop(stale(".out.csv.k1LLed.tmp"));
    // A writer still at work holds its temporary file locked.
    let held = stale(".out.csv.L1veW9.tmp");
    held.lock().unwrap();
    drop(stale(".other.csv.k1LLed.tmp"));
    let out = export(&t, &["--group", "Left", "--out", "out.csv"]).await;
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "listpipe: note: removed 1 temporary file left by an earlier run beside out.csv\n"
        ),
        "{stderr}"
    );
    assert!(!dir.join(".out.csv.k1LLed.tmp").exists());
    assert!(dir.join(".out.csv.L1veW9.tmp").exists());
    assert!(dir.join(".other.csv.k1LLed.tmp").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("out.csv"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    drop(held);
}

//! Typed exports (issue 45): a group with timestamps, a `number` and a `date`
//! attribute and tags is exported by the real binary over HTTP, and each
//! format is read back: Parquet through polars (each column's type, which
//! polars takes from the Parquet logical types), JSON lines through
//! serde_json, XLSX through calamine; then the Parquet and JSON-lines files
//! are imported into a second server and give back the same receivers.

use crate::import::{listpipe, run, spawn_export};
use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::Receiver;
use polars::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

/// Three receivers: one with everything, one deactivated without a date or
/// a score, one bounced without a score.
const PEOPLE: &str = "\
email,registered,activated,deactivated,bounced,score,birthday,nick,tags
a@x.de,2024-02-01T13:45:20Z,2024-02-01T14:00:00Z,,,12.5,1990-05-17,Al,vip|news
b@x.de,2024-03-01T10:00:00Z,2024-03-01T10:05:00Z,2024-06-01T08:00:00Z,,7,,,
c@x.de,2024-04-01T09:00:00Z,2024-04-01T09:00:00Z,,2024-07-01T12:00:00Z,,2000-01-31,Cee,news
";

/// An import of `source` into the group "Typed"; `separator` splits tags.
fn pipeline(source: &str, separator: Option<&str>) -> String {
    format!(
        r#"[[import]]
name = "people"
source = "{source}"
group = "Typed"
create_group = true

[import.receiver]
email = "email"
registered = "registered"
activated = "activated"
deactivated = "deactivated"
bounced = "bounced"

[import.global_attributes]
score = {{ column = "score", type = "number" }}
birthday = {{ column = "birthday", type = "date" }}

[import.attributes]
nick = {{ column = "nick" }}

[import.tags]
columns = ["tags"]
{}
"#,
        separator.map_or(String::new(), |s| format!("separator = \"{s}\""))
    )
}

/// A server holding the three receivers.
async fn typed_group() -> TestServer {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("people.csv"), PEOPLE).unwrap();
    std::fs::write(dir.join("people.toml"), pipeline("people.csv", Some("|"))).unwrap();
    let (code, report, stderr) = run(&t, &dir.join("people.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    t
}

/// Runs `listpipe export --group Typed` with `args` (without blocking the server).
async fn export(t: &TestServer, args: &[&str]) -> Output {
    let mut all = vec!["--group", "Typed", "-q"];
    all.extend(args);
    let out = spawn_export(t, &all).await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn by_email(receivers: Vec<Receiver>) -> BTreeMap<String, Receiver> {
    receivers
        .into_iter()
        .map(|r| (r.email.clone(), r))
        .collect()
}

fn utc_ms() -> DataType {
    DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
}

#[tokio::test]
async fn a_parquet_export_types_every_column_and_writes_empty_values_as_nulls() {
    let t = typed_group().await;
    export(&t, &["--out", "typed.parquet"]).await;
    let file = std::fs::File::open(t.dir.path().join("typed.parquet")).unwrap();
    let pq = ParquetReader::new(file).finish().unwrap();
    let list_of_text = DataType::List(Box::new(DataType::String));
    for (column, dtype) in [
        ("id", DataType::Int64),
        ("email", DataType::String),
        ("group_id", DataType::Int64),
        ("registered", utc_ms()),
        ("activated", utc_ms()),
        ("deactivated", utc_ms()),
        ("imported", utc_ms()),
        ("bounced", utc_ms()),
        ("points", DataType::Int64),
        ("active", DataType::Boolean),
        ("score", DataType::Float64),
        ("birthday", DataType::Date),
        ("nick", DataType::String),
        ("tags", list_of_text),
    ] {
        assert_eq!(pq.column(column).unwrap().dtype(), &dtype, "{column}");
    }
    let want = by_email(t.receivers_of("Typed").await);
    let emails: Vec<String> = pq
        .column("email")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|e| e.unwrap().to_string())
        .collect();
    let at = |email: &str| emails.iter().position(|e| e == email).unwrap();
    let (a, b, c) = (at("a@x.de"), at("b@x.de"), at("c@x.de"));
    let ms = |column: &str, row: usize| {
        pq.column(column)
            .unwrap()
            .datetime()
            .unwrap()
            .physical()
            .get(row)
    };
    assert_eq!(ms("registered", a), Some(1_706_795_120_000));
    assert_eq!(ms("deactivated", a), None, "never deactivated is null");
    assert_eq!(
        ms("deactivated", b),
        Some(want["b@x.de"].deactivated * 1000)
    );
    assert_eq!(ms("bounced", c), Some(want["c@x.de"].bounced * 1000));
    let score = pq.column("score").unwrap().f64().unwrap().clone();
    assert_eq!(
        (score.get(a), score.get(b), score.get(c)),
        (Some(12.5), Some(7.0), None)
    );
    let birthday = pq
        .column("birthday")
        .unwrap()
        .date()
        .unwrap()
        .physical()
        .clone();
    assert_eq!(birthday.get(a), Some(7_441), "1990-05-17 is day 7441");
    assert_eq!(birthday.get(b), None, "an empty date is null");
    let nick = pq.column("nick").unwrap().str().unwrap().clone();
    assert_eq!((nick.get(a), nick.get(b)), (Some("Al"), None));
    let ids = pq.column("id").unwrap().i64().unwrap().clone();
    assert_eq!(ids.get(a), Some(want["a@x.de"].id.0));
    let tags = pq.column("tags").unwrap().list().unwrap().clone();
    let tags_of = |row: usize| -> Vec<String> {
        let list = tags.get_as_series(row).unwrap();
        let mut items: Vec<String> = list
            .str()
            .unwrap()
            .iter()
            .map(|t| t.unwrap().to_string())
            .collect();
        items.sort();
        items
    };
    assert_eq!(tags_of(a), ["news", "vip"]);
    assert!(tags_of(b).is_empty());
}

#[tokio::test]
async fn json_lines_write_tags_as_arrays_numbers_as_numbers_and_timestamps_as_iso_strings() {
    let t = typed_group().await;
    export(&t, &["--out", "typed.jsonl"]).await;
    let text = std::fs::read_to_string(t.dir.path().join("typed.jsonl")).unwrap();
    let lines: BTreeMap<String, Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["email"].as_str().unwrap().to_string(), v))
        .collect();
    let (a, b, c) = (&lines["a@x.de"], &lines["b@x.de"], &lines["c@x.de"]);
    assert!(a["id"].is_i64() && a["group_id"].is_i64() && a["points"].is_i64());
    assert_eq!(a["registered"], "2024-02-01T13:45:20Z");
    assert_eq!(a["deactivated"], Value::Null);
    assert_eq!(b["deactivated"], "2024-06-01T08:00:00Z");
    assert_eq!(c["bounced"], "2024-07-01T12:00:00Z");
    assert_eq!(a["score"], serde_json::json!(12.5));
    assert_eq!(
        b["score"],
        serde_json::json!(7),
        "a whole number has no fraction"
    );
    assert_eq!(c["score"], Value::Null);
    assert_eq!(a["birthday"], "1990-05-17");
    assert_eq!(b["birthday"], Value::Null);
    assert_eq!(a["active"], Value::Bool(true));
    let mut tags: Vec<&str> = a["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    tags.sort();
    assert_eq!(tags, ["news", "vip"]);
    assert_eq!(b["tags"], serde_json::json!([]));
}

#[tokio::test]
async fn xlsx_writes_date_attributes_as_date_cells_and_numbers_as_number_cells() {
    use calamine::{Data, Reader, Xlsx, open_workbook};
    let t = typed_group().await;
    export(&t, &["--out", "typed.xlsx"]).await;
    let mut wb: Xlsx<_> = open_workbook(t.dir.path().join("typed.xlsx")).unwrap();
    let range = wb.worksheet_range("export").unwrap();
    let rows: Vec<&[Data]> = range.rows().collect();
    let col = |name: &str| {
        rows[0]
            .iter()
            .position(|c| c == &Data::String(name.into()))
            .unwrap()
    };
    let (email, score, birthday) = (col("email"), col("score"), col("birthday"));
    let a = rows
        .iter()
        .find(|r| r[email] == Data::String("a@x.de".into()))
        .unwrap();
    assert_eq!(a[score], Data::Float(12.5));
    match &a[birthday] {
        Data::DateTime(d) => assert_eq!(
            d.as_datetime().unwrap().date(),
            chrono::NaiveDate::from_ymd_opt(1990, 5, 17).unwrap()
        ),
        other => panic!("birthday is not a date cell: {other:?}"),
    }
}

#[tokio::test]
async fn csv_keeps_its_text_forms() {
    let t = typed_group().await;
    export(&t, &["--out", "typed.csv", "--columns", "email,score,tags"]).await;
    let text = std::fs::read_to_string(t.dir.path().join("typed.csv")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert!(lines.contains(&"b@x.de,7,"), "{text}");
    assert!(
        lines.contains(&"a@x.de,12.5,\"vip,news\"") || lines.contains(&"a@x.de,12.5,\"news,vip\""),
        "{text}"
    );
}

/// What a round trip keeps: email, the four timestamps, attributes, tags.
type State = (
    String,
    [i64; 4],
    BTreeMap<String, String>,
    BTreeMap<String, String>,
    Vec<String>,
);

fn state(r: &Receiver) -> State {
    let mut tags = r.tags.clone().unwrap_or_default();
    tags.sort();
    (
        r.email.clone(),
        [r.registered, r.activated, r.deactivated, r.bounced],
        r.global_attributes.clone(),
        r.attributes.clone(),
        tags,
    )
}

async fn states(t: &TestServer) -> Vec<State> {
    let mut s: Vec<State> = t.receivers_of("Typed").await.iter().map(state).collect();
    s.sort();
    s
}

/// Imports `file` (exported from `a`) into a fresh server with the same pipeline.
async fn reimport(a: &TestServer, file: &str) -> TestServer {
    let b = TestServer::start().await;
    let dir = b.dir.path();
    std::fs::copy(a.dir.path().join(file), dir.join(file)).unwrap();
    std::fs::write(dir.join("back.toml"), pipeline(file, None)).unwrap();
    let (code, report, stderr) = run_here(&b, Path::new(&dir.join("back.toml")), &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    b
}

#[tokio::test]
async fn typed_parquet_and_json_lines_exports_reimport_to_the_same_receivers() {
    let a = typed_group().await;
    let before = states(&a).await;
    assert_eq!(before.len(), 3);
    for file in ["typed.parquet", "typed.jsonl"] {
        export(&a, &["--out", file]).await;
        let b = reimport(&a, file).await;
        assert_eq!(states(&b).await, before, "{file}");
    }
}

#[tokio::test]
async fn a_parquet_export_sets_the_logical_types_a_warehouse_reads_without_hints() {
    let t = typed_group().await;
    export(&t, &["--out", "typed.parquet"]).await;
    let file = std::fs::File::open(t.dir.path().join("typed.parquet")).unwrap();
    let metadata = ParquetReader::new(file).get_metadata().unwrap().clone();
    let logical: BTreeMap<String, String> = metadata
        .schema_descr
        .columns()
        .iter()
        .map(|c| {
            let t = &c.descriptor.primitive_type;
            (
                c.path_in_schema.join("."),
                format!("{:?} {:?}", t.physical_type, t.logical_type),
            )
        })
        .collect();
    let utc_ms = "Int64 Some(Timestamp { unit: Milliseconds, is_adjusted_to_utc: true })";
    for (column, want) in [
        ("id", "Int64 None"),
        ("group_id", "Int64 None"),
        ("registered", utc_ms),
        ("activated", utc_ms),
        ("deactivated", utc_ms),
        ("bounced", utc_ms),
        ("birthday", "Int32 Some(Date)"),
        ("score", "Double None"),
        ("active", "Boolean None"),
        ("email", "ByteArray Some(String)"),
        ("tags.list.element", "ByteArray Some(String)"),
    ] {
        assert_eq!(logical[column], want, "{column}");
    }
}

#[tokio::test]
async fn number_attribute_values_that_are_not_numbers_are_null_in_parquet_counted_and_said() {
    let t = typed_group().await;
    // A text attribute whose type is changed afterwards: its values stay as they were.
    let g = t.group_named("Typed").await.id;
    let nick = t.client.group_attributes(g).await.unwrap();
    let nick = nick.iter().find(|a| a.name == "nick").unwrap();
    let input = listpipe::api::AttributeInput {
        kind: Some("number".into()),
        ..Default::default()
    };
    t.client
        .update_group_attribute(g, nick.id, &input)
        .await
        .unwrap();
    let all = vec![
        "export".to_string(),
        "--target-url".into(),
        t.base_url(),
        "--token".into(),
        t.client.token(),
        "--group".into(),
        "Typed".into(),
        "--out".into(),
        "typed.parquet".into(),
    ];
    let dir = t.dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        listpipe(&dir, &all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("export: 2 values of number or date attributes are not a number or a YYYY-MM-DD date; Parquet has them as null (CSV and JSON lines keep the text)"),
        "{stderr}"
    );
    export(&t, &["--out", "typed.jsonl"]).await;
    let text = std::fs::read_to_string(t.dir.path().join("typed.jsonl")).unwrap();
    assert!(text.contains("\"nick\":\"Al\""), "{text}");
}

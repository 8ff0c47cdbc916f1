//! Issue 18's warehouse sources: a PostgreSQL query (a throwaway server from `pg`), a
//! Parquet file and a JSON-lines file each import the same receivers as the same rows in a
//! CSV file, with the same counts of rejected and duplicate rows; a wrong query, a wrong
//! password and a server that is not there exit 2 naming the source without its password.

use crate::import::run;
use crate::pg::{PASSWORD, PgServer};
use crate::support::TestServer;
use serde_json::Value;
use std::path::Path;

/// One row of the shared fixture.
pub(crate) struct Person {
    pub id: i64,
    pub email: String,
    pub firstname: Option<String>,
    pub birthday: chrono::NaiveDate,
    pub points: i64,
}

/// `n` rows as a warehouse holds them: every 97th address broken, every 50th the address of
/// a row seven before in other case (a duplicate), every 10th without a first name.
pub(crate) fn people(n: i64) -> Vec<Person> {
    let first = chrono::NaiveDate::from_ymd_opt(1980, 1, 1).unwrap();
    (0..n)
        .map(|i| Person {
            id: i,
            email: if i % 97 == 13 {
                format!("broken-{i}-at-example.com")
            } else if i % 50 == 49 {
                format!("Person{}@Example.com", i - 7)
            } else {
                format!("person{i}@example.com")
            },
            firstname: (i % 10 != 0).then(|| format!("Name{i}")),
            birthday: first + chrono::Days::new(i as u64 * 11),
            points: i * 3,
        })
        .collect()
}

pub(crate) fn csv_of(rows: &[Person]) -> String {
    let mut text = String::from("email,firstname,birthday,points\n");
    for p in rows {
        text.push_str(&format!(
            "{},{},{},{}\n",
            p.email,
            p.firstname.as_deref().unwrap_or(""),
            p.birthday.format("%Y-%m-%d"),
            p.points
        ));
    }
    text
}

pub(crate) fn sql_of(rows: &[Person]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|p| {
            format!(
                "({}, '{}', {}, '{}', {})",
                p.id,
                p.email,
                p.firstname
                    .as_ref()
                    .map_or("NULL".to_string(), |f| format!("'{f}'")),
                p.birthday.format("%Y-%m-%d"),
                p.points
            )
        })
        .collect();
    format!(
        "create table people (id int primary key, email text, firstname text, birthday date, points int);\n\
         insert into people values {};",
        values.join(",\n")
    )
}

/// An import of `source` into the group `group`, first name and birthday mapped.
pub(crate) fn pipeline(group: &str, source: &str) -> String {
    format!(
        "[[import]]\nname = \"people\"\nsource = {source}\ngroup = \"{group}\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.global_attributes]\nfirstname = \"firstname\"\n\
         birthday = {{ column = \"birthday\", type = \"date\", format = \"%Y-%m-%d\" }}\n"
    )
}

/// The receivers of a group as comparable values: everything but ids and times.
pub(crate) async fn receivers(t: &TestServer, group: &str) -> Vec<Value> {
    let mut all: Vec<Value> = t
        .receivers_of(group)
        .await
        .into_iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).unwrap();
            for key in [
                "id",
                "group_id",
                "registered",
                "imported",
                "activated",
                "deactivated",
            ] {
                v.as_object_mut().unwrap().remove(key);
            }
            v
        })
        .collect();
    all.sort_by_key(|v| v["email"].as_str().unwrap_or("").to_string());
    all
}

/// Runs a pipeline written to `dir/name` against the server; the exit code, the step's
/// prepare counts and stderr.
pub(crate) async fn import(t: &TestServer, name: &str, toml: &str) -> (i32, Value, String) {
    let path = t.dir.path().join(name);
    std::fs::write(&path, toml).unwrap();
    let (code, report, stderr) = run(t, &path, &[]).await;
    let prepare = report["steps"][0]["prepare"].clone();
    (code, prepare, stderr)
}

#[tokio::test]
async fn a_postgres_query_imports_the_same_receivers_as_the_same_rows_in_a_csv_file() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    let rows = people(1000);
    pg.execute(&sql_of(&rows));
    let t = TestServer::start().await;
    std::fs::write(t.dir.path().join("people.csv"), csv_of(&rows)).unwrap();

    let (csv_code, csv_counts, stderr) =
        import(&t, "csv.toml", &pipeline("FromCsv", "\"people.csv\"")).await;
    assert_eq!(csv_code, 1, "rows were rejected: {stderr}");

    let source = format!(
        "{{ postgres = \"{}\", query = \"select email, firstname, birthday, points from people order by id;\" }}",
        pg.url()
    );
    let (pg_code, pg_counts, stderr) = import(&t, "pg.toml", &pipeline("FromPg", &source)).await;
    assert_eq!(pg_code, 1, "rows were rejected: {stderr}");
    assert_eq!(pg_counts["rows_read"], 1000);
    assert_eq!(pg_counts["rejected"], csv_counts["rejected"]);
    assert_eq!(pg_counts["duplicates"], csv_counts["duplicates"]);
    assert_eq!(pg_counts["duplicates"], 19);
    assert_eq!(pg_counts["reject_examples"], csv_counts["reject_examples"]);

    let (from_csv, from_pg) = (
        receivers(&t, "FromCsv").await,
        receivers(&t, "FromPg").await,
    );
    assert_eq!(from_pg.len(), 1000 - 19 - 11);
    assert_eq!(from_pg, from_csv);

    // The rejects: a CSV with the query's columns, numbered like a CSV export of the result.
    let rejects =
        std::fs::read_to_string(t.dir.path().join(".listpipe/rejects/pg/people.rejects.csv"))
            .expect("a rejects file");
    assert!(
        rejects.starts_with(
            "email,firstname,birthday,points,row_number,field,reason\nbroken-13-at-example.com,Name13,1980-05-23,39,15,email,"
        ),
        "{rejects}"
    );
    let report = std::fs::read_to_string(t.dir.path().join("report.json")).unwrap();
    assert!(!stderr.contains(PASSWORD) && !report.contains(PASSWORD));
}

/// `listpipe run` with the connection URL in `WAREHOUSE_URL`.
fn run_with_url(t: &TestServer, toml: &str, url: &str) -> (i32, String, String) {
    let path = t.dir.path().join("env.toml");
    std::fs::write(&path, toml).unwrap();
    let report = t.dir.path().join("env-report.json");
    let out = crate::support::binary()
        .current_dir(t.dir.path())
        .args(["run", path.to_str().unwrap(), "--target-url", &t.base_url()])
        .args([
            "--token",
            &t.client.token(),
            "--report",
            report.to_str().unwrap(),
        ])
        .env("WAREHOUSE_URL", url)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        std::fs::read_to_string(&report).unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_wrong_query_a_wrong_password_and_no_server_exit_2_naming_the_source_not_its_password() {
    let Some(pg) = PgServer::start() else {
        return;
    };
    pg.execute(&sql_of(&people(10)));
    let t = TestServer::start().await;
    let env_source = |query: &str| {
        pipeline(
            "Warehouse",
            &format!("{{ postgres_env = \"WAREHOUSE_URL\", query = \"{query}\" }}"),
        )
    };
    let named = format!("postgres://listpipe@127.0.0.1:{}/postgres", pg.port);

    let (code, stderr, report) = run_with_url(
        &t,
        &env_source("select email, firstname, birthday from no_such_table"),
        &pg.url(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{named}: the query failed: ERROR: relation \"no_such_table\" does not exist [SQLSTATE 42P01]"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD) && !report.contains(PASSWORD));

    let wrong = pg.url().replace(PASSWORD, "not-the-password");
    let (code, stderr, _) = run_with_url(&t, &env_source("select * from people"), &wrong);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{named}: cannot connect: FATAL: password authentication failed for user \"listpipe\""
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("not-the-password"), "{stderr}");

    let port = pg.port;
    drop(pg);
    let (code, stderr, _) = run_with_url(&t, &env_source("select * from people"), &wrong);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{named}: cannot connect: error connecting to server"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    let _ = port;

    assert!(
        t.client.groups(None).await.unwrap().is_empty(),
        "nothing was imported"
    );
}

/// Writes the fixture as a Parquet file with typed columns (a date, an integer), through
/// polars as a warehouse export would.
fn write_parquet(path: &Path, rows: &[Person]) {
    use polars::prelude::*;
    let emails: Vec<&str> = rows.iter().map(|p| p.email.as_str()).collect();
    let names: Vec<Option<&str>> = rows.iter().map(|p| p.firstname.as_deref()).collect();
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    let days: Vec<i32> = rows
        .iter()
        .map(|p| (p.birthday - epoch).num_days() as i32)
        .collect();
    let points: Vec<i64> = rows.iter().map(|p| p.points).collect();
    let mut frame = DataFrame::new(
        rows.len(),
        vec![
            Column::new("email".into(), emails),
            Column::new("firstname".into(), names),
            Column::new("birthday".into(), days)
                .cast(&DataType::Date)
                .unwrap(),
            Column::new("points".into(), points),
        ],
    )
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    ParquetWriter::new(file)
        .with_row_group_size(Some(300))
        .finish(&mut frame)
        .unwrap();
}

fn jsonl_of(rows: &[Person]) -> String {
    rows.iter()
        .map(|p| {
            let mut line = serde_json::json!({
                "email": p.email,
                "birthday": p.birthday.format("%Y-%m-%d").to_string(),
                "points": p.points,
            });
            if let Some(f) = &p.firstname {
                line["firstname"] = Value::from(f.clone());
            }
            format!("{line}\n")
        })
        .collect()
}

#[tokio::test]
async fn parquet_and_json_lines_files_import_the_same_receivers_as_the_csv() {
    let rows = people(1000);
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(dir.join("people.csv"), csv_of(&rows)).unwrap();
    write_parquet(&dir.join("people.parquet"), &rows);
    std::fs::write(dir.join("people.ndjson"), jsonl_of(&rows)).unwrap();
    std::fs::write(dir.join("people.data"), jsonl_of(&rows)).unwrap();

    let (_, csv_counts, _) = import(&t, "csv.toml", &pipeline("FromCsv", "\"people.csv\"")).await;
    let from_csv = receivers(&t, "FromCsv").await;
    assert_eq!(from_csv.len(), 970);
    for (group, source, first_reject_row) in [
        ("FromParquet", "\"people.parquet\"", 15),
        ("FromJsonl", "\"people.ndjson\"", 14),
        (
            "FromData",
            "{ path = \"people.data\", format = \"jsonl\" }",
            14,
        ),
    ] {
        let (code, mut counts, stderr) = import(&t, "p.toml", &pipeline(group, source)).await;
        assert_eq!(code, 1, "{group}: rows were rejected: {stderr}");
        // Parquet rows are numbered as in a CSV export (header line 1), JSON lines by line.
        let example = &mut counts["reject_examples"]["invalid email"]["row"];
        assert_eq!(*example, first_reject_row, "{group}");
        *example = csv_counts["reject_examples"]["invalid email"]["row"].clone();
        assert_eq!(counts, csv_counts, "{group}");
        assert_eq!(receivers(&t, group).await, from_csv, "{group}");
    }
}

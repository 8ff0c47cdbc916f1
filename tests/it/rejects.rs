//! Rejects files and dry-run plans are written as rows fail, chunk by
//! chunk, not built in memory: a source of several chunks whose every row
//! is rejected (the usual wrong column mapping) writes every row, in order,
//! with its row number; a dry run's plan lists every row in row order.

use crate::import::run_with;
use crate::support::TestServer;

/// Rows in a chunk for these runs (the child's `LISTPIPE_CHUNK_ROWS`; the
/// default is 65,536): a few thousand rows then cross several chunks.
const CHUNK: [(&str, &str); 1] = [("LISTPIPE_CHUNK_ROWS", "1000")];

/// Five chunks of [`CHUNK`]'s 1,000 rows, the last one partial.
const ROWS: usize = 4_500;

fn write_pipeline(dir: &std::path::Path, csv: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join("wide.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"People\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n[import.global_attributes]\nfirstname = \"name\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn a_source_whose_every_row_is_rejected_writes_every_row_to_the_rejects_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let mut csv = String::from("email,name\n");
    for i in 0..ROWS {
        csv.push_str(&format!("not-an-address-{i},N{i}\n"));
    }
    let path = write_pipeline(dir, &csv);
    let (code, report, stderr) = run_with(&t, &path, &[], &CHUNK).await;
    assert_eq!(code, 1, "rows were rejected\n{stderr}");
    let step = &report["steps"][0];
    assert_eq!(step["prepare"]["rows_read"], ROWS);
    assert_eq!(step["prepare"]["rejected"]["invalid email"], ROWS);
    let rejects =
        std::fs::read_to_string(dir.join(".listpipe/rejects/wide/people.rejects.csv")).unwrap();
    let mut lines = rejects.lines();
    assert_eq!(lines.next(), Some("email,name,row_number,field,reason"));
    let mut n = 0;
    for (i, line) in lines.enumerate() {
        assert_eq!(
            line,
            format!(
                "not-an-address-{i},N{i},{},email,\"\"\"not-an-address-{i}\"\" is not a valid email address: no @\"",
                i + 2
            )
        );
        n += 1;
    }
    assert_eq!(n, ROWS, "every row, once");
    let left: Vec<_> = std::fs::read_dir(dir.join(".listpipe/rejects/wide"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["people.rejects.csv"], "no temporary file is left");

    // Fixed, the source rejects nothing: the old rejects file goes.
    let path = write_pipeline(dir, "email,name\na@example.com,Ann\n");
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNK).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !dir.join(".listpipe/rejects/wide/people.rejects.csv")
            .exists()
    );
}

#[tokio::test]
async fn a_dry_run_plan_of_several_chunks_lists_every_row_in_row_order() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    // Every third row invalid, and the last rows repeat the first ones'
    // addresses (duplicates chunks apart): three chunks of [`CHUNK`]'s rows.
    let mut csv = String::from("email,name\n");
    let rows: usize = 2_500;
    for i in 0..rows {
        match i {
            _ if i.is_multiple_of(3) => csv.push_str(&format!("bad-{i},N{i}\n")),
            _ if i >= rows - 100 => {
                csv.push_str(&format!("user{}@example.com,N{i}\n", i - (rows - 100)))
            }
            _ => csv.push_str(&format!("user{i}@example.com,N{i}\n")),
        }
    }
    let path = write_pipeline(dir, &csv);
    let (code, report, stderr) = run_with(&t, &path, &["--dry-run"], &CHUNK).await;
    assert_eq!(code, 1, "rows were rejected\n{stderr}");
    let plan = std::fs::read_to_string(dir.join(report["steps"][0]["plan_file"].as_str().unwrap()))
        .unwrap();
    let mut lines = plan.lines();
    assert_eq!(lines.next(), Some("row_number,email,action,detail"));
    let mut actions = std::collections::BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let (row, rest) = line.split_once(',').unwrap();
        assert_eq!(row, (i + 2).to_string(), "{line}");
        let action = rest.split(',').nth(1).unwrap();
        *actions.entry(action.to_string()).or_insert(0) += 1;
        if i.is_multiple_of(3) {
            assert_eq!(
                rest,
                format!(",invalid,\"email: \"\"bad-{i}\"\" is not a valid email address: no @\""),
            );
        }
    }
    let invalid = rows.div_ceil(3);
    let duplicates = (rows - 100..rows)
        .filter(|i| !i.is_multiple_of(3) && !(i - (rows - 100)).is_multiple_of(3))
        .count();
    assert_eq!(
        actions,
        [
            ("create".to_string(), rows - invalid - duplicates),
            ("duplicate".into(), duplicates),
            ("invalid".into(), invalid),
        ]
        .into_iter()
        .collect()
    );
}

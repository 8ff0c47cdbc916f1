//! Every change to a value is decided, counted and said (issue 42, first
//! half): order lines of one order and product merged as `duplicate_lines`
//! says and counted; a header written twice refused where a mapping names
//! it; addresses trimmed of spaces and tabs only, line breaks and symbols
//! refused; a NUL in a cell rejecting its row, not the file; and a global
//! attribute named like a receiver field kept in every export format, under
//! a name a re-import maps back. Each case against the built-in server over
//! HTTP, with fixtures written here.

use crate::import::{listpipe, run, run_with};
use crate::in_process::run_here;
use crate::support::TestServer;
use crate::two_pass::CHUNKED;
use listpipe::api::{AttributeInput, AttributeType, Receiver, ReceiverInput};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn check(dir: &Path) -> (i32, String, String) {
    let out = listpipe(dir, &["check", "p.toml"]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rejects(dir: &Path, step: &str) -> String {
    std::fs::read_to_string(dir.join(format!(".listpipe/rejects/p/{step}.rejects.csv")))
        .unwrap_or_default()
}

// ---- order lines -------------------------------------------------------

/// An event export (one row per booking: Anna booked the early ticket of E1
/// twice, 2 and 1) and a shop export (two cancelled orders of Ben's, both
/// numbered `0`).
const BOOKINGS: &str = "email,order,ticket,price,qty\n\
anna@example.com,E1,early,10.00,2\n\
anna@example.com,E1,late,15.00,1\n\
anna@example.com,E1,early,10.00,1\n\
ben@example.com,0,,1700.93,1\n\
ben@example.com,0,,42.60,1\n";

fn orders_pipeline(dir: &Path, csv: &str, extra: &str) {
    write(dir, "bookings.csv", csv);
    write(
        dir,
        "p.toml",
        format!(
            "[[import]]\nname = \"bookings\"\nsource = \"bookings.csv\"\ngroup = \"Events\"\ncreate_group = true\n\
             [import.receiver]\nemail = \"email\"\n\
             [import.orders]\norder_id = \"order\"\nproduct_id = \"ticket\"\nprice = \"price\"\nquantity = \"qty\"\n{extra}"
        ),
    );
}

/// Each receiver's order lines as `order/product price x quantity`, sorted.
async fn lines(t: &TestServer) -> BTreeMap<String, Vec<String>> {
    t.receivers_of("Events")
        .await
        .into_iter()
        .map(|r: Receiver| {
            let mut l: Vec<String> = r
                .orders
                .iter()
                .flatten()
                .map(|o| {
                    format!(
                        "{}/{} {} x {}",
                        o.order_id, o.product_id, o.price, o.quantity
                    )
                })
                .collect();
            l.sort();
            (r.email, l)
        })
        .collect()
}

fn writes(report: &serde_json::Value) -> u64 {
    report["steps"][0]["import"]["write_requests"]
        .as_u64()
        .unwrap_or(u64::MAX)
}

#[tokio::test]
async fn order_lines_of_one_order_and_product_are_summed_counted_and_a_rerun_writes_nothing() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    orders_pipeline(dir, BOOKINGS, "");
    let (code, stdout, stderr) = check(dir);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "  orders: 5 read, 5 accepted, 0 rejected; 2 lines merged into another of the same order and product (duplicate_lines = \"sum\")"
        ),
        "{stdout}"
    );
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        report["steps"][0]["prepare"]["order_lines_merged"], 2,
        "{report}"
    );
    assert!(
        stderr.contains("bookings: orders: 5 read, 5 accepted, 0 rejected; 2 lines merged"),
        "{stderr}"
    );
    let want: BTreeMap<String, Vec<String>> = [
        (
            "anna@example.com",
            vec!["E1/early 10 x 3", "E1/late 15 x 1"],
        ),
        // The order's total is kept: 1,700.93 + 42.60 over 2 items.
        ("ben@example.com", vec!["0/ 871.765 x 2"]),
    ]
    .into_iter()
    .map(|(e, l)| (e.to_string(), l.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(lines(&t).await, want);
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(writes(&report), 0, "{report}");
    assert_eq!(report["steps"][0]["import"]["unchanged"], 2, "{report}");
}

#[tokio::test]
async fn duplicate_lines_first_or_last_keeps_one_line_and_an_unknown_choice_is_refused() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    orders_pipeline(dir, BOOKINGS, "duplicate_lines = \"last\"\n");
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "2 lines merged into another of the same order and product (duplicate_lines = \"last\")"
        ),
        "{stderr}"
    );
    assert_eq!(report["steps"][0]["prepare"]["order_lines_merged"], 2);
    assert_eq!(lines(&t).await["ben@example.com"], ["0/ 42.6 x 1"]);
    assert_eq!(
        lines(&t).await["anna@example.com"],
        ["E1/early 10 x 1", "E1/late 15 x 1"]
    );
    let (_, report, _) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(writes(&report), 0, "{report}");

    orders_pipeline(dir, BOOKINGS, "duplicate_lines = \"add\"\n");
    let (code, _, stderr) = check(dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "p.toml:13:19: unknown duplicate_lines \"add\"; valid values: `sum`, `first` or `last`"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn order_lines_from_a_second_source_are_merged_the_same_way() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "people.csv",
        "email\nanna@example.com\nben@example.com\n",
    );
    write(dir, "orders.csv", BOOKINGS);
    write(
        dir,
        "p.toml",
        "[[import]]\nname = \"people\"\nsource = \"people.csv\"\ngroup = \"Events\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.orders]\nsource = \"orders.csv\"\nemail = \"email\"\norder_id = \"order\"\nproduct_id = \"ticket\"\nprice = \"price\"\nquantity = \"qty\"\n",
    );
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("people: orders: 5 read, 5 accepted, 0 rejected; 2 lines merged into another of the same order and product (duplicate_lines = \"sum\")"),
        "{stderr}"
    );
    assert_eq!(
        report["steps"][0]["prepare"]["order_lines_merged"], 2,
        "{report}"
    );
    assert_eq!(lines(&t).await["ben@example.com"], ["0/ 871.765 x 2"]);
    let (_, report, _) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(writes(&report), 0, "{report}");
}

/// A generated file: rows of a few addresses, orders and products, so that
/// lines sharing a receiver, an order and a product are common.
fn booking_rows() -> impl Strategy<Value = Vec<(u8, u8, u8, u8, u8)>> {
    prop::collection::vec((0..3u8, 0..2u8, 0..2u8, 1..4u8, 0..3u8), 1..10)
}

fn booking_csv(rows: &[(u8, u8, u8, u8, u8)]) -> String {
    let mut csv = String::from("email,order,ticket,price,qty\n");
    for (who, order, product, qty, price) in rows {
        let qty = if *qty == 3 {
            String::new()
        } else {
            qty.to_string()
        };
        csv.push_str(&format!(
            "p{who}@example.com,O{order},T{product},{}.5,{qty}\n",
            10 + u32::from(*price) * 7
        ));
    }
    csv
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// On every input, duplicate keys included, a second run of the
    /// unchanged file writes nothing, and the target holds one line per
    /// receiver, order and product with the quantities of the file added up.
    #[test]
    fn a_rerun_of_an_unchanged_file_with_duplicate_order_lines_writes_nothing(
        rows in booking_rows(),
        chunked in any::<bool>(),
    ) {
        // Read whole, or twice in chunks of 4 rows with the lines spilled to disk.
        let env: &[(&str, &str)] = if chunked { &CHUNKED } else { &[] };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t = TestServer::start().await;
            let dir = t.dir.path();
            orders_pipeline(dir, &booking_csv(&rows), "");
            let (code, _, stderr) = run_with(&t, &dir.join("p.toml"), &[], env).await;
            prop_assert_eq!(code, 0, "{}", stderr);
            let mut want: BTreeMap<(u8, u8, u8), i64> = BTreeMap::new();
            for (who, order, product, qty, _) in &rows {
                *want.entry((*who, *order, *product)).or_default() +=
                    if *qty == 3 { 1 } else { i64::from(*qty) };
            }
            let held: usize = lines(&t).await.values().map(Vec::len).sum();
            prop_assert_eq!(held, want.len());
            for r in t.receivers_of("Events").await {
                for o in r.orders.iter().flatten() {
                    let who: u8 = r.email[1..2].parse().unwrap();
                    let key = (who, o.order_id[1..].parse().unwrap(), o.product_id[1..].parse().unwrap());
                    prop_assert_eq!(Some(&o.quantity), want.get(&key));
                }
            }
            let (code, report, stderr) = run_with(&t, &dir.join("p.toml"), &[], env).await;
            prop_assert_eq!(code, 0, "{}", stderr);
            prop_assert_eq!(writes(&report), 0, "{}", report);
            Ok(())
        })?;
    }
}

// ---- duplicate headers -------------------------------------------------

/// An invoicing export: two `Phone` columns, the first empty.
const INVOICES: &str = "Name,Phone,Email,Phone\n\
Anna,,anna@example.com,+49 30 1234\n\
Ben,,ben@example.com,+49 40 5678\n";

fn phone_pipeline(dir: &Path, column: &str) {
    write(dir, "contacts.csv", INVOICES);
    write(
        dir,
        "p.toml",
        format!(
            "[[import]]\nname = \"contacts\"\nsource = \"contacts.csv\"\ngroup = \"News\"\ncreate_group = true\n\
             [import.receiver]\nemail = \"Email\"\n\
             [import.global_attributes]\nphone = \"{column}\"\n"
        ),
    );
}

#[tokio::test]
async fn a_mapping_of_a_header_written_twice_is_refused_naming_both_and_a_numbered_name_reads_one()
{
    let t = TestServer::start().await;
    let dir = t.dir.path();
    phone_pipeline(dir, "Phone");
    let (code, stdout, stderr) = check(dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "p.toml:9:9: \"Phone\" is a header 2 times in contacts.csv (columns 2 and 4): which one to read is not guessed; name one by its number: \"Phone_1\" (column 2) or \"Phone_2\" (column 4)"
        ),
        "{stderr}"
    );
    phone_pipeline(dir, "Phone_2");
    let said = "\"Phone\" is a header 2 times in contacts.csv: read as \"Phone_1\" (column 2) and \"Phone_2\" (column 4)";
    let (code, stdout, stderr) = check(dir);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("\n  header: {said}\n")),
        "{stdout}"
    );
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    assert!(
        stderr.contains(&format!("contacts: source: header: {said}")),
        "{stderr}"
    );
    assert_eq!(
        report["steps"][0]["prepare"]["repeated_headers"][0], said,
        "{report}"
    );
    let phones: BTreeMap<String, String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| (r.email, r.global_attributes["phone"].clone()))
        .collect();
    assert_eq!(phones["anna@example.com"], "+49 30 1234");
    assert_eq!(phones["ben@example.com"], "+49 40 5678");
}

#[test]
fn a_workbook_with_a_header_written_twice_is_refused_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for (row, cells) in INVOICES.lines().enumerate() {
        for (col, cell) in cells.split(',').enumerate() {
            sheet.write_string(row as u32, col as u16, cell).unwrap();
        }
    }
    book.save(dir.path().join("contacts.xlsx")).unwrap();
    write(
        dir.path(),
        "p.toml",
        "[[import]]\nname = \"contacts\"\nsource = \"contacts.xlsx\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"Email\"\n\
         [import.global_attributes]\nphone = \"Phone\"\n",
    );
    let (code, stdout, stderr) = check(dir.path());
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "p.toml:9:9: \"Phone\" is a header 2 times in contacts.xlsx (columns 2 and 4): which one to read is not guessed; name one by its number: \"Phone_1\" (column 2) or \"Phone_2\" (column 4)"
        ),
        "{stderr}"
    );
}

// ---- addresses ---------------------------------------------------------

#[tokio::test]
async fn addresses_lose_spaces_and_tabs_only_and_line_breaks_and_symbols_are_refused() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "contacts.csv",
        "email,name\n\
         ok@example.com,plain\n\
         \"x@example.com\r\n\",line break after\n\
         \"\r\ny@example.com\",line break before\n\
         \" \tz@example.com\t \",spaces and tabs\n\
         test@iana.org\u{240A},control picture\n\
         test@\u{2407}.org,bell picture\n\
         test@io,top-level domain alone\n",
    );
    write(
        dir,
        "p.toml",
        "[[import]]\nname = \"contacts\"\nsource = \"contacts.csv\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n",
    );
    let (code, stdout, stderr) = check(dir);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("  1 address trimmed of spaces or tabs at the ends"),
        "{stdout}"
    );
    let rejects = rejects(dir, "contacts");
    for line in [
        "3,email,\"\"\"x@example.com\\r\\n\"\" is not a valid email address: an invisible or control character (U+000D)\"",
        "4,email,\"\"\"\\r\\ny@example.com\"\" is not a valid email address: an invisible or control character (U+000D)\"",
        "6,email,\"\"\"test@iana.org\u{240A}\"\" is not a valid email address: '\u{240A}' (U+240A) is not allowed in a domain: a label takes letters, digits and hyphens only (IDNA 2008)\"",
        "7,email,\"\"\"test@\u{2407}.org\"\" is not a valid email address: '\u{2407}' (U+2407) is not allowed in a domain: a label takes letters, digits and hyphens only (IDNA 2008)\"",
        "8,email,\"\"\"test@io\"\" is not a valid email address: a domain without a dot (a host name or a top-level domain alone)\"",
    ] {
        assert!(rejects.contains(line), "{line}\nnot in\n{rejects}");
    }
    let (code, report, stderr) = run_here(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        report["steps"][0]["prepare"]["addresses_trimmed"], 1,
        "{report}"
    );
    let mut stored: Vec<String> = t
        .receivers_of("News")
        .await
        .into_iter()
        .map(|r| r.email)
        .collect();
    stored.sort();
    assert_eq!(stored, ["ok@example.com", "z@example.com"]);
}

// ---- NUL bytes ---------------------------------------------------------

#[tokio::test]
async fn a_nul_in_an_unmapped_cell_rejects_that_row_and_the_rest_is_imported() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    write(
        dir,
        "contacts.csv",
        "email,name,notes\n\
         anna@example.com,Anna,called back on Monday\n\
         ben@example.com,Ben,bro\0ken export\n\
         cleo@example.com,Cleo,newsletter and offers\n\
         dan@example.com,Dan,prefers the printed catalogue\n",
    );
    write(
        dir,
        "p.toml",
        "[[import]]\nname = \"contacts\"\nsource = \"contacts.csv\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n",
    );
    let (code, stdout, stderr) = check(dir);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let reason = "column \"\"notes\"\" holds a NUL byte (U+0000, character 4 of the field), which is not text; the row is rejected, the rest of the file read: remove the NUL from the file to import this row";
    let rejects = rejects(dir, "contacts");
    assert!(
        rejects.contains(&format!("3,notes,\"{reason}\"")),
        "{rejects}"
    );
    let (code, report, stderr) = run(&t, &dir.join("p.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        report["steps"][0]["prepare"]["rejected"]["NUL byte in a field"], 1,
        "{report}"
    );
    assert_eq!(t.receivers_of("News").await.len(), 3);

    // A binary file is still refused whole, with a format that exists.
    write(
        dir,
        "contacts.csv",
        (0..600u32)
            .map(|i| (i * 37 % 251) as u8)
            .collect::<Vec<u8>>(),
    );
    let (code, _, stderr) = check(dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("contacts.csv is not text (NUL byte at byte 0); if it is a spreadsheet, name it .xlsx, .xls or .ods or set format = \"xlsx\" (or \"xls\", \"ods\")"),
        "{stderr}"
    );
}

// ---- exports -----------------------------------------------------------

/// Receivers whose global attributes `points` and `source` share their
/// names with receiver fields, which hold other values.
async fn shadowed() -> TestServer {
    let t = TestServer::start().await;
    let c = &t.client;
    for name in ["points", "source", "firstname"] {
        c.create_attribute(&AttributeInput::new(name, AttributeType::Text))
            .await
            .unwrap();
    }
    let g = t.group("Shop").await;
    for (email, points, source, tier, origin) in [
        ("ann@example.com", 5, "import", "gold", "fair 2024"),
        ("ben@example.com", 0, "", "silver", ""),
    ] {
        let globals: BTreeMap<String, String> = [
            ("points".to_string(), tier.to_string()),
            ("source".to_string(), origin.to_string()),
            ("firstname".to_string(), email[..3].to_string()),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
        let input = ReceiverInput {
            points: Some(points),
            source: Some(source.into()),
            global_attributes: Some(globals),
            ..ReceiverInput::email(email)
        };
        c.create_receiver(g.id, &input).await.unwrap();
    }
    t
}

async fn export(t: &TestServer, out: &str) {
    let args = vec![
        "export".to_string(),
        "--target-url".into(),
        t.base_url(),
        "--token".into(),
        t.client.token(),
        "-q".into(),
        "--group".into(),
        "Shop".into(),
        "--out".into(),
        out.into(),
    ];
    let dir = t.dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        listpipe(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

type Kept = (String, i64, String, BTreeMap<String, String>);

async fn kept(t: &TestServer) -> Vec<Kept> {
    let mut all: Vec<Kept> = t
        .receivers_of("Shop")
        .await
        .into_iter()
        .map(|r| (r.email, r.points, r.source, r.global_attributes))
        .collect();
    all.sort();
    all
}

#[tokio::test]
async fn a_global_attribute_named_like_a_receiver_field_is_in_every_default_export_and_round_trips()
{
    let a = shadowed().await;
    for out in ["shop.csv", "shop.jsonl", "shop.parquet"] {
        export(&a, out).await;
    }
    let csv = std::fs::read_to_string(a.dir.path().join("shop.csv")).unwrap();
    let mut csv_lines = csv.lines();
    assert_eq!(
        csv_lines.next(),
        Some(
            "id,email,group_id,registered,activated,deactivated,imported,bounced,source,points,last_ip,last_location,last_client,active,global.points,global.source,firstname,tags"
        )
    );
    let ann = csv_lines.find(|l| l.contains("ann@example.com")).unwrap();
    assert!(
        ann.contains(",import,5,") && ann.ends_with(",gold,fair 2024,ann,"),
        "{ann}"
    );
    let jsonl = std::fs::read_to_string(a.dir.path().join("shop.jsonl")).unwrap();
    let ann: serde_json::Value = jsonl
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["email"] == "ann@example.com")
        .unwrap();
    assert_eq!(ann["points"], 5);
    assert_eq!(ann["global.points"], "gold");
    assert_eq!(ann["source"], "import");
    assert_eq!(ann["global.source"], "fair 2024");
    use polars::prelude::{ParquetReader, SerReader};
    let df = ParquetReader::new(std::fs::File::open(a.dir.path().join("shop.parquet")).unwrap())
        .finish()
        .unwrap();
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert!(
        names.contains(&"global.points".to_string())
            && names.contains(&"global.source".to_string()),
        "{names:?}"
    );

    // Re-imported by a pipeline that maps each column by its exported name.
    let b = TestServer::start().await;
    let dir = a.dir.path();
    write(
        dir,
        "reimport.toml",
        "[[import]]\nname = \"reimport\"\nsource = \"shop.csv\"\ngroup = \"Shop\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\nsource = \"source\"\npoints = \"points\"\n\
         [import.global_attributes]\npoints = \"global.points\"\nsource = \"global.source\"\nfirstname = \"firstname\"\n",
    );
    let (code, report, stderr) = run_here(&b, &dir.join("reimport.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}\n{report}");
    assert_eq!(kept(&b).await, kept(&a).await);
}

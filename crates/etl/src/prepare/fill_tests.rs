//! `fill_down` over a source read in chunks comes to what the same source
//! read whole comes to: the same rows sent with the same filled values,
//! the same duplicates, counts and rejects (showing the filled values),
//! alone and with the steps that read the source twice.

use super::{Budget, import_chunks};
use crate::pipeline::{self, ImportStep, Step};
use crate::source::ROW_COL;
use std::path::Path;

/// 60 order lines of 10 orders, order k on every 10th row (its lines
/// chunks apart). Its address is written on its (k % 4)-th line only, so
/// lines before it wait for a value that comes chunks later; the other
/// lines are empty or blank. Its city is on its last line only. Order 7's
/// address is broken (every line rejected, showing it), order 9 has none;
/// order 3's number has blanks around it on some lines; one line has no
/// order number.
fn orders(dir: &Path, extra: &str) -> ImportStep {
    let mut csv = String::from("Name,Email,City,Lineitem\n");
    for i in 0..60 {
        let (k, line) = (i % 10, i / 10);
        let name = match k {
            3 if line % 2 == 1 => " #3 ".to_string(),
            _ if i == 41 => String::new(),
            _ => format!("#{k}"),
        };
        let email = match (k, line == k % 4) {
            (9, _) => "",
            (7, true) => "broken",
            (_, true) => &format!("buyer{k}@example.com"),
            (_, false) if i % 3 == 0 => "  ",
            _ => "",
        };
        let city = if line == 5 {
            format!("C{k}")
        } else {
            String::new()
        };
        csv.push_str(&format!("{name},{email},{city},L{i}\n"));
    }
    std::fs::write(dir.join("in.csv"), csv).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\n{extra}\nfill_down = {{ within = \"Name\", columns = [\"Email\", \"City\"] }}\n[import.receiver]\nemail = \"Email\"\n[import.attributes]\ncity = \"City\"\nline = \"Lineitem\"\n"
        ),
    )
    .unwrap();
    let p = pipeline::load(&dir.join("p.toml")).unwrap();
    match p.steps.into_iter().next() {
        Some(Step::Import(s)) => s,
        _ => panic!("an import step"),
    }
}

/// What a read hands on: rows sent (row, email, city, line), duplicates,
/// rejects (row, reason, values), counts, chunks.
#[derive(Debug, PartialEq)]
struct Read {
    sent: Vec<(u32, String, String, String)>,
    duplicates: Vec<(u64, String)>,
    rejected: Vec<(u64, String, Vec<Option<String>>)>,
    counts: (u64, u64, u64),
    chunks: usize,
}

fn read(step: &ImportStep, dir: &Path, budget: Budget) -> Read {
    let mut out = Read {
        sent: Vec::new(),
        duplicates: Vec::new(),
        rejected: Vec::new(),
        counts: (0, 0, 0),
        chunks: 0,
    };
    let summary = import_chunks(step, dir, budget, &mut |c| {
        out.chunks += 1;
        let text = |name: &str| -> Vec<String> {
            let col = c.frame.column(name).unwrap().str().unwrap();
            col.iter().map(|v| v.unwrap_or("").to_string()).collect()
        };
        let rows = c.frame.column(ROW_COL).unwrap().u32().unwrap();
        let (emails, cities, lines) = (text("email"), text("a:city"), text("a:line"));
        for i in 0..c.frame.height() {
            let row = rows.get(i).unwrap();
            let sent = (emails[i].clone(), cities[i].clone(), lines[i].clone());
            out.sent.push((row, sent.0, sent.1, sent.2));
        }
        out.duplicates.extend(c.duplicates.iter().cloned());
        out.rejected.extend(
            c.rejects
                .iter()
                .map(|r| (r.row_number, r.reason.clone(), r.values.clone())),
        );
        true
    })
    .unwrap();
    let s = summary.stats;
    out.counts = (s.rows_read, s.duplicates, s.rejected_total());
    out
}

fn whole_and_chunked(step: &ImportStep, dir: &Path) -> Read {
    let whole = read(step, dir, Budget::default().with_chunk_rows(usize::MAX));
    assert_eq!(whole.chunks, 1);
    for spill_after in [usize::MAX, 1, 3] {
        for chunk_rows in [4, 7, 25] {
            let budget = Budget {
                chunk_rows,
                spill_after,
            };
            let chunked = read(step, dir, budget);
            assert!(chunked.chunks >= 60 / chunk_rows, "{budget:?}");
            assert_eq!(
                Read {
                    chunks: 1,
                    ..chunked
                },
                whole,
                "{budget:?}"
            );
        }
    }
    whole
}

#[test]
fn fill_down_read_in_chunks_fills_what_a_whole_read_fills_in_memory_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_and_chunked(&orders(dir.path(), ""), dir.path());
    let sent = |email: &str| {
        let s = whole.sent.iter().find(|s| s.1 == email)?;
        Some((s.0, s.2.clone(), s.3.clone()))
    };
    // Order 2: its address on line 2 (row 22), filled up to row 2 (line 4
    // of the file), sent once with the city of its last line.
    assert_eq!(
        sent("buyer2@example.com"),
        Some((4, "C2".into(), "L2".into()))
    );
    // Order 3, its number written with blanks on some lines, is one order.
    assert_eq!(
        sent("buyer3@example.com"),
        Some((5, "C3".into(), "L3".into()))
    );
    // 8 orders with an address (not 7, not 9), each sent once; the line
    // without an order number keeps its empty address.
    assert_eq!(whole.sent.len(), 8);
    assert_eq!(whole.counts.1, 60 - 8 - 6 - 6 - 1);
    assert_eq!(whole.counts.2, 6 + 6 + 1);
    // Order 7's lines are rejected showing the address filled in.
    let broken: Vec<_> = whole
        .rejected
        .iter()
        .filter(|r| r.2[0].as_deref() == Some("#7"))
        .map(|r| (r.0, r.2[1].as_deref(), r.2[2].as_deref()))
        .collect();
    assert_eq!(
        broken,
        [9, 19, 29, 39, 49, 59].map(|row| (row, Some("broken"), Some("C7")))
    );
}

#[test]
fn fill_down_with_a_source_read_twice_checks_the_filled_rows_in_every_read() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [
        "dedupe = \"last\"",
        "dedupe = \"merge\"",
        "mode = \"mirror\"",
    ] {
        let whole = whole_and_chunked(&orders(dir.path(), extra), dir.path());
        assert_eq!(whole.sent.len(), 8, "{extra}");
    }
}

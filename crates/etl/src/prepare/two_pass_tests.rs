//! A source read twice in chunks (`dedupe = "last"` and `"merge"`, mirror
//! mode, orders on the receiver rows) comes to what the same source read
//! whole comes to: the same rows sent, the same duplicates, counts and
//! rejects, the same source addresses, the same order lines per receiver.

use super::{Budget, ImportChunk, import_chunks};
use crate::pipeline::{self, ImportStep, Step};
use crate::source::ROW_COL;
use std::path::Path;

/// 400 rows of 50 addresses, each address every 50th row (its rows chunks
/// apart); every 7th row has a date that cannot be read (rejected: the
/// address's last row is then an earlier one), every 60th a broken address,
/// and one address is spelled in capitals with blanks around it.
fn source(dir: &Path, extra: &str) -> ImportStep {
    let mut csv = String::from("email,name,signup\n");
    for i in 0..400 {
        let email = match i {
            _ if i % 60 == 0 => format!("broken-{i}"),
            _ if i % 50 == 3 => "  User3@Example.COM ".to_string(),
            _ => format!("user{}@example.com", i % 50),
        };
        let signup = if i % 7 == 0 {
            "not a date"
        } else {
            "2024-05-01"
        };
        csv.push_str(&format!("{email},N{i},{signup}\n"));
    }
    std::fs::write(dir.join("in.csv"), csv).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\n{extra}\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\n[import.attributes]\nname = \"name\"\n"
        ),
    )
    .unwrap();
    let p = pipeline::load(&dir.join("p.toml")).unwrap();
    match p.steps.into_iter().next() {
        Some(Step::Import(s)) => s,
        _ => panic!("an import step"),
    }
}

/// What a read hands on: rows sent (row number, email, name), duplicates,
/// rejected row numbers, counts, and the first chunk's source addresses.
#[derive(Debug, PartialEq)]
struct Read {
    sent: Vec<(u32, String, String)>,
    duplicates: Vec<(u64, String)>,
    rejected: Vec<(u64, String)>,
    counts: (u64, u64, u64),
    chunks: usize,
}

fn read(
    step: &ImportStep,
    dir: &Path,
    budget: Budget,
    mut first: impl FnMut(&ImportChunk),
) -> Read {
    let mut out = Read {
        sent: Vec::new(),
        duplicates: Vec::new(),
        rejected: Vec::new(),
        counts: (0, 0, 0),
        chunks: 0,
    };
    let summary = import_chunks(step, dir, budget, &mut |c| {
        if out.chunks == 0 {
            first(&c);
        } else {
            assert!(c.source_addresses.is_none(), "the first chunk's only");
        }
        out.chunks += 1;
        let text = |name: &str| -> Vec<String> {
            let col = c.frame.column(name).unwrap().str().unwrap();
            col.iter().map(|v| v.unwrap_or("").to_string()).collect()
        };
        let rows = c.frame.column(ROW_COL).unwrap().u32().unwrap();
        let (emails, names) = (text("email"), text("a:name"));
        for i in 0..c.frame.height() {
            let row = rows.get(i).unwrap();
            out.sent.push((row, emails[i].clone(), names[i].clone()));
        }
        out.duplicates.extend(c.duplicates.iter().cloned());
        out.rejected
            .extend(c.rejects.iter().map(|r| (r.row_number, r.reason.clone())));
        true
    })
    .unwrap();
    let s = summary.stats;
    out.counts = (s.rows_read, s.duplicates, s.rejected_total());
    out
}

#[test]
fn last_read_twice_in_chunks_keeps_what_a_whole_read_keeps_in_memory_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let step = source(dir.path(), "dedupe = \"last\"");
    let whole = read(
        &step,
        dir.path(),
        Budget::default().with_chunk_rows(usize::MAX),
        |_| {},
    );
    assert_eq!(whole.chunks, 1);
    // 50 addresses, each kept once, at its last valid row.
    assert_eq!(whole.sent.len(), 50);
    let user0 = whole.sent.iter().find(|s| s.1 == "user0@example.com");
    // Its last row is i = 350, but 350 = 7 * 50: the date is rejected;
    // 300 is a 60th (broken); 250 it is, on line 252.
    assert_eq!(user0.map(|s| (s.0, s.2.as_str())), Some((252, "N250")));
    assert!(whole.sent.iter().any(|s| s.1 == "user3@example.com"));
    assert_eq!(whole.counts.0, 400);
    assert_eq!(whole.counts.1, whole.duplicates.len() as u64);
    assert_eq!(
        whole.sent.len() as u64 + whole.counts.1 + whole.counts.2,
        400
    );
    for spill_after in [usize::MAX, 1, 20] {
        for chunk_rows in [7, 64] {
            let budget = Budget {
                chunk_rows,
                spill_after,
            };
            let chunked = read(&step, dir.path(), budget, |_| {});
            assert!(chunked.chunks >= 400 / chunk_rows, "{budget:?}");
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
}

#[test]
fn mirror_mode_read_twice_in_chunks_holds_every_source_address_as_a_whole_read_does() {
    let dir = tempfile::tempdir().unwrap();
    let step = source(dir.path(), "mode = \"mirror\"");
    // Every address of the source, valid or not; none other.
    let mut held: Vec<String> = (0..50).map(|n| format!("user{n}@example.com")).collect();
    held.extend((0..400).step_by(60).map(|i| format!("broken-{i}")));
    let absent = ["user50@example.com", "nobody@example.com", "broken-1"];
    let answers = |budget: Budget| {
        let mut found = Vec::new();
        let out = read(&step, dir.path(), budget, |c| {
            let all = c.source_addresses.as_ref().expect("the source's addresses");
            found = held
                .iter()
                .map(String::as_str)
                .chain(absent)
                .map(|a| all.contains(a).unwrap())
                .collect();
        });
        (out, found)
    };
    let (whole, found) = answers(Budget::default().with_chunk_rows(usize::MAX));
    let want: Vec<bool> = held
        .iter()
        .map(|_| true)
        .chain(absent.map(|_| false))
        .collect();
    assert_eq!(found, want);
    for spill_after in [usize::MAX, 1] {
        let budget = Budget {
            chunk_rows: 9,
            spill_after,
        };
        let (chunked, found) = answers(budget);
        assert!(chunked.chunks > 40, "{budget:?}");
        assert_eq!(found, want, "{budget:?}");
        assert_eq!(chunked.sent, whole.sent, "{budget:?}");
        assert_eq!(chunked.counts, whole.counts, "{budget:?}");
    }
}

/// 60 rows of 12 addresses, each address every 12th row (its rows chunks
/// apart, the fifth 48 rows after the first); address n's city only on its
/// (n % 5)-th row, its name from its (n % 3)-th row on: values to merge
/// across chunks.
/// Every 7th row has a date that cannot be read (rejected: its values do
/// not count), every 25th a broken address.
fn merge_source(dir: &Path) -> ImportStep {
    let mut csv = String::from("email,name,city,signup\n");
    for i in 0..60 {
        let n = i % 12;
        let email = match i {
            _ if i % 25 == 0 => format!("broken-{i}"),
            _ if n == 3 => "  User3@Example.COM ".to_string(),
            _ => format!("user{n}@example.com"),
        };
        let name = if i / 12 >= n % 3 {
            format!("N{i}")
        } else {
            String::new()
        };
        let city = if i / 12 == n % 5 {
            format!("C{i}")
        } else {
            String::new()
        };
        let signup = if i % 7 == 0 {
            "not a date"
        } else {
            "2024-05-01"
        };
        csv.push_str(&format!("{email},{name},{city},{signup}\n"));
    }
    std::fs::write(dir.join("in.csv"), csv).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\ndedupe = \"merge\"\n[import.receiver]\nemail = \"email\"\nregistered = \"signup\"\n[import.attributes]\nname = \"name\"\ncity = \"city\"\n",
    )
    .unwrap();
    let p = pipeline::load(&dir.join("p.toml")).unwrap();
    match p.steps.into_iter().next() {
        Some(Step::Import(s)) => s,
        _ => panic!("an import step"),
    }
}

#[test]
fn merge_read_twice_in_chunks_merges_what_a_whole_read_merges_in_memory_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let step = merge_source(dir.path());
    // The city sent with each row (the read compares the names).
    let all = |budget: Budget| {
        let mut cities = Vec::new();
        let read = read(&step, dir.path(), budget, |_| {});
        import_chunks(&step, dir.path(), budget, &mut |c| {
            let rows = c.frame.column(ROW_COL).unwrap().u32().unwrap();
            let city = c.frame.column("a:city").unwrap().str().unwrap();
            for (row, city) in rows.iter().zip(city.iter()) {
                cities.push((row.unwrap(), city.map(str::to_string)));
            }
            true
        })
        .unwrap();
        (read, cities)
    };
    let (whole, whole_cities) = all(Budget::default().with_chunk_rows(usize::MAX));
    assert_eq!(whole.chunks, 1);
    assert_eq!(whole.sent.len(), 12);
    let sent = |email: &str, cities: &[(u32, Option<String>)]| {
        let (row, name) = whole
            .sent
            .iter()
            .find(|s| s.1 == email)
            .map(|s| (s.0, s.2.clone()))?;
        let city = cities.iter().find(|c| c.0 == row)?.1.clone();
        Some((row, name, city.unwrap_or_default()))
    };
    let want = |row: u32, name: &str, city: &str| Some((row, name.to_string(), city.to_string()));
    // user0: row 0 broken (and rejected), 12 kept (line 14), its own
    // name and city.
    assert_eq!(
        sent("user0@example.com", &whole_cities),
        want(14, "N12", "")
    );
    // user2: row 2 kept without a name, 14 rejected (7 * 2): the name of
    // row 26, the city of row 26 (2 % 5 = 2).
    assert_eq!(
        sent("user2@example.com", &whole_cities),
        want(4, "N26", "C26")
    );
    // user3, spelled oddly: row 3 kept; the city of row 39, the name of row 3.
    assert_eq!(
        sent("user3@example.com", &whole_cities),
        want(5, "N3", "C39")
    );
    // user4: row 4 kept, the name of row 16, the city of row 52 (line 54,
    // four chunks of 13 later); row 28 is rejected.
    assert_eq!(
        sent("user4@example.com", &whole_cities),
        want(6, "N16", "C52")
    );
    assert_eq!(
        whole.sent.len() as u64 + whole.counts.1 + whole.counts.2,
        60
    );
    for spill_after in [usize::MAX, 1] {
        for chunk_rows in [5, 13] {
            let budget = Budget {
                chunk_rows,
                spill_after,
            };
            let (chunked, frames) = all(budget);
            assert!(chunked.chunks >= 60 / chunk_rows, "{budget:?}");
            assert_eq!(
                Read {
                    chunks: 1,
                    ..chunked
                },
                whole,
                "{budget:?}"
            );
            assert_eq!(frames, whole_cities, "{budget:?}");
        }
    }
}

/// 40 rows of 8 addresses, each address every 8th row (its rows chunks
/// apart), each row an order line `O<row>`; every 5th row holds no order,
/// every 7th has a price that cannot be read (rejected: its line does not
/// count), the 30th a broken address.
fn orders_source(dir: &Path, dedupe: &str) -> ImportStep {
    let mut csv = String::from("email,order_id,price\n");
    for i in 0..40 {
        let email = match i {
            30 => "broken".to_string(),
            _ => format!("user{}@example.com", i % 8),
        };
        let id = if i % 5 == 0 {
            String::new()
        } else {
            format!("O{i}")
        };
        let price = if i % 7 == 0 { "oops" } else { "1.50" };
        csv.push_str(&format!("{email},{id},{price}\n"));
    }
    std::fs::write(dir.join("in.csv"), csv).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\ndedupe = \"{dedupe}\"\n[import.receiver]\nemail = \"email\"\n[import.orders]\norder_id = \"order_id\"\nprice = \"price\"\n"
        ),
    )
    .unwrap();
    let p = pipeline::load(&dir.join("p.toml")).unwrap();
    match p.steps.into_iter().next() {
        Some(Step::Import(s)) => s,
        _ => panic!("an import step"),
    }
}

/// Each receiver sent (row, address) with the order ids it is sent with,
/// and the counts (rows, duplicates, rejected, orders read, accepted).
type Sent = (Vec<(u32, String, Vec<String>)>, [u64; 5]);

fn sent_with_orders(step: &ImportStep, dir: &Path, budget: Budget) -> (Sent, usize) {
    let (mut sent, mut chunks) = (Vec::new(), 0);
    let summary = import_chunks(step, dir, budget, &mut |c| {
        chunks += 1;
        let rows = c.frame.column(ROW_COL).unwrap().u32().unwrap();
        let emails = c.frame.column("email").unwrap().str().unwrap();
        for (row, email) in rows.iter().zip(emails.iter()) {
            let email = email.unwrap_or("").to_string();
            let ids = c.orders.of(&email).unwrap_or_default();
            let ids = ids.into_iter().map(|o| o.order_id).collect();
            sent.push((row.unwrap_or(0), email, ids));
        }
        true
    })
    .unwrap();
    let s = summary.stats;
    let counts = [
        s.rows_read,
        s.duplicates,
        s.rejected_total(),
        s.orders_read,
        s.orders_accepted,
    ];
    ((sent, counts), chunks)
}

#[test]
fn orders_on_receiver_rows_read_twice_in_chunks_go_with_their_receiver_in_memory_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    for dedupe in ["first", "last", "merge"] {
        let step = orders_source(dir.path(), dedupe);
        let whole_budget = Budget::default().with_chunk_rows(usize::MAX);
        let (whole, chunks) = sent_with_orders(&step, dir.path(), whole_budget);
        assert_eq!(chunks, 1);
        // 8 receivers; 7 rows rejected (0, 7, ..., 35 and the broken 30);
        // 33 valid rows, 28 of them with an order.
        assert_eq!(whole.0.len(), 8, "{dedupe}");
        assert_eq!(whole.1, [40, 25, 7, 28, 28], "{dedupe}");
        // user1: rows 1, 9, 17, 25, 33: every line, wherever it is.
        let user1 = whole.0.iter().find(|s| s.1 == "user1@example.com");
        let ids = ["O1", "O9", "O17", "O33"].map(String::from).to_vec();
        assert_eq!(user1.map(|s| &s.2), Some(&ids), "{dedupe}");
        for spill_after in [usize::MAX, 1, 5] {
            for chunk_rows in [3, 8] {
                let budget = Budget {
                    chunk_rows,
                    spill_after,
                };
                let (chunked, chunks) = sent_with_orders(&step, dir.path(), budget);
                assert!(chunks >= 40 / chunk_rows, "{budget:?}");
                assert_eq!(chunked, whole, "{dedupe} {budget:?}");
            }
        }
    }
}

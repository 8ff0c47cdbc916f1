//! Tests of [`super`]: a source prepared in chunks sends what it sends read whole.

use super::*;
use crate::pipeline::{self, Step};

/// A pipeline over `rows` generated rows: every 97th address invalid,
/// and the last quarter repeating the first quarter's addresses, so
/// duplicates lie chunks apart.
fn generated(dir: &Path, rows: usize) -> ImportStep {
    let mut csv = String::from("email,name,city\n");
    for i in 0..rows {
        let n = if i >= rows * 3 / 4 {
            i - rows * 3 / 4
        } else {
            i
        };
        if i % 97 == 0 {
            csv.push_str(&format!("not-an-address-{i},N{i},Bonn\n"));
        } else {
            csv.push_str(&format!("user{n}@example.com,N{i},Köln\n"));
        }
    }
    std::fs::write(dir.join("in.csv"), csv).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\n[import.receiver]\nemail = \"email\"\n[import.attributes]\nname = \"name\"\ncity = \"city\"\n",
    )
    .unwrap();
    let p = pipeline::load(&dir.join("p.toml")).unwrap();
    match p.steps.into_iter().next() {
        Some(Step::Import(s)) => s,
        _ => panic!("an import step"),
    }
}

/// Row numbers sent and dropped, and the counts, of a read in chunks
/// of `chunk_rows`; every chunk is checked against the bound.
fn read(step: &ImportStep, dir: &Path, chunk_rows: usize) -> (Vec<u32>, Vec<u64>, u64, u64) {
    let (mut sent, mut dropped, mut rejected) = (Vec::new(), Vec::new(), 0);
    let budget = Budget::default().with_chunk_rows(chunk_rows);
    let summary = import_chunks(step, dir, budget, &mut |c| {
        assert!(c.table.frame.height() + c.table.ragged.len() <= chunk_rows);
        assert!(c.frame.height() <= chunk_rows);
        sent.extend(
            c.frame
                .column(ROW_COL)
                .unwrap()
                .u32()
                .unwrap()
                .into_no_null_iter(),
        );
        dropped.extend(c.duplicates.iter().map(|(row, _)| *row));
        // A chunk carries its own rejects, no more.
        assert!(c.rejects.len() <= chunk_rows);
        rejected += c.rejects.len() as u64;
        true
    })
    .unwrap();
    let stats = summary.stats;
    assert_eq!(stats.duplicates, dropped.len() as u64);
    assert_eq!(stats.rejected_total(), rejected);
    (sent, dropped, stats.rows_read, stats.rejected_total())
}

#[test]
fn a_source_read_in_bounded_chunks_sends_what_a_whole_read_sends() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 200_000;
    let step = generated(dir.path(), rows);
    let chunked = read(&step, dir.path(), source::CHUNK_ROWS);
    let whole = read(&step, dir.path(), usize::MAX);
    assert_eq!(chunked, whole);
    let (sent, dropped, read_rows, rejected) = chunked;
    assert_eq!(read_rows, rows as u64);
    assert_eq!(rejected, rows.div_ceil(97) as u64);
    // The last quarter repeats the first: each valid one is dropped
    // (unless its first row was the invalid one).
    assert!(dropped.len() > rows / 4 - rows / 97 - 2 && dropped.len() <= rows / 4);
    assert_eq!(sent.len() + dropped.len() + rejected as usize, rows);
    // `fill_down` is read in chunks too, to the same rows.
    let mut filled = step.clone();
    filled.fill_down = Some(crate::pipeline::FillDown {
        within: "email".into(),
        columns: vec!["city".into()],
    });
    assert_eq!(
        read(&filled, dir.path(), 1_000),
        read(&filled, dir.path(), usize::MAX)
    );
}

#[test]
fn a_consumer_that_stops_stops_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let step = generated(dir.path(), 10_000);
    let mut chunks = 0;
    let r = import_chunks(
        &step,
        dir.path(),
        Budget::default().with_chunk_rows(1_000),
        &mut |_| {
            chunks += 1;
            chunks < 3
        },
    );
    assert!(matches!(r, Err(PrepareError::Stopped)));
    assert_eq!(chunks, 3);
}

#[test]
fn joined_orders_in_chunks_keep_file_order_and_reject_orders_without_their_receiver() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("r.csv"),
        "email\na@x.de\nb@x.de\nnot-an-address\nc@x.de\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("o.csv"),
        "email,id,price\nb@x.de,B1,1.50\na@x.de,A1,2\nghost@x.de,G1,3\nb@x.de,B2,4\n\
         not-an-address,N1,5\na@x.de,A2,oops\nc@x.de,C1,6\nb@x.de,B3,7\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"r.csv\"\ngroup = \"G\"\n[import.receiver]\nemail = \"email\"\n[import.orders]\nsource = \"o.csv\"\nemail = \"email\"\norder_id = \"id\"\nprice = \"price\"\n",
    )
    .unwrap();
    let p = pipeline::load(&dir.path().join("p.toml")).unwrap();
    let Some(Step::Import(step)) = p.steps.into_iter().next() else {
        panic!("an import step");
    };
    // Kept in memory, and past a budget of 1 and 2 order lines in a
    // spill on disk (from the first chunk, or moved there mid-way).
    for spill_after in [usize::MAX, 1, 2] {
        for chunk_rows in [2, 3, usize::MAX] {
            let budget = Budget {
                chunk_rows,
                spill_after,
            };
            let mut ids: Vec<(String, Vec<String>)> = Vec::new();
            let summary = import_chunks(&step, dir.path(), budget, &mut |c| {
                for e in ["a@x.de", "b@x.de", "c@x.de", "ghost@x.de"] {
                    if let Some(lines) = c.orders.of(e) {
                        ids.push((e.into(), lines.into_iter().map(|o| o.order_id).collect()));
                    }
                }
                true
            })
            .unwrap();
            // Each chunk holds the orders of its own receivers, once.
            assert_eq!(
                ids,
                [
                    ("a@x.de".to_string(), vec!["A1".to_string()]),
                    ("b@x.de".into(), vec!["B1".into(), "B2".into(), "B3".into()]),
                    ("c@x.de".into(), vec!["C1".into()]),
                ],
                "{budget:?}"
            );
            let s = &summary.stats;
            assert_eq!(
                (s.orders_read, s.orders_accepted, s.orders_rejected),
                (8, 5, 3),
                "{budget:?}"
            );
            let rejects = summary.order_rejects.unwrap().rows();
            let rows: Vec<(u64, &str, &str)> = rejects
                .iter()
                .map(|r| (r.row_number, r.field.as_str(), r.reason.as_str()))
                .collect();
            assert_eq!(rows.len(), 3, "{budget:?}");
            assert_eq!((rows[0].0, rows[0].1), (4, "email"));
            assert_eq!(
                rows[0].2,
                "no receiver with the address \"ghost@x.de\" in this import"
            );
            assert_eq!((rows[1].0, rows[1].1), (6, "email"));
            assert_eq!((rows[2].0, rows[2].1), (7, "price"));
            assert_eq!(
                rejects[0].values,
                [
                    Some("ghost@x.de".into()),
                    Some("G1".into()),
                    Some("3".into())
                ]
            );
        }
    }
}

#[test]
fn values_read_two_ways_with_ambiguous_omit_are_left_out_counted_by_field_not_rejected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.csv"),
        "email,joined,born\na@example.com,5/6/2012 15:53,3/4/1990\nb@example.com,25/6/2012 10:00,\nc@example.com,1/2/2013 08:00,\nd@example.com,2/3/2014 09:00,x\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "[[import]]\nname = \"i\"\nsource = \"in.csv\"\ngroup = \"G\"\ndate_format = [\"%d/%m/%Y %H:%M\", \"%m/%d/%Y %H:%M\", \"%d/%m/%Y\", \"%m/%d/%Y\"]\nambiguous = \"omit\"\n[import.receiver]\nemail = \"email\"\nregistered = \"joined\"\n[import.global_attributes]\nbirthday = { column = \"born\", type = \"date\" }\n",
    )
    .unwrap();
    let p = pipeline::load(&dir.path().join("p.toml")).unwrap();
    let Some(Step::Import(step)) = p.steps.into_iter().next() else {
        panic!("an import step")
    };
    // In chunks of two rows: the counts add up over the chunks.
    let mut registered: Vec<Option<String>> = Vec::new();
    let budget = Budget::default().with_chunk_rows(2);
    let summary = import_chunks(&step, dir.path(), budget, &mut |c| {
        let col = c.frame.column("registered").unwrap().str().unwrap().clone();
        registered.extend(col.iter().map(|v| v.map(str::to_string)));
        true
    })
    .unwrap();
    let stats = summary.stats;
    // Row 5's "x" is no date: rejected as before.
    assert_eq!(stats.rejected_total(), 1, "{:?}", stats.rejected);
    assert_eq!(
        stats.values_left_out,
        [("birthday".to_string(), 1), ("registered".to_string(), 3)].into()
    );
    assert_eq!(
        stats.left_out_examples["registered"],
        "\"5/6/2012 15:53\" is 2012-06-05 or 2012-05-06"
    );
    assert_eq!(
        stats.left_out_examples["birthday"],
        "\"3/4/1990\" is 1990-04-03 or 1990-03-04"
    );
    // The rows are sent, without the value left out.
    assert_eq!(registered, [None, Some("1340618400".to_string()), None]);
    assert_eq!(
        crate::report::left_out_lines(&stats),
        [
            "birthday: 1 value left out until the format is decided (ambiguous = \"omit\"; \"3/4/1990\" is 1990-04-03 or 1990-03-04: put the right format first and set ambiguous = \"first\")",
            "registered: 3 values left out until the format is decided (ambiguous = \"omit\"; \"5/6/2012 15:53\" is 2012-06-05 or 2012-05-06: put the right format first and set ambiguous = \"first\")",
        ]
    );
}

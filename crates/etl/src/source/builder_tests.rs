//! Tests of `builder.rs`: header names made unique, and which rows count
//! as blank.

use super::*;

fn names(raw: &[&str]) -> Header {
    let cells: Vec<Option<String>> = raw.iter().map(|s| Some(s.to_string())).collect();
    header(cells.as_slice())
}

#[test]
fn header_names_are_trimmed_and_made_unique() {
    let h = names(&["\u{feff} Email ", "", "email", "Email", "Email_2", "__row"]);
    assert_eq!(
        h.names,
        [
            "Email_1", "column_2", "email", "Email_3", "Email_2", "__row_2"
        ]
    );
    assert_eq!(h.named, 6);
    assert_eq!(
        h.repeated,
        [Repeated {
            name: "Email".into(),
            columns: vec![(1, "Email_1".into()), (4, "Email_3".into())]
        }]
    );
}

#[test]
fn a_name_present_twice_is_numbered_in_both_copies() {
    let h = names(&["Name", "Phone", "Phone", "Email"]);
    assert_eq!(h.names, ["Name", "Phone_1", "Phone_2", "Email"]);
    assert_eq!(
        h.repeated[0].columns,
        [(2, "Phone_1".into()), (3, "Phone_2".into())]
    );
}

#[test]
fn a_hundred_thousand_copies_of_one_name_are_numbered_in_linear_time() {
    let raw: Vec<Option<String>> = (0..100_000)
        .map(|i| {
            Some(if i % 2 == 0 {
                "Phone".into()
            } else {
                format!("Phone_{}", i)
            })
        })
        .collect();
    let started = std::time::Instant::now();
    let h = header(raw.as_slice());
    let took = started.elapsed();
    assert_eq!(h.names.len(), 100_000);
    let unique: HashSet<&String> = h.names.iter().collect();
    assert_eq!(unique.len(), 100_000);
    assert_eq!(h.repeated[0].columns.len(), 50_000);
    // Searching from `_2` for every copy took minutes here; numbered in one pass it
    // takes well under a second in a debug build. The bound leaves room
    // for a machine busy with other tests, and none for a quadratic pass.
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
}

#[test]
fn trailing_unnamed_columns_are_not_required_in_rows() {
    let h = names(&["a", "b", "", ""]);
    assert_eq!(h.names, ["a", "b", "column_3", "column_4"]);
    assert_eq!(h.named, 2);
}

#[test]
fn blank_means_only_whitespace_or_empty_cells() {
    let blank: Vec<Option<String>> = vec![None, Some(" ".into()), Some(String::new())];
    assert!(is_blank(blank.as_slice()));
    assert!(!is_blank([None, Some("x".to_string())].as_slice()));
}

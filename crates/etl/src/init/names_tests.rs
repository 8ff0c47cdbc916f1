//! Attribute names `init` makes from headers: transliterated, prefixed, unique, short, and
//! always accepted by the pipeline reader, whatever the header (a property over arbitrary
//! Unicode, empty and digit-only headers, duplicates, very long names, control characters).

use super::ask::NoQuestions;
use super::columns::{attribute_name, unique_name};
use super::{Options, draft};
use proptest::prelude::*;
use std::path::Path;

#[test]
fn german_letters_are_spelled_as_germans_write_them_without_umlauts() {
    assert_eq!(
        attribute_name("Name (Adressattyp natürl. Person)"),
        "name_adressattyp_natuerl_person"
    );
    assert_eq!(attribute_name("Straße"), "strasse");
    assert_eq!(attribute_name("Größe"), "groesse");
    assert_eq!(attribute_name("Ökostrom-Tarif"), "oekostrom_tarif");
}

#[test]
fn other_scripts_are_transliterated() {
    assert_eq!(attribute_name("Prénom"), "prenom");
    assert_eq!(attribute_name("Город"), "gorod");
    assert_eq!(attribute_name("名前"), "ming_qian");
    assert_eq!(attribute_name("Ελλάδα"), "ellada");
}

#[test]
fn a_name_that_starts_with_a_digit_or_holds_nothing_still_is_a_name() {
    assert_eq!(attribute_name("0"), "c_0");
    assert_eq!(attribute_name("2nd Address"), "c_2nd_address");
    assert_eq!(attribute_name(""), "column");
    assert_eq!(attribute_name("!!!"), "column");
    assert_eq!(attribute_name("\u{1}\u{7f}"), "column");
    assert_eq!(attribute_name("😀"), "grinning");
}

#[test]
fn names_are_unique_and_short_after_transliteration() {
    let long = "ü".repeat(100);
    let first = attribute_name(&long);
    assert_eq!(first.len(), 64);
    let taken = vec![first.clone()];
    let second = unique_name(attribute_name(&long), &taken);
    assert_eq!(second.len(), 64);
    assert!(second.ends_with("_2") && second != first);
    // `Straße` and `Strasse` spell one name: the second is numbered.
    let taken = vec![attribute_name("Straße")];
    assert_eq!(unique_name(attribute_name("Strasse"), &taken), "strasse_2");
}

/// Headers of every kind a file may hold.
fn header() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[0-9]{1,5}",
        "[äöüßÄÖÜ ]{1,12}",
        "\\PC{1,200}",
        "[\\x00-\\x1f\\x7f]{1,4}[a-z]{0,3}",
        Just(String::new()),
        Just("名前".to_string()),
        Just("email".to_string()),
    ]
}

/// A one-row CSV whose header is `email` and `headers`, written with the csv crate (which
/// quotes what needs quoting).
fn csv_file(headers: &[String]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["email".to_string()];
    header.extend(headers.iter().cloned());
    let _ = w.write_record(&header);
    let mut row = vec!["a@example.com".to_string()];
    row.extend((0..headers.len()).map(|i| format!("v{i}")));
    let _ = w.write_record(&row);
    w.into_inner().unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_pipeline_init_writes_is_accepted_whatever_the_headers(
        headers in prop::collection::vec(header(), 1..6),
        repeat in any::<bool>(),
    ) {
        let mut headers = headers;
        if repeat {
            headers.push(headers[0].clone());
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("export.csv"), csv_file(&headers)).unwrap();
        let opts = Options {
            sources: vec!["export.csv".into()],
            local: vec!["export.csv".into()],
            base: dir.path().to_path_buf(),
            out_dir: Some(dir.path().to_path_buf()),
            group: Some("g".into()),
            target: None,
        };
        let written = draft(&opts, &mut NoQuestions);
        // A file init cannot read is refused with a reason (never a panic); one it reads
        // gets a pipeline the reader accepts.
        if let Ok(d) = written {
            let parsed = crate::pipeline::parse_text(&dir.path().join("p.toml"), &d.text);
            prop_assert!(parsed.is_ok(), "{:?}\n{}\n{:?}", headers, d.text, parsed.err());
        }
    }
}

#[test]
fn the_pipeline_of_a_german_export_with_umlauts_in_every_header_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kunden.csv"),
        "E-Mail;Name (Adressattyp natürl. Person);Straße;Größe;0;名前\nx@example.de;Müller;Hauptstr. 1;42;1;山田\n",
    )
    .unwrap();
    let opts = Options {
        sources: vec!["kunden.csv".into()],
        local: vec!["kunden.csv".into()],
        base: dir.path().to_path_buf(),
        out_dir: Some(dir.path().to_path_buf()),
        group: Some("kunden".into()),
        target: None,
    };
    let d = draft(&opts, &mut NoQuestions).unwrap();
    assert!(
        d.text
            .contains("name_adressattyp_natuerl_person = \"Name (Adressattyp natürl. Person)\""),
        "{}",
        d.text
    );
    assert!(d.text.contains("ming_qian = \"名前\""), "{}", d.text);
    assert!(d.text.contains("c_0 = "), "{}", d.text);
    crate::pipeline::parse_text(Path::new(&dir.path().join("p.toml")), &d.text).unwrap();
}

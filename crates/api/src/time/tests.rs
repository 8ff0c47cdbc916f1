//! The rules of reading dates and times, one test each, and properties over
//! every spelling.

use super::*;

#[test]
fn explicit_formats_parse_german_dates() {
    assert_eq!(
        parse_timestamp("01.02.2024", Some("%d.%m.%Y")),
        Ok(1_706_745_600)
    );
    assert_eq!(
        parse_date("11.02.1993", Some("%d.%m.%Y")).as_deref(),
        Ok("1993-02-11")
    );
}

#[test]
fn impossible_dates_are_errors_naming_the_format() {
    assert_eq!(
        parse_date("31.02.1990", Some("%d.%m.%Y")),
        Err("\"31.02.1990\" is not a date in the format %d.%m.%Y".into())
    );
}

#[test]
fn iso_spellings_and_unix_seconds_need_no_format() {
    assert_eq!(parse_timestamp("2024-02-01", None), Ok(1_706_745_600));
    assert_eq!(
        parse_timestamp("2024-02-01 00:00:00 UTC", None),
        Ok(1_706_745_600)
    );
    assert_eq!(
        parse_timestamp("2024-02-01T01:00:00+01:00", None),
        Ok(1_706_745_600)
    );
    assert_eq!(parse_timestamp("1706745600", None), Ok(1_706_745_600));
    assert_eq!(
        parse_timestamp("2024-02-01 02:00:00 +0200", None),
        Ok(1_706_745_600)
    );
    assert!(
        parse_timestamp("01.02.2024", None)
            .unwrap_err()
            .contains("set `format`")
    );
}

fn times(formats: &[&str], ambiguous: Ambiguous, zone: Option<Tz>) -> Times {
    let formats: Vec<String> = formats.iter().map(|f| f.to_string()).collect();
    Times::new(&formats, ambiguous, zone)
}

const BERLIN: Option<Tz> = Some(chrono_tz::Europe::Berlin);

#[test]
fn a_format_list_is_tried_in_order() {
    let t = times(&["%d.%m.%Y", "%Y-%m-%d"], Ambiguous::Reject, None);
    assert_eq!(t.date("11.02.1993").as_deref(), Ok("1993-02-11"));
    assert_eq!(t.date("1993-02-11").as_deref(), Ok("1993-02-11"));
    assert_eq!(t.timestamp("01.02.2024"), Ok(1_706_745_600));
    assert_eq!(
        t.date("x"),
        Err("\"x\" does not match any of the formats %d.%m.%Y, %Y-%m-%d".into())
    );
    assert_eq!(
        t.timestamp("x"),
        Err("\"x\" does not match any of the formats %d.%m.%Y, %Y-%m-%d".into())
    );
}

#[test]
fn a_value_two_formats_read_differently_is_ambiguous_naming_both_readings() {
    let t = times(&["%m/%d/%Y", "%d/%m/%Y"], Ambiguous::Reject, None);
    let why = "\"03/04/2025\" is ambiguous: 2025-03-04 with %m/%d/%Y, 2025-04-03 with %d/%m/%Y; list the format that wins first and set ambiguous = \"first\"";
    assert_eq!(t.date("03/04/2025"), Err(why.into()));
    assert_eq!(t.timestamp("03/04/2025"), Err(why.into()));
    // Read the same by both, or by one only: no doubt.
    assert_eq!(t.date("04/04/2025").as_deref(), Ok("2025-04-04"));
    assert_eq!(t.date("03/24/2025").as_deref(), Ok("2025-03-24"));
    assert_eq!(t.date("24/03/2025").as_deref(), Ok("2025-03-24"));
}

#[test]
fn with_ambiguous_first_the_first_listed_format_wins() {
    let us = times(&["%m/%d/%Y", "%d/%m/%Y"], Ambiguous::First, None);
    assert_eq!(us.date("03/04/2025").as_deref(), Ok("2025-03-04"));
    let eu = times(&["%d/%m/%Y", "%m/%d/%Y"], Ambiguous::First, None);
    assert_eq!(eu.date("03/04/2025").as_deref(), Ok("2025-04-03"));
    assert_eq!(eu.date("03/24/2025").as_deref(), Ok("2025-03-24"));
}

#[test]
fn times_of_day_make_readings_differ_too() {
    let t = times(&["unix", "excel"], Ambiguous::Reject, None);
    assert_eq!(
        t.timestamp("45292"),
        Err("\"45292\" is ambiguous: 1970-01-01 12:34:52 UTC with unix, 2024-01-01 with excel; list the format that wins first and set ambiguous = \"first\"".into())
    );
    assert_eq!(t.timestamp("45292.75"), Ok(1_704_132_000));
}

#[test]
fn excel_serials_read_as_dates_and_times_within_their_range() {
    let t = times(&["excel"], Ambiguous::Reject, None);
    assert_eq!(t.date("45292").as_deref(), Ok("2024-01-01"));
    assert_eq!(t.date("45292.75").as_deref(), Ok("2024-01-01"));
    assert_eq!(t.timestamp("45292"), Ok(1_704_067_200));
    // 18:00 of the day.
    assert_eq!(t.timestamp("45292.75"), Ok(1_704_067_200 + 18 * 3600));
    assert_eq!(t.date("2958465").as_deref(), Ok("9999-12-31"));
    let out = "\"2958466\" is not a spreadsheet serial day (a number from 1 to 2958465)";
    assert_eq!(t.date("2958466"), Err(out.into()));
    assert_eq!(t.timestamp("2958466"), Err(out.into()));
    assert_eq!(
        t.timestamp("0"),
        Err("\"0\" is not a spreadsheet serial day (a number from 1 to 2958465)".into())
    );
    // In a zone, a serial is a wall-clock time there.
    let berlin = times(&["excel"], Ambiguous::Reject, BERLIN);
    assert_eq!(berlin.timestamp("45292.75"), Ok(1_704_067_200 + 17 * 3600));
}

#[test]
fn naive_times_are_read_in_the_zone_and_offsets_are_kept() {
    let t = times(
        &["%d.%m.%Y %H:%M", "%Y-%m-%d %H:%M:%S %z"],
        Ambiguous::Reject,
        BERLIN,
    );
    assert_eq!(t.timestamp("01.02.2024 01:00"), Ok(1_706_745_600));
    assert_eq!(t.timestamp("01.07.2024 02:00"), Ok(1_719_792_000));
    assert_eq!(t.timestamp("2024-02-01 00:00:00 +0000"), Ok(1_706_745_600));
    let auto = Times {
        zone: BERLIN,
        ..Times::default()
    };
    assert_eq!(auto.timestamp("2024-02-01 01:00"), Ok(1_706_745_600));
    assert_eq!(auto.timestamp("2024-02-01"), Ok(1_706_745_600 - 3600));
    assert_eq!(auto.timestamp("2024-02-01T00:00:00Z"), Ok(1_706_745_600));
    assert_eq!(auto.timestamp("2024-02-01 00:00:00 UTC"), Ok(1_706_745_600));
    assert_eq!(auto.timestamp("1706745600"), Ok(1_706_745_600));
    // Dates take no zone.
    assert_eq!(auto.date("2024-02-01").as_deref(), Ok("2024-02-01"));
}

#[test]
fn a_time_the_clocks_skip_is_refused_and_one_they_pass_twice_is_the_earlier() {
    let t = times(&["%d.%m.%Y %H:%M"], Ambiguous::Reject, BERLIN);
    let gap = "\"30.03.2025 02:30\" is a local time that does not exist in Europe/Berlin (the clocks skip it when they move forward)";
    assert_eq!(t.timestamp("30.03.2025 02:30"), Err(gap.into()));
    let auto = Times {
        zone: BERLIN,
        ..Times::default()
    };
    assert_eq!(
        auto.timestamp("2025-03-30 02:30"),
        Err("\"2025-03-30 02:30\" is a local time that does not exist in Europe/Berlin (the clocks skip it when they move forward)".into())
    );
    // 02:30 on 2025-10-26 happens at 00:30 and at 01:30 UTC.
    assert_eq!(t.timestamp("26.10.2025 02:30"), Ok(1_761_438_600));
    // Another format reading the value where it exists is no gap.
    let two = times(
        &["%d.%m.%Y %H:%M", "%m.%d.%Y %H:%M"],
        Ambiguous::Reject,
        BERLIN,
    );
    assert!(two.timestamp("03.30.2025 02:30").is_err());
    assert_eq!(two.timestamp("30.03.2025 03:30"), Ok(1_743_298_200));
}

#[test]
fn with_ambiguous_omit_a_value_read_two_ways_is_left_out_saying_what_it_reads_as() {
    let t = times(&["%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M"], Ambiguous::Omit, None);
    let left_out = Unread::LeftOut("\"5/6/2012 15:53\" is 2012-06-05 or 2012-05-06".into());
    assert_eq!(t.read_timestamp("5/6/2012 15:53"), Err(left_out.clone()));
    assert_eq!(t.read_date(" 5/6/2012 15:53 "), Err(left_out));
    // Read one way only, or alike: read as with "reject".
    assert_eq!(t.read_timestamp("25/6/2012 15:53"), Ok(1_340_639_580));
    assert_eq!(t.read_date("6/6/2012 15:53").as_deref(), Ok("2012-06-06"));
    // A value no format reads is still refused.
    assert_eq!(
        t.read_timestamp("x"),
        Err(Unread::Refused(
            "\"x\" does not match any of the formats %d/%m/%Y %H:%M, %m/%d/%Y %H:%M".into()
        ))
    );
    // `timestamp` and `date` cannot leave a value out: the reject reason.
    assert_eq!(
        t.timestamp("5/6/2012 15:53"),
        Err("\"5/6/2012 15:53\" is ambiguous: 2012-06-05 15:53:00 with %d/%m/%Y %H:%M, 2012-05-06 15:53:00 with %m/%d/%Y %H:%M; list the format that wins first and set ambiguous = \"first\"".into())
    );
    // Readings at different times of day are shown whole.
    let t = times(&["unix", "excel"], Ambiguous::Omit, None);
    assert_eq!(
        t.read_timestamp("45292"),
        Err(Unread::LeftOut(
            "\"45292\" is 1970-01-01 12:34:52 UTC or 2024-01-01".into()
        ))
    );
    // With "reject" the new reading keeps the old reason.
    let t = times(&["%m/%d/%Y", "%d/%m/%Y"], Ambiguous::Reject, None);
    assert!(
        matches!(t.read_date("03/04/2025"), Err(Unread::Refused(why)) if why.contains("is ambiguous"))
    );
}

/// `(value, format, the date it reads as)`.
fn reads_as(cases: &[(&str, &str, &str)]) {
    for (value, format, want) in cases {
        let t = times(&[format], Ambiguous::Reject, None);
        assert_eq!(
            t.date(value).as_deref(),
            Ok(*want),
            "{value:?} with {format:?}"
        );
    }
}

#[test]
fn english_month_names_read_full_short_any_case_and_with_a_dot() {
    reads_as(&[
        ("September 15, 2014", "%B %d, %Y", "2014-09-15"),
        ("SEPTEMBER 15, 2014", "%B %d, %Y", "2014-09-15"),
        ("Sept. 15, 2014", "%b %d, %Y", "2014-09-15"),
        ("Sep 15, 2014", "%B %d, %Y", "2014-09-15"),
        ("15 Jan 2023", "%d %b %Y", "2023-01-15"),
        ("15 jan. 2023", "%d %b %Y", "2023-01-15"),
        ("Jan 15 2023", "%b %d %Y", "2023-01-15"),
        ("15.Jan.2023", "%d.%b.%Y", "2023-01-15"),
        ("Jan. 15, 2023", "%b. %d, %Y", "2023-01-15"),
    ]);
    let t = times(&["%B %d, %Y %I:%M:%S %p"], Ambiguous::Reject, None);
    // 17:59:48 UTC.
    assert_eq!(
        t.timestamp("September 15, 2014 5:59:48 PM"),
        Ok(1_410_803_988)
    );
    let t = times(&["%B %d, %Y %I:%M %p"], Ambiguous::Reject, None);
    assert_eq!(t.timestamp("May 11, 2019 11:21 AM"), Ok(1_557_573_660));
    // `%b` reads abbreviations, in every language, as chrono does in English.
    let t = times(&["%b %d, %Y"], Ambiguous::Reject, None);
    assert!(t.date("September 15, 2014").is_err());
    let t = times(&["%d. %b %Y"], Ambiguous::Reject, None);
    assert!(t.date("15. März 2023").is_err());
    // A word that is no month is not read as one.
    let t = times(&["%d %b %Y"], Ambiguous::Reject, None);
    assert_eq!(
        t.date("15 Foo 2023"),
        Err("\"15 Foo 2023\" is not a date in the format %d %b %Y".into())
    );
}

#[test]
fn german_month_names_read_with_and_without_umlauts_and_dots() {
    reads_as(&[
        ("15. März 2023", "%d. %B %Y", "2023-03-15"),
        ("15. Maerz 2023", "%d. %B %Y", "2023-03-15"),
        ("15. Marz 2023", "%d. %B %Y", "2023-03-15"),
        ("15. MÄRZ 2023", "%d. %B %Y", "2023-03-15"),
        ("15. Mär. 2023", "%d. %b %Y", "2023-03-15"),
        ("15. Mrz 2023", "%d. %b %Y", "2023-03-15"),
        ("1. Januar 2024", "%d. %B %Y", "2024-01-01"),
        ("1. Jänner 2024", "%d. %B %Y", "2024-01-01"),
        ("3. Mai 2024", "%d. %B %Y", "2024-05-03"),
        ("3. Okt. 2024", "%d. %b %Y", "2024-10-03"),
        ("24. Dezember 2024", "%d. %B %Y", "2024-12-24"),
        ("24. Dez 2024", "%d. %b %Y", "2024-12-24"),
    ]);
}

#[test]
fn french_month_names_read_with_and_without_accents_and_dots() {
    reads_as(&[
        ("3 févr. 2021", "%d %b %Y", "2021-02-03"),
        ("3 fevr 2021", "%d %b %Y", "2021-02-03"),
        ("3 février 2021", "%d %B %Y", "2021-02-03"),
        ("3 fevrier 2021", "%d %B %Y", "2021-02-03"),
        ("15 août 2021", "%d %B %Y", "2021-08-15"),
        ("15 aout 2021", "%d %B %Y", "2021-08-15"),
        ("1 janv. 2021", "%d %b %Y", "2021-01-01"),
        ("14 juillet 2021", "%d %B %Y", "2021-07-14"),
        ("14 juil. 2021", "%d %b %Y", "2021-07-14"),
        ("25 déc. 2021", "%d %b %Y", "2021-12-25"),
        ("25 décembre 2021", "%d %B %Y", "2021-12-25"),
    ]);
    let t = times(&["%d %b %Y %H:%M"], Ambiguous::Reject, None);
    assert_eq!(t.timestamp("3 févr. 2021 14:05"), Ok(1_612_361_100));
}

#[test]
fn spanish_month_names_read_with_the_formats_own_de() {
    reads_as(&[
        ("12 de enero de 2020", "%d de %B de %Y", "2020-01-12"),
        ("12 de ENERO de 2020", "%d de %B de %Y", "2020-01-12"),
        ("12 ene. 2020", "%d %b %Y", "2020-01-12"),
        ("12 ene 2020", "%d %b %Y", "2020-01-12"),
        ("1 de septiembre de 2020", "%d de %B de %Y", "2020-09-01"),
        ("1 de setiembre de 2020", "%d de %B de %Y", "2020-09-01"),
        ("1 set. 2020", "%d %b %Y", "2020-09-01"),
        ("5 de mayo de 2020", "%d de %B de %Y", "2020-05-05"),
        ("5 ago 2020", "%d %b %Y", "2020-08-05"),
        ("31 dic. 2020", "%d %b %Y", "2020-12-31"),
    ]);
    // The format's `de` is the user's: without it, a `de` in the value does not read.
    let t = times(&["%d %B %Y"], Ambiguous::Reject, None);
    assert!(t.date("12 de enero de 2020").is_err());
}

#[test]
fn weekday_names_are_read_and_not_checked_against_the_date() {
    // 2023-01-15 is a Sunday: the date wins.
    let t = times(&["%a, %d %b %Y %H:%M:%S"], Ambiguous::Reject, None);
    assert_eq!(t.timestamp("Mon, 15 Jan 2023 10:00:00"), Ok(1_673_776_800));
    assert_eq!(t.timestamp("Sun, 15 Jan 2023 10:00:00"), Ok(1_673_776_800));
    reads_as(&[
        ("Sunday, January 15, 2023", "%A, %B %d, %Y", "2023-01-15"),
        ("So., 15. Jan. 2023", "%a, %d. %b %Y", "2023-01-15"),
        ("Sonntag, 15. Januar 2023", "%A, %d. %B %Y", "2023-01-15"),
        ("dim. 15 janv. 2023", "%a %d %b %Y", "2023-01-15"),
        ("mar., 3 mar. 2021", "%a, %d %b %Y", "2021-03-03"),
        (
            "miércoles 3 de marzo de 2021",
            "%A %d de %B de %Y",
            "2021-03-03",
        ),
        ("15 Jan 2023 (Sun)", "%d %b %Y (%a)", "2023-01-15"),
    ]);
    // A format with a weekday needs one in the value.
    let t = times(&["%a %d %b %Y"], Ambiguous::Reject, None);
    assert!(t.date("15 Jan 2023").is_err());
    assert!(t.date("Foo 15 Jan 2023").is_err());
}

mod properties {
    use super::super::*;
    use chrono::{NaiveDate, TimeZone};
    use proptest::prelude::*;

    /// A UTC second from year 1 to 9999 (what `%Y` writes as four digits).
    fn utc() -> impl Strategy<Value = DateTime<Utc>> {
        let lo = NaiveDate::from_ymd_opt(1, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap();
        let hi = NaiveDate::from_ymd_opt(9999, 12, 31)
            .unwrap()
            .and_hms_opt(23, 59, 59)
            .unwrap();
        (lo.and_utc().timestamp()..=hi.and_utc().timestamp())
            .prop_map(|t| Utc.timestamp_opt(t, 0).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn every_supported_spelling_parses_back_to_the_same_second(dt in utc()) {
            let t = dt.timestamp();
            let minute = t - t.rem_euclid(60);
            let day = t - t.rem_euclid(86_400);
            let cases: Vec<(String, Option<&str>, i64)> = vec![
                (dt.format("%Y-%m-%d %H:%M:%S").to_string(), None, t),
                (dt.format("%Y-%m-%dT%H:%M:%S").to_string(), None, t),
                (dt.format("%Y-%m-%d %H:%M:%S UTC").to_string(), None, t),
                (dt.format("%Y-%m-%d %H:%M:%S GMT").to_string(), None, t),
                (dt.format("%Y-%m-%dT%H:%M:%SZ").to_string(), None, t),
                (dt.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(), None, t),
                (dt.format("%Y-%m-%d %H:%M").to_string(), None, minute),
                (dt.format("%Y-%m-%dT%H:%M").to_string(), None, minute),
                (dt.format("%Y-%m-%d").to_string(), None, day),
                (format!("  {}  ", dt.format("%Y-%m-%d %H:%M:%S")), None, t),
                (dt.format("%d.%m.%Y %H:%M:%S").to_string(), Some("%d.%m.%Y %H:%M:%S"), t),
                (dt.format("%d.%m.%Y").to_string(), Some("%d.%m.%Y"), day),
                (dt.format("%a, %d %b %Y %H:%M:%S").to_string(), Some("%a, %d %b %Y %H:%M:%S"), t),
                (dt.format("%B %d, %Y %I:%M:%S %p").to_string(), Some("%B %d, %Y %I:%M:%S %p"), t),
                (t.to_string(), Some("unix"), t),
            ];
            for (text, format, want) in cases {
                prop_assert_eq!(parse_timestamp(&text, format), Ok(want), "{:?} {:?}", text, format);
            }
            if t >= 0 {
                prop_assert_eq!(parse_timestamp(&t.to_string(), None), Ok(t));
            }
            prop_assert_eq!(
                parse_date(&dt.format("%Y-%m-%d").to_string(), None),
                Ok(dt.format("%Y-%m-%d").to_string())
            );
        }

        #[test]
        fn arbitrary_text_and_formats_never_panic(
            s in "\\PC{0,40}",
            noise in "[0-9:T .+Z%a-zA-Z-]{0,30}",
            fmt in prop::option::of("[%a-zA-Z:. -]{0,12}"),
        ) {
            for text in [&s, &noise] {
                let _ = parse_timestamp(text, None);
                let _ = parse_timestamp(text, Some("unix"));
                let _ = parse_timestamp(text, fmt.as_deref());
                let _ = parse_date(text, None);
                let _ = parse_date(text, fmt.as_deref());
            }
        }
    }
}

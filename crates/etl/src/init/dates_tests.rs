//! Dates as people write them (issue 55, part 5): month names in English, German, French
//! and Spanish, times with seconds or AM/PM after either date order, columns that mix
//! formats, and an undecided column's values left out (`ambiguous = "omit"`) rather than
//! rejected.

use super::dates::{self, DateFormat};
use super::render;

#[test]
fn month_name_columns_get_their_format() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["September 15, 2014 5:59:48 PM", "May 11, 2019 11:21:04 AM"],
            "%B %d, %Y %I:%M:%S %p",
        ),
        (
            &["May 11, 2019 11:21 AM", "January 2, 2020 9:05 PM"],
            "%B %d, %Y %I:%M %p",
        ),
        (&["September 15, 2014", "May 11, 2019"], "%B %d, %Y"),
        (&["Sep 15, 2014", "Jan 2, 2020"], "%b %d, %Y"),
        (&["Jan 15 2023", "Feb 3 2023"], "%b %d %Y"),
        (&["15 Jan 2023", "3 Feb 2023"], "%d %b %Y"),
        (&["15 January 2023", "3 février 2023"], "%d %B %Y"),
        (&["15-Jan-2023", "3-Feb-2023"], "%d-%b-%Y"),
        (
            &["3 févr. 2021 14:05", "15 janv. 2021 09:00"],
            "%d %b %Y %H:%M",
        ),
        (
            &["Mon, 15 Jan 2023 10:00:00", "Tue, 17 Jan 2023 11:30:00"],
            "%a, %d %b %Y %H:%M:%S",
        ),
        (
            &[
                "Sun, 15 Jan 2023 10:00:00 +0100",
                "Tue, 17 Jan 2023 11:30:00 +0000",
            ],
            "%a, %d %b %Y %H:%M:%S %z",
        ),
        (&["15. März 2023", "1. Mai 2023"], "%d. %B %Y"),
        (&["15. Mär. 2023", "1. Okt. 2023"], "%d. %b %Y"),
        (
            &["12 de enero de 2020", "3 de setiembre de 2021"],
            "%d de %B de %Y",
        ),
    ];
    for (values, format) in cases {
        assert_eq!(
            dates::detect(values),
            Some(DateFormat::One(format)),
            "{values:?}"
        );
    }
}

#[test]
fn times_with_seconds_or_am_pm_get_their_format_in_either_date_order() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["5/6/2012 5:53:10 PM", "25/6/2012 9:01:00 AM"],
            "%d/%m/%Y %I:%M:%S %p",
        ),
        (
            &["5/6/2012 5:53:10 PM", "5/26/2012 9:01:00 AM"],
            "%m/%d/%Y %I:%M:%S %p",
        ),
        (
            &["5/6/2012 5:53 PM", "25/6/2012 9:01 AM"],
            "%d/%m/%Y %I:%M %p",
        ),
        (
            &["01.02.2024 10:00:05", "31.12.2023 23:59:59"],
            "%d.%m.%Y %H:%M:%S",
        ),
        (
            &["01-02-2024 10:00:05", "31-12-2023 23:59:59"],
            "%d-%m-%Y %H:%M:%S",
        ),
        (
            &["01-02-2024 10:00:05", "12-31-2023 23:59:59"],
            "%m-%d-%Y %H:%M:%S",
        ),
        (&["2024/02/01 10:00", "2023/12/31 23:59"], "%Y/%m/%d %H:%M"),
    ];
    for (values, format) in cases {
        assert_eq!(
            dates::detect(values),
            Some(DateFormat::One(format)),
            "{values:?}"
        );
    }
}

#[test]
fn an_undecided_column_lists_both_orders_and_leaves_its_doubtful_values_out() {
    // Magento's `5/6/2012 15:53` on every row.
    let d = dates::detect(&["5/6/2012 15:53", "5/6/2012 15:53"]).unwrap();
    assert_eq!(
        d,
        DateFormat::Ambiguous {
            formats: vec!["%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M"],
            example: "5/6/2012 15:53".into()
        }
    );
    assert_eq!(
        render::format_keys(Some(&d)),
        vec![
            r#"format = ["%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M"]"#.to_string(),
            r#"ambiguous = "omit""#.to_string()
        ]
    );
    let comment = render::ambiguity_comment("created_at", Some(&d)).unwrap();
    assert!(
        comment.ends_with("until then such values are left out (ambiguous = \"omit\"): the rows are imported without them, and `check` and `run` count them."),
        "{comment}"
    );
    let twelve = dates::detect(&["5/6/2012 5:53 PM", "3/4/2012 9:01 AM"]).unwrap();
    assert_eq!(
        twelve.formats(),
        vec!["%d/%m/%Y %I:%M %p", "%m/%d/%Y %I:%M %p"]
    );
    // A mapping written with these keys parses and reads the values as it says.
    let formats: Vec<String> = d.formats().iter().map(|f| f.to_string()).collect();
    let times =
        crate::prepare::time::Times::new(&formats, crate::prepare::time::Ambiguous::Omit, None);
    assert!(matches!(
        times.read_timestamp("5/6/2012 15:53"),
        Err(crate::prepare::time::Unread::LeftOut(_))
    ));
}

#[test]
fn a_column_of_times_with_and_without_seconds_lists_both_formats() {
    assert_eq!(
        dates::detect(&["September 15, 2014 5:59:48 PM", "May 11, 2019 11:21 AM"]),
        Some(DateFormat::List(vec![
            "%B %d, %Y %I:%M:%S %p",
            "%b %d, %Y %I:%M %p"
        ]))
    );
    // A value no format reads keeps the column from being taken for dates.
    assert_eq!(dates::detect(&["May 11, 2019 11:21 AM", "soon"]), None);
}

#[test]
fn times_with_a_named_month_as_crms_and_shops_write_them_get_their_format() {
    for (value, format) in [
        ("15 Jan 2023 10:30 AM", "%d %b %Y %I:%M %p"),
        ("Sep 15, 2014, 5:59 PM", "%b %d, %Y, %I:%M %p"),
        ("September 15, 2014 at 5:59 PM", "%B %d, %Y at %I:%M %p"),
        ("Monday, September 15, 2014", "%A, %B %d, %Y"),
        ("15-JAN-2023 10:30:00", "%d-%b-%Y %H:%M:%S"),
        ("15 janvier 2023 à 10:30", "%d %B %Y à %H:%M"),
        ("15. März 2023, 10:30", "%d. %B %Y, %H:%M"),
    ] {
        let found = dates::detect(&[value]).map(|d| d.formats());
        assert!(
            found.as_ref().is_some_and(|f| f.contains(&format)),
            "{value}: {found:?}"
        );
    }
}

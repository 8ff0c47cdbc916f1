//! One test per rule of `init`: each table row and each decision, on small samples.

use super::ask::NoQuestions;
use super::columns::{self, Role};
use super::consent::{self, Test, When};
use super::dates::{self, DateFormat};
use super::rules::{self, AttrType, Target};
use super::sample::Sample;
use super::{render, tools};
use crate::source::{SourceFormat, TextEncoding};

/// A sample of `columns` holding `rows` (an empty string is an empty cell).
pub(super) fn sample(columns: &[&str], rows: &[&[&str]]) -> Sample {
    let cells = (0..columns.len())
        .map(|i| {
            rows.iter()
                .map(|r| Some(r[i]).filter(|v| !v.is_empty()).map(str::to_string))
                .collect()
        })
        .collect();
    Sample {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        cells,
        rows: rows.len(),
        format: SourceFormat::Csv,
        delimiter: b',',
        encoding: TextEncoding::Utf8,
        encoding_guessed: false,
        header_row: 1,
        no_header: false,
        short_rows: 0,
        long_rows: 0,
        sheets: Vec::new(),
        sheet: None,
        files: Vec::new(),
    }
}

#[test]
fn header_names_are_compared_without_case_or_punctuation() {
    assert_eq!(rules::normalise("E-Mail Address"), "emailaddress");
    assert!(rules::header_is("E_MAIL", rules::EMAIL_NAMES));
}

#[test]
fn a_shop_prefix_before_a_known_name_keeps_its_meaning() {
    assert!(rules::header_is("billing_firstname", &["firstname"]));
    assert!(rules::header_is("Default Address Zip", &["zip"]));
}

#[test]
fn every_tool_export_row_is_recognised_by_its_headers() {
    for tool in rules::TOOL_EXPORTS {
        let columns: Vec<String> = tool.all.iter().map(|h| h.to_lowercase()).collect();
        assert_eq!(
            tools::preset_for(&columns).map(|t| t.preset),
            Some(tool.preset),
            "{:?}",
            tool.all
        );
    }
    assert!(tools::preset_for(&["email".into(), "name".into()]).is_none());
}

#[test]
fn the_address_column_is_found_by_its_values_when_its_name_says_nothing() {
    let s = sample(
        &["Kontakt", "Name"],
        &[&["a@example.com", "A"], &["b@example.com", "B"]],
    );
    assert_eq!(columns::roles(&s)[0], Role::Email { primary: true });
}

#[test]
fn of_two_address_columns_the_one_named_email_is_the_receivers() {
    let s = sample(
        &["Owner", "Email"],
        &[
            &["boss@example.com", "a@example.com"],
            &["boss@example.com", "b@example.com"],
        ],
    );
    let roles = columns::roles(&s);
    assert_eq!(roles[0], Role::Email { primary: false });
    assert_eq!(roles[1], Role::Email { primary: true });
}

#[test]
fn password_columns_are_left_out_by_name_and_hashes_by_their_values() {
    assert!(columns::secret("password", &[]).is_some());
    assert!(columns::secret("api_token", &[]).is_some());
    assert!(columns::secret("Card Number", &[]).is_some());
    assert!(columns::secret("x", &["a256a310bc1e5db755fd392c524028a8"]).is_some());
    assert!(columns::secret("salutation", &["Herr"]).is_none());
}

#[test]
fn the_tag_separator_is_the_one_the_values_use() {
    assert_eq!(columns::tag_separator(&["a;b", "c"]), ";");
    assert_eq!(
        columns::tag_separator(&["* My Contacts ::: Friends"]),
        " ::: "
    );
    assert_eq!(columns::tag_separator(&["vip"]), ",");
}

#[test]
fn numbers_are_typed_but_leading_zeros_and_long_digit_runs_stay_text() {
    assert_eq!(columns::number(&["12", "3.5"]), Some(false));
    assert_eq!(columns::number(&["1.049,90", "3,5"]), Some(true));
    assert_eq!(columns::number(&["01067"]), None);
    assert_eq!(columns::number(&["4915112345678"]), None);
}

#[test]
fn gender_values_the_api_does_not_know_map_to_empty() {
    assert_eq!(
        columns::gender_map(&[
            "Herr", "Frau", "Herr", "Herr", "Frau", "Herr", "Frau", "Herr", "Frau", "Dr."
        ]),
        Some(vec![("Dr.".to_string(), String::new())])
    );
    assert_eq!(columns::gender_map(&["red", "blue"]), None);
}

#[test]
fn a_salutation_column_is_a_gender_by_its_values_whatever_its_name() {
    let mut rows: Vec<&[&str]> = vec![&["a@example.com", "Mrs."]; 9];
    rows.push(&["b@example.com", "Mr."]);
    rows.push(&["c@example.com", "Dr."]);
    let s = sample(&["email", "title"], &rows);
    assert!(matches!(
        &columns::roles(&s)[1],
        Role::Attribute { kind: AttrType::Gender, gender_map, .. } if gender_map == &vec![("Dr.".to_string(), String::new())]
    ));
    let marks = sample(
        &["email", "vip"],
        &[&["a@example.com", "x"], &["b@example.com", "x"]],
    );
    assert!(!matches!(
        &columns::roles(&marks)[1],
        Role::Attribute {
            kind: AttrType::Gender,
            ..
        }
    ));
}

#[test]
fn named_columns_go_to_their_global_attributes() {
    let s = sample(
        &["email", "Vorname", "PLZ"],
        &[&["a@example.com", "Anna", "01067"]],
    );
    let roles = columns::roles(&s);
    assert!(matches!(
        roles[1],
        Role::Named {
            target: Target::Global("firstname", _),
            ..
        }
    ));
    assert!(matches!(
        roles[2],
        Role::Named {
            target: Target::Global("zip", _),
            ..
        }
    ));
}

#[test]
fn iso_dates_need_no_format() {
    assert_eq!(
        dates::detect(&["2024-03-01", "2024-03-02 10:00:00"]),
        Some(DateFormat::Iso)
    );
    assert_eq!(
        dates::detect(&["2023-03-24 10:23:10 UTC"]),
        Some(DateFormat::Iso)
    );
}

#[test]
fn german_dates_get_their_format() {
    assert_eq!(
        dates::detect(&["01.02.2024", "31.12.2023"]),
        Some(DateFormat::One("%d.%m.%Y"))
    );
}

#[test]
fn one_day_over_twelve_settles_day_first() {
    assert_eq!(
        dates::detect(&["03/04/2025", "25/04/2025"]),
        Some(DateFormat::One("%d/%m/%Y"))
    );
}

#[test]
fn day_first_and_month_first_both_fitting_are_left_to_the_user_with_both_readings() {
    let d = dates::detect(&["03/04/2025", "05/06/2025"]).unwrap();
    assert_eq!(
        d,
        DateFormat::Ambiguous {
            formats: vec!["%d/%m/%Y", "%m/%d/%Y"],
            example: "03/04/2025".into()
        }
    );
    assert_eq!(
        render::ambiguity_comment("Signup", Some(&d)).unwrap(),
        "DECIDE: \"Signup\" reads day first and month first alike: \"03/04/2025\" is 2025-04-03 with %d/%m/%Y, 2025-03-04 with %m/%d/%Y. Put your export's format first and set ambiguous = \"first\"; until then such values are left out (ambiguous = \"omit\"): the rows are imported without them, and `check` and `run` count them."
    );
}

#[test]
fn ids_are_not_taken_for_unix_times() {
    assert_eq!(dates::detect(&["98938", "12849"]), None);
}

#[test]
fn a_newsletter_flag_activates_only_the_rows_it_marks() {
    let s = sample(
        &["email", "newsletter"],
        &[&["a@example.com", "1"], &["b@example.com", "0"]],
    );
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    let a = c.activated.unwrap();
    assert_eq!(a.when, When::Now);
    assert_eq!(
        a.any,
        vec![Test {
            column: "newsletter".into(),
            equals: true,
            values: vec!["1".into()]
        }]
    );
    assert!(c.deactivated.is_none());
    assert!(c.decide.is_empty());
}

#[test]
fn a_flag_whose_rows_all_say_no_activates_the_rows_marked_yes_only() {
    let s = sample(&["email", "newsletter"], &[&["a@example.com", "0"]]);
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    assert_eq!(c.activated.unwrap().any[0].values, vec!["1".to_string()]);
}

#[test]
fn a_status_of_unknown_values_activates_nobody_and_says_what_to_decide() {
    let s = sample(
        &["email", "status"],
        &[&["a@example.com", "gold"], &["b@example.com", "silver"]],
    );
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    assert!(c.activated.is_none());
    assert_eq!(
        c.comments[0],
        "\"status\" looks like consent; its values: \"gold\", \"silver\"."
    );
    assert!(
        c.decide[0]
            .text
            .starts_with("which values of \"status\" mean the person subscribed")
    );
}

#[test]
fn without_a_consent_column_nobody_is_activated() {
    let s = sample(&["email"], &[&["a@example.com"]]);
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    assert!(c.activated.is_none() && c.deactivated.is_none());
    assert_eq!(c.decide.len(), 1);
}

#[test]
fn a_withdrawal_date_deactivates_and_keeps_its_rows_from_activation() {
    let s = sample(
        &["email", "status", "unsubscribed_at"],
        &[
            &["a@example.com", "active", ""],
            &["b@example.com", "unsubscribed", "2024-05-01"],
        ],
    );
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    assert_eq!(
        render::state(&c.activated.unwrap()),
        r#"{ value = "now", only_if = [{ column = "status", equals = "active" }, { column = "unsubscribed_at", equals = "" }] }"#
    );
    assert_eq!(
        render::state(&c.deactivated.unwrap()),
        // A row unsubscribed by its status but without a date is deactivated at the run's
        // time (issue 55: opt-out evidence is taken whenever it is clear).
        r#"{ column = "unsubscribed_at", default = "now", only_if = { any = [{ column = "status", equals = "unsubscribed" }, { column = "unsubscribed_at", not_equals = "" }] } }"#
    );
}

#[test]
fn an_unsubscribed_flag_deactivates_its_yes_rows() {
    let s = sample(
        &["email", "Unsubscribed from all email"],
        &[&["a@example.com", "true"], &["b@example.com", "false"]],
    );
    let roles = columns::roles(&s);
    assert_eq!(roles[1], Role::WithdrawalFlag);
    let c = consent::decide(&s, &roles, None, &mut NoQuestions);
    assert_eq!(
        c.deactivated.unwrap().any[0].values,
        vec!["true".to_string()]
    );
}

#[test]
fn placeholders_for_nothing_are_found_and_not_taken_for_values() {
    let s = sample(
        &["email", "Birthday"],
        &[&["a@example.com", "N/A"], &["b@example.com", "01.02.1990"]],
    );
    assert_eq!(s.placeholders(), vec!["N/A".to_string()]);
    assert!(matches!(
        &columns::roles(&s)[1],
        Role::Named {
            target: Target::Global("birthday", AttrType::Date),
            date: Some(DateFormat::One("%d.%m.%Y")),
            ..
        }
    ));
}

#[test]
fn order_columns_make_the_rows_order_lines() {
    let s = sample(
        &["email", "Order ID", "Product", "Price"],
        &[&["a@example.com", "1001", "Mug", "9,90"]],
    );
    let roles = columns::roles(&s);
    assert!(matches!(
        roles[1],
        Role::Order {
            field: "order_id",
            ..
        }
    ));
    assert!(matches!(
        roles[3],
        Role::Order {
            field: "price",
            decimal_comma: true,
            ..
        }
    ));
}

#[test]
fn an_orders_totals_and_shipping_are_not_the_persons_attributes() {
    let s = sample(
        &[
            "email",
            "orderId",
            "invoiceAmount",
            "invoiceShipping",
            "paymentStatus",
            "billingCity",
        ],
        &[&["a@example.com", "15", "998.56", "3.90", "open", "Berlin"]],
    );
    let roles = columns::roles(&s);
    assert_eq!(roles[3], Role::OrderDetail);
    assert_eq!(roles[4], Role::OrderDetail);
    assert!(matches!(
        roles[5],
        Role::Named {
            target: Target::Global("city", _),
            ..
        }
    ));
}

#[test]
fn attribute_names_follow_other_columns_spelling() {
    assert_eq!(columns::attribute_name("ZIP Code"), "zip_code");
    assert_eq!(
        columns::attribute_name("Subscription Date (Substack)"),
        "subscription_date_substack"
    );
}

#[test]
fn keys_are_quoted_only_when_they_must_be() {
    assert_eq!(render::key("zip_code"), "zip_code");
    assert_eq!(render::key("Dr."), "\"Dr.\"");
}

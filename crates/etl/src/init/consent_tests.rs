//! Consent from evidence, one test per rule: what grants email consent (subscription words
//! in the service's languages; a yes/no column named for email, newsletter or marketing
//! consent), what never does (a record's or account's state, paid plans, other channels,
//! partners, scores, orders), opt-outs, and the questions asked where the file does not say.

use super::ask::{Answer, Answers, NoQuestions};
use super::columns::{self, Role};
use super::consent::{self, Consent, Reading, Test, When};
use super::render;
use super::tests::sample;

fn decide(columns: &[&str], rows: &[&[&str]]) -> Consent {
    let s = sample(columns, rows);
    consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions)
}

fn activated(c: &Consent) -> String {
    c.activated.as_ref().map(render::state).unwrap_or_default()
}

fn deactivated(c: &Consent) -> String {
    c.deactivated
        .as_ref()
        .map(render::state)
        .unwrap_or_default()
}

#[test]
fn an_account_status_is_never_consent_and_is_asked_with_its_counts() {
    // Zoho Books contacts: `Status` is the customer record's.
    let c = decide(
        &["EmailID", "Status"],
        &[
            &["a@example.com", "Active"],
            &["b@example.com", "Active"],
            &["c@example.com", "Inactive"],
        ],
    );
    assert!(c.activated.is_none() && c.deactivated.is_none());
    assert_eq!(c.decide.len(), 1);
    assert!(
        c.decide[0]
            .text
            .starts_with("is \"Status\" (Active 2, Inactive 1) consent to receive email?"),
        "{:?}",
        c.decide
    );
    assert_eq!(
        c.decide[0].lines,
        vec![
            r#"activated = { value = "now", only_if = { column = "Status", equals = "Active" } }"#,
            r#"deactivated = { value = "now", only_if = { column = "Status", equals = "Inactive" } }"#,
        ]
    );
}

#[test]
fn an_account_status_answered_as_consent_activates_its_active_rows() {
    let s = sample(
        &["email", "Status"],
        &[&["a@example.com", "Active"], &["b@example.com", "Inactive"]],
    );
    let mut answers = Answers([Answer::Yes(true)].into());
    let c = consent::decide(&s, &columns::roles(&s), None, &mut answers);
    assert_eq!(
        activated(&c),
        r#"{ value = "now", only_if = { column = "Status", equals = "Active" } }"#
    );
    assert!(c.decide.is_empty());
    assert!(c.comments.iter().any(|l| l.contains("answered at init")));
}

#[test]
fn an_active_status_in_a_file_that_records_unsubscribes_is_the_subscriptions() {
    // beehiiv: `status` active/inactive/pending beside `unsubscribed_at`.
    let c = decide(
        &["email", "status", "unsubscribed_at"],
        &[
            &["a@example.com", "active", ""],
            &["b@example.com", "inactive", ""],
            &["c@example.com", "pending", ""],
            &["d@example.com", "active", "2024-03-13 11:33:53 UTC"],
        ],
    );
    assert!(activated(&c).contains(r#"{ column = "status", equals = "active" }"#));
    assert!(deactivated(&c).contains(r#"{ column = "status", equals = "inactive" }"#));
    // d@ says active but unsubscribed: the opt-out wins, counted and said.
    assert!(
        c.summary
            .iter()
            .any(|l| l.contains("1 row(s) marked subscribed also record an opt-out")),
        "{:?}",
        c.summary
    );
    assert!(
        c.summary
            .contains(&"consent of the 4 rows read: 1 active, 2 deactivated, 1 registered".into()),
        "{:?}",
        c.summary
    );
}

#[test]
fn subscription_words_are_consent_whatever_the_header_in_every_language() {
    for (yes, no) in [
        ("subscribed", "unsubscribed"),
        ("Abonniert", "Abgemeldet"),
        ("abonné", "désabonné"),
        ("suscrito", "dado de baja"),
        ("iscritto", "disiscritto"),
        ("ingeschreven", "uitgeschreven"),
    ] {
        let c = decide(
            &["email", "List status"],
            &[&["a@example.com", yes], &["b@example.com", no]],
        );
        assert_eq!(
            activated(&c),
            format!(
                r#"{{ value = "now", only_if = {{ column = "List status", equals = "{yes}" }} }}"#
            ),
            "{yes}"
        );
        assert_eq!(
            deactivated(&c),
            format!(
                r#"{{ value = "now", only_if = {{ column = "List status", equals = "{no}" }} }}"#
            ),
            "{no}"
        );
    }
}

#[test]
fn pending_and_unconfirmed_stay_registered_and_cleaned_and_bounced_deactivate() {
    let c = decide(
        &["email", "status"],
        &[
            &["a@example.com", "subscribed"],
            &["b@example.com", "pending"],
            &["c@example.com", "cleaned"],
            &["d@example.com", "bounced"],
            &["e@example.com", "unconfirmed"],
        ],
    );
    assert!(activated(&c).contains(r#"equals = "subscribed""#));
    assert!(deactivated(&c).contains(r#"equals = ["cleaned", "bounced"]"#));
    assert!(
        c.summary
            .contains(&"consent of the 5 rows read: 1 active, 2 deactivated, 2 registered".into())
    );
}

#[test]
fn two_status_columns_grant_only_where_neither_says_otherwise() {
    // MailPoet: `List status` subscribed beside `Global status` unconfirmed is no consent.
    let c = decide(
        &["email", "List status", "Global status"],
        &[
            &["a@example.com", "subscribed", "subscribed"],
            &["b@example.com", "subscribed", "unconfirmed"],
        ],
    );
    let a = c.activated.clone().unwrap();
    assert!(a.all.contains(&Test {
        column: "Global status".into(),
        equals: true,
        values: vec!["subscribed".into(), String::new()],
    }));
    assert!(
        c.summary
            .contains(&"consent of the 2 rows read: 1 active, 0 deactivated, 1 registered".into()),
        "{:?}",
        c.summary
    );
}

#[test]
fn a_yes_no_column_named_for_email_or_newsletter_consent_grants() {
    for header in [
        "Newsletter",
        "Accepts Email Marketing",
        "subscribed_to_emails",
        "email_opt_in",
        "Marketing-E-Mails erlaubt",
        "Mailing list",
    ] {
        let c = decide(
            &["email", header],
            &[&["a@example.com", "yes"], &["b@example.com", "no"]],
        );
        assert_eq!(
            activated(&c),
            format!(r#"{{ value = "now", only_if = {{ column = "{header}", equals = "yes" }} }}"#),
            "{header}"
        );
        assert!(
            c.deactivated.is_none(),
            "a no is registered, not an opt-out"
        );
    }
}

#[test]
fn yes_and_no_are_read_as_people_write_them() {
    for (yes, no) in [
        ("1", "0"),
        ("Y", "N"),
        ("TRUE", "FALSE"),
        ("ja", "nein"),
        ("oui", "non"),
        ("x", ""),
    ] {
        let c = decide(
            &["email", "newsletter"],
            &[&["a@example.com", yes], &["b@example.com", no]],
        );
        assert_eq!(
            c.activated.unwrap().any[0].values,
            vec![yes.to_string()],
            "{yes}"
        );
    }
}

#[test]
fn a_bare_consent_column_is_the_email_consent_only_when_no_column_names_email() {
    // Open Source POS: `Consent` alone.
    let c = decide(&["email", "Consent"], &[&["a@example.com", "y"]]);
    assert!(activated(&c).contains(r#"{ column = "Consent", equals = "y" }"#));
    // PrestaShop: `Opt-in` (partner offers) beside `Newsletter`.
    let s = sample(
        &["Email", "Newsletter", "Opt-in"],
        &[&["a@example.com", "0", "1"], &["b@example.com", "1", "1"]],
    );
    let roles = columns::roles(&s);
    assert_eq!(
        roles[2],
        Role::Consent(Reading::Superseded {
            by: "Newsletter".into()
        })
    );
    let c = consent::decide(&s, &roles, None, &mut NoQuestions);
    assert_eq!(
        activated(&c),
        r#"{ value = "now", only_if = { column = "Newsletter", equals = "1" } }"#
    );
}

#[test]
fn other_channels_partners_plans_scores_and_orders_are_never_consent() {
    for header in [
        "Accepts SMS Marketing",
        "Phone opt-in",
        "Postal consent",
        "Partner offers",
        "Third party consent",
        "active_subscription",
        "plan",
        "Free Tier",
        "Financial Status",
        "Lifecycle Stage",
        "Lead Status",
        "email_verified",
        "Activated",
        "VIP",
        "GDPR consent",
        "Datenschutz akzeptiert",
        "Accepts Terms",
    ] {
        let c = decide(
            &["email", header],
            &[&["a@example.com", "true"], &["b@example.com", "false"]],
        );
        assert!(c.activated.is_none(), "{header}: {:?}", c.activated);
        assert!(c.deactivated.is_none(), "{header}");
    }
    // WooCommerce subscriptions: `wc-active` is a paid plan's state, not understood as consent.
    let c = decide(
        &["email", "subscription_status"],
        &[&["a@example.com", "wc-active"]],
    );
    assert!(c.activated.is_none());
}

#[test]
fn a_paid_plan_beside_email_disabled_is_ignored_and_email_disabled_decides() {
    // Substack: `active_subscription` is the paid plan; `email_disabled = false` receives.
    let c = decide(
        &["email", "active_subscription", "email_disabled"],
        &[
            &["a@example.com", "true", "false"],
            &["b@example.com", "false", "false"],
            &["c@example.com", "false", "true"],
        ],
    );
    assert_eq!(
        activated(&c),
        r#"{ value = "now", only_if = { column = "email_disabled", equals = "false" } }"#
    );
    assert_eq!(
        deactivated(&c),
        r#"{ value = "now", only_if = { column = "email_disabled", equals = "true" } }"#
    );
}

#[test]
fn opt_out_flags_deactivate_and_win_over_a_grant_on_the_same_row() {
    for header in [
        "Email Opt Out",
        "doNotEmail",
        "HasOptedOutOfEmail",
        "blacklisted",
        "Bounced",
    ] {
        let c = decide(
            &["email", "newsletter", header],
            &[
                &["a@example.com", "1", "0"],
                &["b@example.com", "1", "1"],
                &["c@example.com", "0", "1"],
            ],
        );
        assert!(
            activated(&c).contains(&format!(r#"{{ column = "{header}", not_equals = "1" }}"#)),
            "{header}: {}",
            activated(&c)
        );
        assert!(deactivated(&c).contains(&format!(r#"{{ column = "{header}", equals = "1" }}"#)));
        assert!(
            c.summary.contains(
                &"consent of the 3 rows read: 1 active, 2 deactivated, 0 registered".into()
            ),
            "{header}: {:?}",
            c.summary
        );
    }
    // `doNotCall` is the phone's: nothing.
    let c = decide(&["email", "doNotCall"], &[&["a@example.com", "1"]]);
    assert!(c.deactivated.is_none());
}

#[test]
fn a_grant_without_a_date_is_activated_at_the_signup_date_else_at_the_run() {
    // Ghost: `subscribed_to_emails` true, `created_at` empty on some rows.
    let s = sample(
        &["email", "subscribed_to_emails", "created_at"],
        &[
            &["a@example.com", "true", "2021-03-01 10:00:00"],
            &["b@example.com", "true", "2021-03-02 10:00:00"],
        ],
    );
    let roles = columns::roles(&s);
    let registered = Some(("created_at".to_string(), super::dates::DateFormat::Iso));
    let c = consent::decide(&s, &roles, registered, &mut NoQuestions);
    assert_eq!(
        c.activated.as_ref().unwrap().when,
        When::Columns {
            columns: vec!["created_at".into()],
            format: Some(super::dates::DateFormat::Iso),
            or_now: true
        }
    );
    assert_eq!(
        activated(&c),
        r#"{ column = "created_at", default = "now", only_if = { column = "subscribed_to_emails", equals = "true" } }"#
    );
}

#[test]
fn values_a_consent_column_holds_that_init_does_not_know_are_asked_for() {
    let s = sample(
        &["email", "Consent"],
        &[&["a@example.com", "Form"], &["b@example.com", "Import"]],
    );
    let c = consent::decide(&s, &columns::roles(&s), None, &mut NoQuestions);
    assert!(c.activated.is_none());
    assert!(
        c.decide[0]
            .text
            .contains("(Form 1, Import 1 are not understood)")
    );
    let mut answers = Answers([Answer::Many(vec![0])].into());
    let c = consent::decide(&s, &columns::roles(&s), None, &mut answers);
    assert_eq!(
        activated(&c),
        r#"{ value = "now", only_if = { column = "Consent", equals = "Form" } }"#
    );
}

#[test]
fn a_file_without_consent_is_asked_whether_everyone_opted_in() {
    let s = sample(&["email"], &[&["a@example.com"]]);
    let mut answers = Answers([Answer::Yes(true)].into());
    let c = consent::decide(&s, &columns::roles(&s), None, &mut answers);
    assert_eq!(activated(&c), r#"{ value = "now" }"#);
    let mut answers = Answers([Answer::Yes(false)].into());
    let c = consent::decide(&s, &columns::roles(&s), None, &mut answers);
    assert!(c.activated.is_none() && c.decide.is_empty());
}

#[test]
fn status_words_are_read_with_underscores_and_case_as_tools_write_them() {
    // Klaviyo: `Email Marketing Consent` = SUBSCRIBED / NEVER_SUBSCRIBED / UNSUBSCRIBED.
    let c = decide(
        &["Email", "Email Marketing Consent"],
        &[
            &["a@example.com", "SUBSCRIBED"],
            &["b@example.com", "NEVER_SUBSCRIBED"],
            &["c@example.com", "UNSUBSCRIBED"],
        ],
    );
    assert!(
        activated(&c).contains(r#"equals = "SUBSCRIBED""#),
        "{}",
        activated(&c)
    );
    assert!(deactivated(&c).contains(r#"equals = "UNSUBSCRIBED""#));
    assert!(
        c.summary
            .contains(&"consent of the 3 rows read: 1 active, 1 deactivated, 1 registered".into())
    );
}

#[test]
fn any_value_of_an_opt_out_column_but_a_no_deactivates() {
    // Mautic's `Do Not Contact` holds the reason.
    let c = decide(
        &["email", "Do Not Contact", "Blacklist"],
        &[
            &["a@example.com", "Unsubscribed (email)", "False"],
            &["b@example.com", "", "True"],
            &["c@example.com", "", "False"],
        ],
    );
    assert_eq!(
        deactivated(&c),
        r#"{ value = "now", only_if = { any = [{ column = "Do Not Contact", equals = "Unsubscribed (email)" }, { column = "Blacklist", equals = "True" }] } }"#
    );
    assert!(c.activated.is_none());
}

#[test]
fn a_date_under_a_consent_header_is_the_opt_in_time() {
    let s = sample(
        &["email", "Double Opt-In"],
        &[
            &["a@example.com", "2024-01-02 10:00:00"],
            &["b@example.com", ""],
        ],
    );
    let roles = columns::roles(&s);
    assert!(matches!(roles[1], Role::ConsentTime(_)), "{roles:?}");
    let c = consent::decide(&s, &roles, None, &mut NoQuestions);
    assert_eq!(activated(&c), r#"{ column = "Double Opt-In" }"#);
}

#[test]
fn a_us_state_column_is_an_address_not_a_question() {
    let c = decide(
        &["email", "State"],
        &[&["a@example.com", "NY"], &["b@example.com", "CA"]],
    );
    assert!(
        c.decide.iter().all(|d| !d.text.contains("\"State\"")),
        "{:?}",
        c.decide
    );
}

//! Filters (segments) and the rule engine, spec §2.9 and §4.7.

use listpipe_api::filter::{FilterInput, Rule, RuntimeFilter};
use listpipe_api::{AttributeInput, AttributeType, Group, ReceiverInput, ReceiverQuery};
use listpipe_testkit::TestServer;
use std::collections::BTreeMap;

fn rule(field: &str, logic: &str, condition: &str) -> Rule {
    Rule {
        field: field.into(),
        logic: logic.into(),
        condition: condition.into(),
    }
}

fn attrs(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// Three receivers with attributes, tags, timestamps and an event.
async fn fixture(t: &TestServer) -> Group {
    let g = t.group("News").await;
    let c = &t.client;
    for (name, kind) in [
        ("firstname", AttributeType::Text),
        ("birthday", AttributeType::Date),
        ("salutation", AttributeType::Gender),
        ("size", AttributeType::Text),
    ] {
        c.create_attribute(&AttributeInput::new(name, kind))
            .await
            .unwrap();
    }
    // The group's own `size` is a number and is favoured over the global text one.
    c.create_group_attribute(g.id, &AttributeInput::new("size", AttributeType::Number))
        .await
        .unwrap();
    let a = ReceiverInput {
        activated: Some(1_600_000_000),
        points: Some(10),
        source: Some("shop".into()),
        tags: Some(vec!["vip".into()]),
        global_attributes: attrs(&[
            ("firstname", "Anna"),
            ("birthday", "1990-05-01"),
            ("salutation", "Frau"),
        ]),
        attributes: attrs(&[("size", "38")]),
        ..ReceiverInput::email("a@example.com")
    };
    let b = ReceiverInput {
        activated: Some(1_700_000_000),
        points: Some(3),
        source: Some("crm".into()),
        global_attributes: attrs(&[
            ("firstname", "Ben"),
            ("birthday", "1985-12-24"),
            ("salutation", "Herr"),
        ]),
        attributes: attrs(&[("size", "100")]),
        ..ReceiverInput::email("b@example.com")
    };
    let cc = ReceiverInput {
        registered: Some(1_750_000_000),
        global_attributes: attrs(&[("salutation", "m")]),
        attributes: attrs(&[("size", "9")]),
        ..ReceiverInput::email("c@other.org")
    };
    for r in [a, b, cc] {
        c.create_receiver(g.id, &r).await.unwrap();
    }
    let store = t.server.as_ref().unwrap().store.clone();
    store
        .write(|conn| {
            listpipe_server::store::events::record(
                conn,
                listpipe_server::store::AccountId(1),
                "b@example.com",
                "open",
                "m1",
                1_700_000_100,
                "",
            )
        })
        .await
        .unwrap();
    g
}

async fn selected(t: &TestServer, g: &Group, rules: Vec<Rule>, operator: &str) -> Vec<String> {
    let f = RuntimeFilter {
        rules: Some(rules),
        groups: Some(vec![g.id.to_string()]),
        operator: Some(operator.into()),
        orderby: Some("email asc".into()),
        ..Default::default()
    };
    t.client
        .runtime_filter(&f)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.email)
        .collect()
}

#[tokio::test]
async fn every_logic_value_selects_what_the_spec_says() {
    let t = TestServer::start().await;
    let g = fixture(&t).await;
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("email", "eq", "A@example.com", &["a@example.com"]),
        (
            "email",
            "neq",
            "a@example.com",
            &["b@example.com", "c@other.org"],
        ),
        (
            "email",
            "contains",
            "example.com",
            &["a@example.com", "b@example.com"],
        ),
        ("email", "begins", "b@", &["b@example.com"]),
        ("email", "ends", ".org", &["c@other.org"]),
        ("firstname", "eq", "anna", &["a@example.com"]),
        ("FirstName", "isnull", "", &["c@other.org"]),
        (
            "firstname",
            "notisnull",
            "",
            &["a@example.com", "b@example.com"],
        ),
        // Numbers compare as numbers ("100" > "20"), and the group's `size` is the number one.
        ("size", "bg", "20", &["a@example.com", "b@example.com"]),
        ("size", "sm", "20", &["c@other.org"]),
        ("points", "sm", "5", &["b@example.com", "c@other.org"]),
        (
            "registered",
            "bg",
            "1650000000",
            &["b@example.com", "c@other.org"],
        ),
        (
            "registered",
            "bg",
            "2022-04-15",
            &["b@example.com", "c@other.org"],
        ),
        ("activated", "isnull", "", &["c@other.org"]),
        ("birthday", "sm", "1988-01-01", &["b@example.com"]),
        (
            "salutation",
            "ismale",
            "",
            &["b@example.com", "c@other.org"],
        ),
        ("salutation", "isfemale", "", &["a@example.com"]),
        ("source", "eq", "SHOP", &["a@example.com"]),
        ("tags", "contains", "vip", &["a@example.com"]),
        ("tags", "isnull", "", &["b@example.com", "c@other.org"]),
        ("svcevent_mail_open", "EQ", "m1", &["b@example.com"]),
        ("svcevent_mail_click", "eq", "m1", &[]),
    ];
    for (field, logic, condition, expected) in cases {
        let got = selected(&t, &g, vec![rule(field, logic, condition)], "AND").await;
        assert_eq!(got, *expected, "{field} {logic} {condition}");
    }
    let either = vec![
        rule("email", "eq", "a@example.com"),
        rule("source", "eq", "crm"),
    ];
    assert_eq!(
        selected(&t, &g, either.clone(), "OR").await,
        ["a@example.com", "b@example.com"]
    );
    assert!(selected(&t, &g, either, "AND").await.is_empty());
}

#[tokio::test]
async fn bad_rules_are_400s_naming_the_valid_choices() {
    let t = TestServer::start().await;
    let g = fixture(&t).await;
    let f = |rules| FilterInput {
        name: Some("x".into()),
        rules: Some(rules),
        operator: None,
    };
    let err = t
        .client
        .create_filter(g.id, &f(vec![rule("email", "like", "a")]))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "eq, neq, sm, bg, isnull, notisnull, contains, begins, ends, ismale, isfemale"
        ),
        "{err}"
    );
    let err = t
        .client
        .create_filter(g.id, &f(vec![rule("shoe", "eq", "a")]))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string().contains("unknown field \"shoe\"") && err.to_string().contains("firstname"),
        "{err}"
    );
    let err = t
        .client
        .create_filter(g.id, &f(vec![rule("points", "bg", "many")]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a number"), "{err}");
    assert_eq!(
        t.client
            .create_filter(
                g.id,
                &FilterInput {
                    name: Some("x".into()),
                    ..Default::default()
                }
            )
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
    assert_eq!(
        t.client
            .create_filter(
                g.id,
                &FilterInput {
                    rules: Some(vec![rule("email", "eq", "a")]),
                    ..Default::default()
                }
            )
            .await
            .unwrap_err()
            .status(),
        Some(400)
    );
}

#[tokio::test]
async fn saved_filters_support_all_nine_operations() {
    let t = TestServer::start().await;
    let g = fixture(&t).await;
    let c = &t.client;
    let input = FilterInput {
        name: Some("buyers".into()),
        rules: Some(vec![rule("email", "contains", "example.com")]),
        operator: None,
    };
    let f = c.create_filter(g.id, &input).await.unwrap();
    assert_eq!((f.name.as_str(), f.operator.as_str()), ("buyers", "AND"));
    assert_eq!(c.filters(g.id).await.unwrap(), vec![f.clone()]);
    assert_eq!(c.filter(g.id, f.id).await.unwrap(), f);
    assert_eq!(c.filter_count(g.id, f.id).await.unwrap(), 2);
    let stats = c.filter_stats(g.id, f.id).await.unwrap();
    assert_eq!((stats.total_count, stats.active_count), (2, 2));
    let page = c
        .filter_receivers(
            g.id,
            f.id,
            &ReceiverQuery {
                pagesize: Some(1),
                page: Some(1),
                order_by: Some("email asc".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.iter().map(|r| r.email.as_str()).collect::<Vec<_>>(),
        ["b@example.com"]
    );
    assert_eq!(page[0].attributes["size"], "100");

    let change = FilterInput {
        rules: Some(vec![rule("email", "ends", ".org")]),
        ..Default::default()
    };
    assert!(c.update_filter(g.id, f.id, &change).await.unwrap());
    assert_eq!(c.filter(g.id, f.id).await.unwrap().name, "buyers");
    assert_eq!(c.filter_count(g.id, f.id).await.unwrap(), 1);
    let inactive = ReceiverQuery {
        kind: Some("inactive".into()),
        ..Default::default()
    };
    assert_eq!(
        c.filter_receivers(g.id, f.id, &inactive)
            .await
            .unwrap()
            .len(),
        1
    );

    let other = t.group("Other").await;
    assert_eq!(
        c.filter(other.id, f.id).await.unwrap_err().status(),
        Some(404)
    );
    assert!(c.delete_filter(g.id, f.id).await.unwrap());
    assert_eq!(c.filter(g.id, f.id).await.unwrap_err().status(), Some(404));
}

#[tokio::test]
async fn the_runtime_filter_spans_groups_and_honours_activeonly_and_paging() {
    let t = TestServer::start().await;
    let g = fixture(&t).await;
    let other = t.group("Other").await;
    t.client
        .create_receiver(other.id, &ReceiverInput::email("d@example.com"))
        .await
        .unwrap();
    let all = RuntimeFilter {
        rules: Some(vec![rule("email", "notisnull", "")]),
        orderby: Some("email desc".into()),
        ..Default::default()
    };
    let emails: Vec<String> = t
        .client
        .runtime_filter(&all)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.email)
        .collect();
    assert_eq!(
        emails,
        [
            "d@example.com",
            "c@other.org",
            "b@example.com",
            "a@example.com"
        ]
    );
    let active = RuntimeFilter {
        activeonly: Some(true),
        groups: Some(vec![g.id.to_string()]),
        ..all.clone()
    };
    assert_eq!(t.client.runtime_filter(&active).await.unwrap().len(), 2);
    let paged = RuntimeFilter {
        pagesize: Some(3),
        page: Some(1),
        ..all.clone()
    };
    assert_eq!(t.client.runtime_filter(&paged).await.unwrap().len(), 1);
    let unknown = RuntimeFilter {
        groups: Some(vec!["999".into()]),
        ..all
    };
    assert_eq!(
        t.client
            .runtime_filter(&unknown)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn events_load_from_a_fixtures_file() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    let text = "{\"email\": \"a@example.com\", \"mailing_id\": \"m7\", \"type\": \"click\"}\n{\"email\": \"nobody@example.com\", \"mailing_id\": \"m7\", \"type\": \"open\"}\nnot json\n";
    let store = t.server.as_ref().unwrap().store.clone();
    let loaded = store
        .write(move |c| listpipe_server::store::events::load(c, text))
        .await
        .unwrap();
    assert_eq!(loaded.events, 1);
    assert_eq!(loaded.skipped.len(), 2);
    assert_eq!(
        selected(&t, &g, vec![rule("svcevent_mail_click", "eq", "m7")], "AND").await,
        ["a@example.com"]
    );
    let r = t
        .client
        .group_receiver(g.id, "a@example.com", listpipe_api::detail::EVENTS)
        .await
        .unwrap();
    assert_eq!(r.events.unwrap()[0].mailing_id, "m7");
}

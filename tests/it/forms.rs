//! Forms (spec §2.10, §4.5): all 7 operations, the embed code and its
//! public sign-up, double-opt-in mails in the outbox, and their links.

use crate::support::TestServer;
use listpipe::api::form::{DoiData, FormCodeQuery, FormExtraData, FormSendInput, OutboxQuery};
use listpipe::api::{
    AttributeInput, AttributeType, Group, Id, Receiver, ReceiverInput, ReceiverQuery,
};
use listpipe::client::ApiClient;
use listpipe::server::store::db::params;

fn named(name: &str) -> FormExtraData {
    FormExtraData {
        name: Some(name.into()),
        title: None,
    }
}

fn send_input(email: &str) -> FormSendInput {
    FormSendInput {
        email: Some(email.into()),
        doidata: Some(DoiData {
            user_ip: "203.0.113.7".into(),
            referer: "https://shop.example/signup".into(),
            user_agent: "Mozilla/5.0".into(),
        }),
        groups_id: None,
    }
}

async fn emails_of(c: &ApiClient, g: &Group, kind: &str) -> Vec<String> {
    let q = ReceiverQuery {
        kind: Some(kind.into()),
        ..Default::default()
    };
    c.receivers(g.id, &q)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.email)
        .collect()
}

async fn receiver(c: &ApiClient, g: &Group, email: &str) -> Receiver {
    c.group_receiver(g.id, email, 0).await.unwrap()
}

/// Follows a link like a browser: (status, page text).
async fn visit(link: &str) -> (u16, String) {
    listpipe::client::init_tls();
    let res = reqwest::get(link).await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

/// The newest mail of the outbox, which must be to `email`.
async fn last_mail_link(c: &ApiClient, email: &str) -> String {
    let mails = c.outbox(&OutboxQuery::default()).await.unwrap();
    let mail = mails.first().expect("a mail in the outbox");
    assert_eq!(mail.to, email);
    assert!(mail.text.contains(&mail.link), "{}", mail.text);
    mail.link.clone()
}

#[tokio::test]
async fn forms_can_be_created_from_the_template_read_listed_and_deleted() {
    let t = TestServer::start().await;
    let (news, shop) = (t.group("News").await, t.group("Shop").await);
    let c = &t.client;
    let f = c
        .create_form_from_template(news.id, "default", &named("Newsletter"))
        .await
        .unwrap();
    assert_eq!(
        (f.name.as_str(), f.customer_tables_id, f.template.as_str()),
        ("Newsletter", news.id, "default")
    );
    let g = c
        .create_form_from_template(shop.id, "default", &named("Shop"))
        .await
        .unwrap();
    assert_eq!(c.form(f.id).await.unwrap(), f);
    assert_eq!(c.forms().await.unwrap(), vec![f.clone(), g.clone()]);
    assert_eq!(c.group_forms(news.id).await.unwrap(), vec![f.clone()]);

    assert!(c.delete_form(f.id).await.unwrap());
    assert_eq!(c.form(f.id).await.unwrap_err().status(), Some(404));
    assert_eq!(c.delete_form(f.id).await.unwrap_err().status(), Some(404));
    assert_eq!(c.forms().await.unwrap(), vec![g]);
    assert!(c.group_forms(news.id).await.unwrap().is_empty());

    // Deleting a group takes its forms with it.
    c.delete_group(shop.id).await.unwrap();
    assert!(c.forms().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_form_without_a_name_is_named_by_its_title_and_without_either_is_a_400() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let titled = FormExtraData {
        name: None,
        title: Some("Join us".into()),
    };
    let f = c
        .create_form_from_template(g.id, "default", &titled)
        .await
        .unwrap();
    assert_eq!((f.name.as_str(), f.title.as_str()), ("Join us", "Join us"));

    let blank = FormExtraData {
        name: Some("  ".into()),
        title: None,
    };
    for extra in [FormExtraData::default(), blank] {
        let err = c
            .create_form_from_template(g.id, "default", &extra)
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(400), "{err}");
        assert!(err.to_string().contains("a name or a title"), "{err}");
    }
    // No extradata at all.
    let (http, base, token) = t.raw();
    let res = http
        .post(format!(
            "{base}/v3/forms/{}/createfromtemplate/default",
            g.id
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);

    let err = c
        .create_form_from_template(g.id, "fancy", &named("x"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string()
            .contains("unknown form template \"fancy\"; the only template is: default"),
        "{err}"
    );
    let err = c
        .create_form_from_template(Id(999_999), "default", &named("x"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}

#[tokio::test]
async fn another_accounts_form_and_group_are_not_found() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let f = t
        .client
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    t.client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    let other = t.other_tenant("acme").await;
    let statuses = [
        other.form(f.id).await.map(|_| ()),
        other.delete_form(f.id).await.map(|_| ()),
        other.group_forms(g.id).await.map(|_| ()),
        other
            .form_code(f.id, &FormCodeQuery::default())
            .await
            .map(|_| ()),
        other
            .create_form_from_template(g.id, "default", &named("Mine"))
            .await
            .map(|_| ()),
        other
            .send_form_mail(f.id, "activate", &send_input("a@example.com"))
            .await
            .map(|_| ()),
    ]
    .map(|r| r.unwrap_err().status());
    assert_eq!(statuses, [Some(404); 6]);
    assert!(other.forms().await.unwrap().is_empty());
    assert_eq!(t.client.forms().await.unwrap(), vec![f]);
}

#[tokio::test]
async fn the_embed_code_is_a_form_whose_submit_registers_an_inactive_receiver_and_mails_it() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    c.create_attribute(&AttributeInput::new("firstname", AttributeType::Text))
        .await
        .unwrap();
    c.create_group_attribute(g.id, &AttributeInput::new("age", AttributeType::Number))
        .await
        .unwrap();
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();

    // The answer is one JSON string of HTML.
    let (http, base, token) = t.raw();
    let res = http
        .get(format!("{base}/v3/forms/{}/code", f.id))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let code: serde_json::Value = res.json().await.unwrap();
    let code = code
        .as_str()
        .expect("the code is a JSON string")
        .to_string();
    let action = format!("{base}/forms/{}/submit", f.id);
    assert!(code.starts_with("<!DOCTYPE html>"), "{code}");
    assert!(
        code.contains(&format!("action=\"{action}\" method=\"post\"")),
        "{code}"
    );
    for field in ["name=\"email\"", "name=\"firstname\"", "name=\"age\""] {
        assert!(code.contains(field), "{field} missing in {code}");
    }

    // Submitting it as a browser does.
    let res = http
        .post(&action)
        .header("user-agent", "TestBrowser/1.0")
        .header("referer", "https://shop.example/news")
        .header("x-forwarded-for", "198.51.100.4, 10.0.0.1")
        .form(&[
            ("email", "new@example.com"),
            ("firstname", "Ada"),
            ("age", "36"),
            ("submit", "Subscribe"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = res.text().await.unwrap();
    assert!(page.contains("Please check your inbox"), "{page}");

    let r = c.group_receiver(g.id, "new@example.com", 0).await.unwrap();
    assert!(r.registered > 0 && r.activated == 0 && !r.active, "{r:?}");
    assert_eq!(r.source, format!("form {}", f.id));
    assert_eq!(
        r.global_attributes.get("firstname").map(String::as_str),
        Some("Ada")
    );
    assert_eq!(r.attributes.get("age").map(String::as_str), Some("36"));
    assert_eq!(emails_of(c, &g, "inactive").await, ["new@example.com"]);

    let mails = c.outbox(&OutboxQuery::default()).await.unwrap();
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert_eq!(
        (
            mail.kind.as_str(),
            mail.to.as_str(),
            mail.form_id,
            mail.group_id,
            mail.receiver_id
        ),
        ("activate", "new@example.com", f.id, g.id, r.id)
    );
    assert_eq!(mail.subject, "Please confirm your subscription to \"News\"");
    assert!(
        mail.link.starts_with(&format!("{base}/forms/confirm/")),
        "{}",
        mail.link
    );
    assert_eq!(
        (
            mail.doidata.user_ip.as_str(),
            mail.doidata.referer.as_str(),
            mail.doidata.user_agent.as_str()
        ),
        (
            "198.51.100.4",
            "https://shop.example/news",
            "TestBrowser/1.0"
        )
    );

    // Registered → mail → link → active.
    let (status, page) = visit(&mail.link).await;
    assert_eq!(status, 200);
    assert!(page.contains("Subscription confirmed"), "{page}");
    assert_eq!(emails_of(c, &g, "active").await, ["new@example.com"]);
}

#[tokio::test]
async fn a_submit_is_checked_and_an_address_already_in_the_group_gets_no_second_receiver() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let f = t
        .client
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    let (http, base, _) = t.raw();
    let post = |form: Vec<(&'static str, &'static str)>, id: String| {
        let http = http.clone();
        let url = format!("{base}/forms/{id}/submit");
        async move {
            http.post(url)
                .form(&form)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(
        post(vec![("email", "not-an-address")], f.id.to_string()).await,
        400
    );
    assert_eq!(post(vec![], f.id.to_string()).await, 400);
    assert_eq!(
        post(vec![("email", "a@example.com")], "999999".into()).await,
        404
    );
    assert_eq!(
        post(vec![("email", "a@example.com")], "abc".into()).await,
        404
    );
    t.client
        .add_to_blacklist("spam@example.com", "")
        .await
        .unwrap();
    assert_eq!(
        post(vec![("email", "spam@example.com")], f.id.to_string()).await,
        403
    );

    // Awaiting activation: a new link each time; active: nothing.
    assert_eq!(
        post(vec![("email", "a@example.com")], f.id.to_string()).await,
        200
    );
    assert_eq!(
        post(vec![("email", "A@example.com")], f.id.to_string()).await,
        200
    );
    let outbox = t.client.outbox(&OutboxQuery::default()).await.unwrap();
    assert_eq!(outbox.len(), 2);
    assert_eq!(emails_of(&t.client, &g, "all").await, ["a@example.com"]);
    visit(&outbox[0].link).await;
    assert_eq!(
        post(vec![("email", "a@example.com")], f.id.to_string()).await,
        200
    );
    assert_eq!(
        t.client
            .outbox(&OutboxQuery::default())
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn code_flags_shape_the_embed_code() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    let code = |q: FormCodeQuery| async move { c.form_code(f.id, &q).await.unwrap() };
    let default = code(FormCodeQuery::default()).await;
    assert!(default.starts_with("<!DOCTYPE html>"));
    assert!(default.contains("<style>") && default.contains("<script>"));
    assert!(!default.contains("Powered by"));
    let bare = code(FormCodeQuery {
        badget: Some(true),
        embedded: Some(true),
        js: Some(false),
        css: Some(false),
    })
    .await;
    assert!(bare.starts_with("<form "), "{bare}");
    assert!(
        !bare.contains("<style>") && !bare.contains("<script>"),
        "{bare}"
    );
    assert!(bare.contains("Powered by listpipe"), "{bare}");
}

#[tokio::test]
async fn an_activation_mail_activates_an_awaiting_receiver_once() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    let awaiting = ReceiverInput {
        registered: Some(1_600_000_000),
        ..ReceiverInput::email("wait@example.com")
    };
    c.create_receiver(g.id, &awaiting).await.unwrap();
    assert!(
        c.send_form_mail(f.id, "activate", &send_input("wait@example.com"))
            .await
            .unwrap()
    );
    let mail = &c.outbox(&OutboxQuery::default()).await.unwrap()[0];
    assert_eq!(
        (
            mail.doidata.user_ip.as_str(),
            mail.doidata.user_agent.as_str()
        ),
        ("203.0.113.7", "Mozilla/5.0")
    );
    assert!(emails_of(c, &g, "active").await.is_empty());

    let link = last_mail_link(c, "wait@example.com").await;
    let (status, page) = visit(&link).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(
            "<h1>Subscription confirmed</h1>\n<p>wait@example.com now receives mail from &quot;News&quot;.</p>"
        ),
        "{page}"
    );
    assert_eq!(emails_of(c, &g, "active").await, ["wait@example.com"]);
    let activated = receiver(c, &g, "wait@example.com").await.activated;
    assert!(activated > 1_600_000_000);

    let (status, page) = visit(&link).await;
    assert_eq!(status, 200);
    assert!(page.contains("Link already used"), "{page}");
    assert_eq!(
        receiver(c, &g, "wait@example.com").await.activated,
        activated
    );
}

#[tokio::test]
async fn an_expired_link_changes_nothing() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    let awaiting = ReceiverInput {
        registered: Some(1_600_000_000),
        ..ReceiverInput::email("late@example.com")
    };
    c.create_receiver(g.id, &awaiting).await.unwrap();
    c.send_form_mail(f.id, "activate", &send_input("late@example.com"))
        .await
        .unwrap();
    let link = last_mail_link(c, "late@example.com").await;
    let store = t.server.as_ref().unwrap().store.clone();
    store
        .write(|c| c.exec("UPDATE doi_links SET expires = 1", params![]))
        .await
        .unwrap();
    let (status, page) = visit(&link).await;
    assert_eq!(status, 200);
    assert!(page.contains("<h1>Link expired</h1>"), "{page}");
    assert!(emails_of(c, &g, "active").await.is_empty());
}

#[tokio::test]
async fn a_deactivation_mail_makes_the_receiver_inactive() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    c.create_receiver(g.id, &ReceiverInput::email("bye@example.com"))
        .await
        .unwrap();
    assert!(
        c.send_form_mail(f.id, "DEACTIVATE", &send_input("bye@example.com"))
            .await
            .unwrap()
    );
    let mail = &c.outbox(&OutboxQuery::default()).await.unwrap()[0];
    assert_eq!(mail.kind, "deactivate");
    assert_eq!(emails_of(c, &g, "active").await, ["bye@example.com"]);
    let (_, page) = visit(&mail.link).await;
    assert!(page.contains("Unsubscribed"), "{page}");
    assert_eq!(emails_of(c, &g, "inactive").await, ["bye@example.com"]);
    assert!(receiver(c, &g, "bye@example.com").await.deactivated > 0);
}

#[tokio::test]
async fn a_link_changes_nothing_for_a_receiver_created_active_or_opted_out() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    let active = ReceiverInput {
        activated: Some(1_600_000_000),
        ..ReceiverInput::email("on@example.com")
    };
    let opted_out = ReceiverInput {
        deactivated: Some(1_600_000_000),
        ..ReceiverInput::email("off@example.com")
    };
    c.create_receiver(g.id, &active).await.unwrap();
    c.create_receiver(g.id, &opted_out).await.unwrap();
    let before = (
        receiver(c, &g, "on@example.com").await,
        receiver(c, &g, "off@example.com").await,
    );

    c.send_form_mail(f.id, "activate", &send_input("on@example.com"))
        .await
        .unwrap();
    let (_, page) = visit(&last_mail_link(c, "on@example.com").await).await;
    assert!(page.contains("Already subscribed"), "{page}");
    c.send_form_mail(f.id, "activate", &send_input("off@example.com"))
        .await
        .unwrap();
    let (_, page) = visit(&last_mail_link(c, "off@example.com").await).await;
    assert!(page.contains("Not subscribed"), "{page}");

    let after = (
        receiver(c, &g, "on@example.com").await,
        receiver(c, &g, "off@example.com").await,
    );
    assert_eq!(after, before);
    assert_eq!(after.0.activated, 1_600_000_000);
    assert_eq!(emails_of(c, &g, "inactive").await, ["off@example.com"]);
}

#[tokio::test]
async fn sending_needs_a_known_form_and_type_an_email_doidata_and_a_receiver_of_the_group() {
    let t = TestServer::start().await;
    let (g, other_group) = (t.group("News").await, t.group("Shop").await);
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    c.create_receiver(g.id, &ReceiverInput::email("in@example.com"))
        .await
        .unwrap();
    c.create_receiver(other_group.id, &ReceiverInput::email("out@example.com"))
        .await
        .unwrap();
    let status = |r: listpipe::client::Result<bool>| r.unwrap_err().status();

    let no_doidata = FormSendInput {
        doidata: None,
        ..send_input("in@example.com")
    };
    assert_eq!(
        status(c.send_form_mail(f.id, "activate", &no_doidata).await),
        Some(400)
    );
    let err = c
        .send_form_mail(f.id, "activate", &no_doidata)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("doidata is required"), "{err}");
    let no_email = FormSendInput {
        email: None,
        ..send_input("x@example.com")
    };
    assert_eq!(
        status(c.send_form_mail(f.id, "activate", &no_email).await),
        Some(400)
    );
    let err = c
        .send_form_mail(f.id, "subscribe", &send_input("in@example.com"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string().contains("use one of: activate, deactivate"),
        "{err}"
    );
    let wrong_group = FormSendInput {
        groups_id: Some(other_group.id.0),
        ..send_input("in@example.com")
    };
    assert_eq!(
        status(c.send_form_mail(f.id, "activate", &wrong_group).await),
        Some(400)
    );

    assert_eq!(
        status(
            c.send_form_mail(f.id, "activate", &send_input("out@example.com"))
                .await
        ),
        Some(404)
    );
    assert_eq!(
        status(
            c.send_form_mail(f.id, "activate", &send_input("nobody@example.com"))
                .await
        ),
        Some(404)
    );
    assert_eq!(
        status(
            c.send_form_mail(Id(999_999), "activate", &send_input("in@example.com"))
                .await
        ),
        Some(404)
    );
    assert!(c.outbox(&OutboxQuery::default()).await.unwrap().is_empty());

    let same_group = FormSendInput {
        groups_id: Some(g.id.0),
        ..send_input("in@example.com")
    };
    assert!(
        c.send_form_mail(f.id, "activate", &same_group)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn an_unknown_or_forged_confirmation_link_is_not_found() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    c.create_receiver(g.id, &ReceiverInput::email("in@example.com"))
        .await
        .unwrap();
    c.send_form_mail(f.id, "deactivate", &send_input("in@example.com"))
        .await
        .unwrap();
    let link = last_mail_link(c, "in@example.com").await;
    let forged = format!("{}{}", &link[..link.len() - 4], "0000");
    let base = t.base_url();
    for url in [
        forged,
        format!("{base}/forms/confirm/nothing"),
        format!("{base}/forms/confirm/{}", "ab".repeat(24)),
    ] {
        assert_eq!(visit(&url).await.0, 404, "{url}");
    }
    assert_eq!(emails_of(c, &g, "active").await, ["in@example.com"]);
}

#[tokio::test]
async fn the_outbox_is_the_accounts_own_newest_first_and_printed_by_the_outbox_command() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let c = &t.client;
    let f = c
        .create_form_from_template(g.id, "default", &named("News"))
        .await
        .unwrap();
    for email in ["a@example.com", "b@example.com"] {
        c.create_receiver(g.id, &ReceiverInput::email(email))
            .await
            .unwrap();
        c.send_form_mail(f.id, "deactivate", &send_input(email))
            .await
            .unwrap();
    }
    let mails = c.outbox(&OutboxQuery::default()).await.unwrap();
    let to: Vec<_> = mails.iter().map(|m| m.to.as_str()).collect();
    assert_eq!(to, ["b@example.com", "a@example.com"]);
    let only_a = OutboxQuery {
        email: Some("A@example.com".into()),
        ..Default::default()
    };
    assert_eq!(c.outbox(&only_a).await.unwrap(), vec![mails[1].clone()]);
    let second_page = OutboxQuery {
        pagesize: Some(1),
        page: Some(1),
        ..Default::default()
    };
    assert_eq!(
        c.outbox(&second_page).await.unwrap(),
        vec![mails[1].clone()]
    );
    let other = t.other_tenant("acme").await;
    assert!(
        other
            .outbox(&OutboxQuery::default())
            .await
            .unwrap()
            .is_empty()
    );

    let db = t.db();
    let out = tokio::task::spawn_blocking(move || {
        crate::support::binary()
            .args(["outbox", "--db"])
            .arg(&db)
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<listpipe::api::form::OutboxMail> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(printed, mails);

    let out = crate::support::binary()
        .args(["outbox", "--name", "nobody", "--db"])
        .arg(t.db())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no account named \"nobody\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

//! An export of a group writes that group's own attributes and the global
//! attributes its receivers hold, not every attribute of the account (the
//! globals other groups' imports made, another group's attributes);
//! `--columns` still picks any of them.

use crate::import::spawn_export;
use crate::support::TestServer;
use listpipe::api::{AttributeInput, AttributeType, ReceiverInput};
use std::collections::BTreeMap;

async fn export(t: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["-q"];
    all.extend(args);
    let out = spawn_export(t, &all).await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = args.iter().skip_while(|a| **a != "--out").nth(1).unwrap();
    std::fs::read_to_string(t.dir.path().join(out)).unwrap()
}

fn values(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// Two groups, each with two attributes of its own and a receiver, and
/// three globals: one each group's receiver holds, one nobody holds.
async fn two_groups() -> TestServer {
    let t = TestServer::start().await;
    let c = &t.client;
    for name in ["firstname", "crm_id", "legacy"] {
        c.create_attribute(&AttributeInput::new(name, AttributeType::Text))
            .await
            .unwrap();
    }
    for (group, attrs, email, global) in [
        (
            "News",
            ["size", "colour"],
            "ann@example.com",
            ("firstname", "Ann"),
        ),
        (
            "CRM",
            ["stage", "owner"],
            "ben@example.com",
            ("crm_id", "7"),
        ),
    ] {
        let g = t.group(group).await;
        for a in attrs {
            c.create_group_attribute(g.id, &AttributeInput::new(a, AttributeType::Text))
                .await
                .unwrap();
        }
        let input = ReceiverInput {
            attributes: values(&[(attrs[0], "x")]),
            global_attributes: values(&[global]),
            ..ReceiverInput::email(email)
        };
        c.create_receiver(g.id, &input).await.unwrap();
    }
    t
}

const FIELDS: &str = "id,email,group_id,registered,activated,deactivated,imported,bounced,source,points,last_ip,last_location,last_client,active";

#[tokio::test]
async fn a_group_export_writes_its_own_attributes_and_the_globals_it_holds() {
    let t = two_groups().await;
    let news = export(&t, &["--group", "News", "--out", "news.csv"]).await;
    assert_eq!(
        news.lines().next(),
        Some(format!("{FIELDS},firstname,size,colour,tags").as_str())
    );
    let crm = export(&t, &["--group", "CRM", "--out", "crm.csv"]).await;
    assert_eq!(
        crm.lines().next(),
        Some(format!("{FIELDS},crm_id,stage,owner,tags").as_str())
    );
    // A segment of the group (a runtime filter) has the same columns.
    let some = export(
        &t,
        &[
            "--group",
            "CRM",
            "--rule",
            "email:contains:ben",
            "--out",
            "some.csv",
        ],
    )
    .await;
    assert_eq!(
        some.lines().next(),
        Some(format!("{FIELDS},crm_id,stage,owner,tags").as_str())
    );
}

#[tokio::test]
async fn columns_still_pick_any_global_attribute() {
    let t = two_groups().await;
    let news = export(
        &t,
        &[
            "--group",
            "News",
            "--out",
            "news.csv",
            "--columns",
            "email,legacy,crm_id,size",
        ],
    )
    .await;
    assert_eq!(
        news.lines().collect::<Vec<_>>(),
        ["email,legacy,crm_id,size", "ann@example.com,,,x"]
    );
}

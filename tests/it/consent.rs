//! Consent is decided per row: a row that grants no state of its own (its
//! `activated` mapping's `only_if` failed, its opt-in cell was empty) creates a
//! receiver awaiting activation on every write path, and `check --preview`
//! shows that body. A later run changes a receiver's state only where its row
//! grants something.

use crate::in_process::{check_here, run_here};
use crate::support::TestServer;
use listpipe::api::{Receiver, detail};
use std::path::{Path, PathBuf};

const STATUS_CSV: &str =
    "email,status,order_id\na@example.com,subscribed,A-1\nb@example.com,pending,B-1\n";

/// The issue's case: `activated` only for the subscribed row, optionally
/// orders on the rows.
fn pipeline(dir: &Path, group: &str, orders: bool) -> PathBuf {
    std::fs::write(dir.join("status.csv"), STATUS_CSV).unwrap();
    let orders = if orders {
        "[import.orders]\norder_id = \"order_id\"\n"
    } else {
        ""
    };
    let path = dir.join(format!("{group}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"[[import]]
name = "{group}"
source = "status.csv"
group = "{group}"
create_group = true
[import.receiver]
email = "email"
activated = {{ value = "now", only_if = {{ column = "status", equals = "subscribed" }} }}
{orders}"#
        ),
    )
    .unwrap();
    path
}

async fn receiver(t: &TestServer, group: &str, email: &str) -> Receiver {
    let g = t.group_named(group).await;
    t.client
        .group_receiver(g.id, email, detail::ALL)
        .await
        .unwrap_or_else(|e| panic!("{email}: {e}"))
}

async fn assert_pending_and_active(t: &TestServer, group: &str) {
    let a = receiver(t, group, "a@example.com").await;
    assert!(a.active && a.activated > 0, "{group}: {a:?}");
    let b = receiver(t, group, "b@example.com").await;
    assert_eq!(b.activated, 0, "{group}: the pending row is not activated");
    assert!(b.registered > 0, "{group}: the pending row is registered");
    assert!(!b.active, "{group}: {b:?}");
}

#[tokio::test]
async fn a_pending_row_is_created_awaiting_activation_on_every_write_path() {
    let t = TestServer::start().await;
    for (writes, orders) in [
        ("single", false),
        ("auto", false),
        ("single", true),
        ("auto", true),
    ] {
        let group = format!("{writes}{}", if orders { "-orders" } else { "" });
        let path = pipeline(t.dir.path(), &group, orders);
        let (code, report, stderr) = run_here(&t, &path, &["--writes", writes]).await;
        assert_eq!(code, 0, "{group}: {stderr}");
        assert_eq!(report["steps"][0]["import"]["created"], 2, "{group}");
        assert_pending_and_active(&t, &group).await;
        if orders {
            let b = receiver(&t, &group, "b@example.com").await;
            assert_eq!(b.orders.unwrap_or_default().len(), 1, "{group}");
        }
    }
}

#[tokio::test]
async fn a_preset_row_without_consent_on_record_waits_for_activation() {
    // HubSpot's newer exports name the id `Contact ID`; a contact without a
    // create date and not a marketing contact states no time at all.
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("hubspot.csv"),
        "Contact ID,First Name,Email,Create Date,Marketing contact status,Unsubscribed from all email\n\
         201,Ada,ada@example.com,2023-02-14 09:30,Marketing contact,false\n\
         202,Ben,ben@example.com,,Non-marketing contact,false\n",
    )
    .unwrap();
    let path = dir.join("hubspot.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"hubspot\"\npreset = \"hubspot\"\nsource = \"hubspot.csv\"\ngroup = \"CRM\"\ncreate_group = true\n",
    )
    .unwrap();
    let (code, _, stderr) = run_here(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let ada = receiver(&t, "CRM", "ada@example.com").await;
    assert!(ada.active, "{ada:?}");
    assert_eq!(ada.global_attributes["hubspot_id"], "201");
    assert!(
        !ada.global_attributes.contains_key("contact_id"),
        "the id is read once, as hubspot_id: {:?}",
        ada.global_attributes
    );
    let ben = receiver(&t, "CRM", "ben@example.com").await;
    assert_eq!((ben.activated, ben.active), (0, false), "{ben:?}");
    assert!(ben.registered > 0, "{ben:?}");
    assert_eq!(ben.global_attributes["hubspot_id"], "202");
}

#[tokio::test]
async fn check_previews_the_body_that_creates_each_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let path = pipeline(dir.path(), "News", false);
    let out = check_here(dir.path(), &[path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "  first rows as create bodies (a receiver the group already holds gets only what differs):\n  row 2: {\"email\":\"a@example.com\",\"activated\":"
        ),
        "{stdout}"
    );
    let row3 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  row 3: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let body: serde_json::Value = serde_json::from_str(row3).unwrap();
    assert_eq!(body["email"], "b@example.com");
    assert!(body["registered"].as_i64().unwrap() > 0, "{row3}");
    assert!(body.get("activated").is_none(), "{row3}");
}

#[tokio::test]
async fn a_later_run_changes_a_state_only_where_the_row_grants_it() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let path = pipeline(dir, "News", false);
    let (code, _, stderr) = run_here(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let before = receiver(&t, "News", "b@example.com").await;

    // Nothing granted: the pending receiver stays pending, the active one active.
    let (code, report, stderr) = run_here(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["unchanged"], 2, "{report}");
    let after = receiver(&t, "News", "b@example.com").await;
    assert_eq!((after.registered, after.activated), (before.registered, 0));

    // b subscribes, a unsubscribes: each row's `now` is sent where the
    // target holds no time yet, and a's activation time does not move.
    let a_before = receiver(&t, "News", "a@example.com").await;
    std::fs::write(
        dir.join("status.csv"),
        "email,status\na@example.com,unsubscribed\nb@example.com,subscribed\n",
    )
    .unwrap();
    std::fs::write(
        &path,
        r#"[[import]]
name = "News"
source = "status.csv"
group = "News"
[import.receiver]
email = "email"
activated = { value = "now", only_if = { column = "status", equals = "subscribed" } }
deactivated = { value = "now", only_if = { column = "status", equals = "unsubscribed" } }
"#,
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["steps"][0]["import"]["updated"], 2, "{report}");
    let a = receiver(&t, "News", "a@example.com").await;
    assert!(!a.active && a.deactivated > 0, "{a:?}");
    assert_eq!(a.activated, a_before.activated);
    let b = receiver(&t, "News", "b@example.com").await;
    assert!(b.active && b.activated > 0, "{b:?}");
}

//! Tenants, persistence and the `serve` / `accounts` commands.

use crate::support::TestServer;
use listpipe::api::oauth::Credentials;
use listpipe::api::{AttributeInput, AttributeType, GroupInput, ReceiverInput};
use listpipe::client::ApiClient;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[tokio::test]
async fn two_accounts_cannot_see_each_others_data() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let r = t
        .client
        .create_receiver(g.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    let attr = t
        .client
        .create_attribute(&AttributeInput::new("city", AttributeType::Text))
        .await
        .unwrap();
    t.client
        .add_to_blacklist("spam@example.com", "")
        .await
        .unwrap();

    let other = t.other_tenant("acme").await;
    let rid = r.id.to_string();
    assert_eq!(other.group(g.id).await.unwrap_err().status(), Some(404));
    assert_eq!(
        other
            .update_group(g.id, &GroupInput::named("Mine"))
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other.delete_group(g.id).await.unwrap_err().status(),
        Some(404)
    );
    assert_eq!(
        other.group_stats(g.id).await.unwrap_err().status(),
        Some(404)
    );
    assert_eq!(
        other.receiver(&rid, None, 0).await.unwrap_err().status(),
        Some(404)
    );
    assert_eq!(
        other
            .receiver("a@example.com", None, 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other
            .delete_receiver("a@example.com", None)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other
            .create_receiver(g.id, &ReceiverInput::email("b@example.com"))
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other.attribute(attr.id).await.unwrap_err().status(),
        Some(404)
    );
    assert_eq!(
        other
            .set_receiver_attribute(&rid, attr.id, "x")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other
            .add_receiver_tags(&rid, &["x"], None)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other
            .blacklist_entry("spam@example.com")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(
        other
            .remove_from_blacklist("spam@example.com")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert!(other.groups(None).await.unwrap().is_empty());
    assert!(other.blacklist().await.unwrap().is_empty());
    assert!(other.attributes(None).await.unwrap().is_empty());
    assert!(other.tags(None).await.unwrap().is_empty());
    assert_eq!(
        other
            .validate_blacklist(&["spam@example.com".into()], None, false)
            .await
            .unwrap(),
        ["spam@example.com"]
    );

    // The same group name and address are free in the other account.
    let og = other
        .create_group(&GroupInput::named("News"))
        .await
        .unwrap();
    other
        .create_receiver(og.id, &ReceiverInput::email("a@example.com"))
        .await
        .unwrap();
    assert_eq!(t.client.group_stats(g.id).await.unwrap().total_count, 1);
}

#[tokio::test]
async fn a_restart_keeps_every_record_and_token() {
    let mut t = TestServer::start().await;
    let g = t.group("News").await;
    let input = ReceiverInput {
        tags: Some(vec!["vip".into()]),
        ..ReceiverInput::email("a@example.com")
    };
    let r = t.client.create_receiver(g.id, &input).await.unwrap();
    t.client
        .add_to_blacklist("spam@example.com", "kept")
        .await
        .unwrap();
    // As it is now: the receiver's create changed the group's last_changed.
    let g = t.client.group(g.id).await.unwrap();
    t.restart().await;
    assert_eq!(t.client.group(g.id).await.unwrap(), g);
    let again = t
        .client
        .group_receiver(g.id, "a@example.com", 4)
        .await
        .unwrap();
    assert_eq!(
        (again.id, again.activated, again.tags),
        (r.id, r.activated, Some(vec!["vip".to_string()]))
    );
    assert_eq!(
        t.client
            .blacklist_entry("spam@example.com")
            .await
            .unwrap()
            .comment,
        "kept"
    );
}

#[tokio::test]
async fn tokens_and_secrets_are_stored_only_as_hashes() {
    let t = TestServer::start().await;
    t.group("News").await;
    let (db, wal) = if crate::support::on_postgres() {
        (stored_rows(t.db().to_str().unwrap()), Vec::new())
    } else {
        let db = std::fs::read(t.db()).unwrap();
        (
            db,
            std::fs::read(t.db().with_extension("db-wal")).unwrap_or_default(),
        )
    };
    for secret in [
        &t.creds.access_token,
        &t.creds.refresh_token,
        &t.creds.client_secret,
    ] {
        // The verifier part (after the 16-character selector) must appear nowhere.
        let verifier = &secret[16..];
        for bytes in [&db, &wal] {
            assert!(
                !bytes
                    .windows(verifier.len())
                    .any(|w| w == verifier.as_bytes()),
                "a secret is stored in clear"
            );
        }
    }
}

/// Every row of every table of a PostgreSQL database as text (byte
/// strings as hex), one line each.
fn stored_rows(url: &str) -> Vec<u8> {
    let url = url.to_string();
    // The synchronous client must not run inside the test's tokio runtime.
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let tables: Vec<String> = c
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(tables.iter().any(|t| t == "tokens"), "{tables:?}");
        let mut out = Vec::new();
        for table in tables {
            for row in c
                .query(&format!("SELECT CAST(t AS TEXT) FROM {table} t"), &[])
                .unwrap()
            {
                let text: String = row.get(0);
                out.extend_from_slice(text.as_bytes());
                out.push(b'\n');
            }
        }
        out
    })
    .join()
    .unwrap()
}

fn listpipe() -> Command {
    crate::support::binary()
}

#[tokio::test]
async fn serve_writes_private_credentials_that_reach_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _pg) = crate::support::fresh_database(dir.path());
    let creds_path = dir.path().join("creds.json");
    let mut child = listpipe()
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .arg("--credentials")
        .arg(&creds_path)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the line that says where it serves.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url_line = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("serving the v3 API at"))
        .unwrap();
    let creds: Credentials = serde_json::from_slice(&std::fs::read(&creds_path).unwrap()).unwrap();
    assert!(url_line.contains(&creds.base_url), "{url_line}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&creds_path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let client = ApiClient::new(&creds.base_url, &creds.access_token).unwrap();
    assert_eq!(client.whoami().await.unwrap().name, "default");

    // A second account made while the server runs is a separate tenant.
    let out = listpipe()
        .args(["accounts", "create", "--name", "acme", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acme: Credentials = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(acme.base_url, creds.base_url);
    let acme_client = ApiClient::new(&acme.base_url, &acme.access_token).unwrap();
    assert_eq!(acme_client.whoami().await.unwrap().name, "acme");
    assert_ne!(
        acme_client.whoami().await.unwrap().id,
        client.whoami().await.unwrap().id
    );

    // An authorization code from the command line is good for one exchange.
    let out = listpipe()
        .args([
            "accounts",
            "code",
            "--name",
            "acme",
            "--redirect-uri",
            "http://localhost/cb",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    let code: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = listpipe::client::oauth::authorization_code(
        &acme.base_url,
        &acme.client_id,
        &acme.client_secret,
        code["code"].as_str().unwrap(),
        "http://localhost/cb",
    )
    .await
    .unwrap();
    assert_eq!(
        ApiClient::new(&acme.base_url, &tokens.access_token)
            .unwrap()
            .whoami()
            .await
            .unwrap()
            .name,
        "acme"
    );

    // Fresh credentials for an account rotate its secret.
    let out = listpipe()
        .args(["accounts", "credentials", "--name", "acme", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let rotated: Credentials = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rotated.client_id, acme.client_id);
    assert!(
        listpipe::client::oauth::client_credentials(
            &acme.base_url,
            &acme.client_id,
            &acme.client_secret
        )
        .await
        .is_err()
    );
    assert!(
        listpipe::client::oauth::client_credentials(
            &acme.base_url,
            &rotated.client_id,
            &rotated.client_secret
        )
        .await
        .is_ok()
    );

    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn accounts_create_refuses_a_taken_name() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _pg) = crate::support::fresh_database(dir.path());
    let ok = listpipe()
        .args(["accounts", "create", "--name", "acme", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(ok.status.success());
    let again = listpipe()
        .args(["accounts", "create", "--name", "acme", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("an account named \"acme\" exists already")
    );
}

//! A third-party client written from the spec and wire.md alone (not from
//! our code), in another language, run against the built-in server: the
//! documents decide, not our reading of them. Needs python3 (stdlib only).

use crate::support::TestServer;
use std::process::Command;

#[tokio::test]
async fn a_client_written_from_the_spec_passes_against_the_server() {
    let t = TestServer::start().await;
    let creds_path = t.dir.path().join("credentials.json");
    let store = t.server.as_ref().unwrap().store.clone();
    let code = store
        .write(|c| {
            let app = listpipe::server::store::accounts::app_of(c, "default")?;
            listpipe::server::store::accounts::mint_code(c, &app, "http://localhost/cb")
        })
        .await
        .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/thirdparty/v3_client.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .arg("--credentials")
            .arg(&creds_path)
            .args(["--code", &code, "--redirect-uri", "http://localhost/cb"])
            .output()
    })
    .await
    .unwrap()
    .expect("python3 runs (bash .ci/run installs it when missing)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the third-party client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().last().unwrap_or("").ends_with(" 0 failed"),
        "{stdout}"
    );
}

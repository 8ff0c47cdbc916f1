//! The journal's writes, failures and reading back.

use super::*;

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_line_that_cannot_be_written_stops_the_run_and_becomes_the_steps_error() {
    let file = OpenOptions::new().append(true).open("/dev/full").unwrap();
    let stop = Stop::default();
    let j = Journal::with_file(
        PathBuf::from("people.jsonl"),
        file,
        stop.clone(),
        HashMap::new(),
        HashMap::new(),
    )
    .unwrap();
    let key = (0, 2, "a@example.com".to_string());
    let entry = Entry {
        key: &key,
        action: "create",
        hash: "h",
    };
    j.started(&[entry]).await;
    assert!(stop.is_set(), "the run takes no new rows");
    let err = j.failure().unwrap().to_string();
    assert!(
        err.starts_with("cannot write people.jsonl: No space left on device"),
        "{err}"
    );
}

#[test]
fn a_written_line_is_spelled_as_older_journals_spell_it() {
    let key = (1, 7, "a@x.de".to_string());
    let out = LineOut {
        ev: "done",
        file: key.0,
        row: key.1,
        email: &key.2,
        action: "create",
        hash: "h",
    };
    assert_eq!(
        serde_json::to_string(&out).unwrap(),
        "{\"ev\":\"done\",\"file\":1,\"row\":7,\"email\":\"a@x.de\",\"action\":\"create\",\"hash\":\"h\"}"
    );
}

#[tokio::test]
async fn a_batch_is_written_by_the_writer_thread_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.jsonl");
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let j = Journal::with_file(
        path.clone(),
        file,
        Stop::default(),
        HashMap::new(),
        HashMap::new(),
    )
    .unwrap();
    let keys: Vec<RowKey> = (2..5).map(|r| (0, r, format!("r{r}@x.de"))).collect();
    let entries: Vec<Entry> = keys
        .iter()
        .map(|key| Entry {
            key,
            action: "create",
            hash: "h",
        })
        .collect();
    j.started(&entries).await;
    // A start is with the OS once `started` returns: a kill -9 keeps it.
    assert_eq!(read_events(&path).len(), 3);
    j.confirmed(&entries[..2]).await;
    j.sync().await;
    assert!(j.failure().is_none());
    drop(j);
    let events: Vec<String> = read_events(&path)
        .into_iter()
        .map(|(ev, email)| format!("{ev} {email}"))
        .collect();
    assert_eq!(
        events,
        [
            "start r2@x.de",
            "start r3@x.de",
            "start r4@x.de",
            "done r2@x.de",
            "done r3@x.de"
        ]
    );
}

#[test]
fn torn_and_garbled_lines_are_counted_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.jsonl");
    std::fs::write(
        &path,
        b"{\"ev\":\"header\",\"target\":\"t\",\"group\":\"g\"}\n\
          {\"ev\":\"done\",\"file\":0,\"row\":2,\"email\":\"a@x.de\",\"action\":\"create\",\"hash\":\"h\"}\n\
          \xff\xfe\x00\n\
          {\"ev\":\"done\",\"fi",
    )
    .unwrap();
    let back = read_back(&path, false).unwrap();
    assert_eq!(back.header.unwrap().target, "t");
    assert_eq!(back.lines.len(), 1);
    assert_eq!(back.unreadable, 2);
    assert!(back.torn);
}

/// A row's hash is the first half of the SHA-256 of its JSON body, in hex:
/// what earlier runs wrote into their journals, which a resume compares.
#[test]
fn a_rows_hash_is_the_first_half_of_its_bodys_sha256() {
    use sha2::{Digest, Sha256};
    let body = crate::api::ReceiverInput {
        points: Some(3),
        tags: Some(vec!["vip".into(), "ü \"quoted\"".into()]),
        ..crate::api::ReceiverInput::email("anna@example.com")
    };
    let json = serde_json::to_vec(&body).unwrap();
    let want: String = Sha256::digest(&json)[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(super::hash(&body), want);
    assert_eq!(want.len(), 32);
}

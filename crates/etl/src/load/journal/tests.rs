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
        Recorded::new(1),
    )
    .unwrap();
    let key = (0, 2, "a@example.com".to_string());
    let entry = Entry {
        key: &key,
        action: "create",
        hash: "h",
    };
    let started = j.started(&[entry]).await;
    assert!(started.is_err(), "a line the disk refused sends nothing");
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
    let j = Journal::with_file(path.clone(), file, Stop::default(), Recorded::new(1)).unwrap();
    let keys: Vec<RowKey> = (2..5).map(|r| (0, r, format!("r{r}@x.de"))).collect();
    let entries: Vec<Entry> = keys
        .iter()
        .map(|key| Entry {
            key,
            action: "create",
            hash: "h",
        })
        .collect();
    let _started = j.started(&entries).await.unwrap();
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
    let mut lines = 0;
    let back = read_back(&path, false, |_| lines += 1).unwrap();
    assert_eq!(back.header.unwrap().target, "t");
    assert_eq!(lines, 1);
    assert_eq!(back.unreadable, 2);
    assert!(back.torn);
}

/// A row's hash is the first half of the SHA-256 of its JSON body, in hex:
/// what earlier runs wrote into their journals, which a resume compares.
#[test]
fn a_rows_hash_is_the_first_half_of_its_bodys_sha256() {
    use sha2::{Digest, Sha256};
    let body = listpipe_api::ReceiverInput {
        points: Some(3),
        tags: Some(vec!["vip".into(), "ü \"quoted\"".into()]),
        ..listpipe_api::ReceiverInput::email("anna@example.com")
    };
    let json = serde_json::to_vec(&body).unwrap();
    let want: String = Sha256::digest(&json)[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(super::hash(&body).unwrap(), want);
    assert_eq!(want.len(), 32);
}

#[test]
fn a_row_that_cannot_be_fingerprinted_says_why_and_its_cause() {
    let cause = serde_json::from_str::<u8>("x").unwrap_err();
    let e = FingerprintError { cause };
    assert_eq!(
        e.to_string(),
        "the row cannot be fingerprinted for the journal: its body does not serialise as JSON"
    );
    assert!(std::error::Error::source(&e).is_some());
}

/// A journal device that takes `lines` whole lines, then refuses every write
/// (a disk that fills up): what it took is what is durable.
struct FillsUp {
    lines: usize,
    taken: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl std::io::Write for FillsUp {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut taken = self.taken.lock().unwrap();
        let room = self.lines - taken.iter().filter(|b| **b == b'\n').count();
        let fits: usize = buf
            .split_inclusive(|b| *b == b'\n')
            .take(room)
            .map(<[u8]>::len)
            .sum();
        if fits == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
        }
        taken.extend_from_slice(&buf[..fits]);
        Ok(fits)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl writer::Device for FillsUp {
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sending needs a [`Started`]: here it only records which row went.
fn send(_: &Started, email: &str, sent: &std::sync::Mutex<Vec<String>>) {
    sent.lock().unwrap().push(email.to_string());
}

#[tokio::test]
async fn a_journal_that_fails_after_n_lines_lets_no_row_be_sent_beyond_its_last_line() {
    for n in [0, 1, 7, 40] {
        let taken = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let device = FillsUp {
            lines: n,
            taken: taken.clone(),
        };
        let stop = Stop::default();
        let j = Journal::with_file(
            PathBuf::from("people.jsonl"),
            device,
            stop.clone(),
            Recorded::new(1),
        )
        .unwrap();
        let sent = std::sync::Mutex::new(Vec::new());
        let keys: Vec<RowKey> = (0..60).map(|r| (0, r + 2, format!("r{r}@x.de"))).collect();
        // Rows go in single requests and in batches of three, many at once.
        let requests = keys.chunks(3).enumerate().flat_map(|(b, rows)| {
            if b.is_multiple_of(2) {
                vec![rows.to_vec()]
            } else {
                rows.iter().map(|k| vec![k.clone()]).collect()
            }
        });
        let (j, sent_ref) = (&j, &sent);
        futures::future::join_all(requests.map(|rows| async move {
            let entries: Vec<Entry> = rows
                .iter()
                .map(|key| Entry {
                    key,
                    action: "create",
                    hash: "h",
                })
                .collect();
            if let Ok(started) = j.started(&entries).await {
                rows.iter().for_each(|k| send(&started, &k.2, sent_ref));
            }
        }))
        .await;
        let durable = String::from_utf8(taken.lock().unwrap().clone()).unwrap();
        let sent = sent.into_inner().unwrap();
        assert!(durable.lines().count() <= n, "{durable}");
        for email in &sent {
            assert!(
                durable.contains(&format!("\"email\":\"{email}\"")),
                "{email} was sent without its start line (after {n} lines)"
            );
        }
        assert!(sent.len() <= n);
        assert!(stop.is_set(), "the run takes no new rows (after {n} lines)");
        let err = j.failure().unwrap().to_string();
        assert!(err.starts_with("cannot write people.jsonl: "), "{err}");
    }
}

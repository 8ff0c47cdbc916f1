//! The journal's writes, failures and reading back.

use super::files::{file_name, found_in, step_named};
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

/// A journal file with a header naming `target` and `group`.
fn journal_with_header(path: &Path, target: &str, group: &str) {
    let header = Header {
        ev: "header".into(),
        target: target.into(),
        group: group.into(),
    };
    std::fs::write(
        path,
        format!("{}\n", serde_json::to_string(&header).unwrap()),
    )
    .unwrap();
}

#[test]
fn a_journal_is_named_by_its_pipeline_step_target_and_group() {
    let a = path(
        Path::new(".listpipe"),
        "a/nightly",
        "people",
        "http://localhost:1 (account 1)",
        "group \"A\"",
    );
    let name = a.file_name().unwrap().to_string_lossy().into_owned();
    assert!(a.starts_with(".listpipe/journal/a/nightly"), "{a:?}");
    assert!(
        name.starts_with("people-") && name.ends_with(".jsonl"),
        "{name}"
    );
    assert_eq!(step_named(&name), "people");
    assert_eq!(step_named("people.jsonl"), "people");
    assert_eq!(step_named("import-1.jsonl"), "import-1");
    // Another target, account or group: another file of the same folder.
    for (target, group) in [
        ("http://localhost:2 (account 1)", "group \"A\""),
        ("http://localhost:1 (account 2)", "group \"A\""),
        ("http://localhost:1 (account 1)", "group \"B\""),
    ] {
        let other = path(Path::new(".listpipe"), "a/nightly", "people", target, group);
        assert_ne!(other, a, "{target}, {group}");
        assert_eq!(other.parent(), a.parent());
    }
}

#[test]
fn a_run_finds_its_own_journals_and_leaves_every_other_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        "http://localhost:1 (account 1)",
        "http://localhost:2 (account 1)",
    );
    let steps = [
        StepKey {
            step: "people",
            group: "group \"People\"",
        },
        StepKey {
            step: "orders",
            group: "group 7",
        },
    ];
    let own = dir.path().join(file_name("people", a, "group \"People\""));
    journal_with_header(&own, a, "group \"People\"");
    // B's journal of the same step, one of a group the step no longer
    // writes, one of a step since removed.
    let of_b = dir.path().join(file_name("people", b, "group \"People\""));
    journal_with_header(&of_b, b, "group \"People\"");
    let other_group = dir.path().join(file_name("orders", a, "group 8"));
    journal_with_header(&other_group, a, "group 8");
    let gone = dir.path().join(file_name("gone", a, "group 9"));
    journal_with_header(&gone, a, "group 9");
    // Named as before targets keyed the name: this run's by its header (or
    // when it has none), another target's by its header.
    let former = dir.path().join("orders.jsonl");
    std::fs::write(&former, "{\"ev\":\"start\",\"fi").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a journal").unwrap();

    let found = found_in(dir.path(), a, &steps);
    let own_paths: Vec<&PathBuf> = found.own.iter().map(|(p, _)| p).collect();
    assert_eq!(own_paths.len(), 2, "{found:?}");
    assert!(own_paths.contains(&&own) && own_paths.contains(&&former));
    let (_, keyed) = found.own.iter().find(|(p, _)| p == &former).unwrap();
    assert_eq!(keyed, &dir.path().join(file_name("orders", a, "group 7")));
    let others: Vec<&PathBuf> = found.others.iter().map(|o| &o.path).collect();
    assert_eq!(others.len(), 3, "{others:?}");
    for p in [&of_b, &other_group, &gone] {
        assert!(others.contains(&p), "{p:?}: {others:?}");
    }
    let of_gone = found.others.iter().find(|o| o.path == gone).unwrap();
    assert_eq!(of_gone.group, None, "no step of that name");

    // Against B, A's journal of `people` is another's, B's its own; the
    // former `orders.jsonl` without a header is taken by whoever resumes.
    let from_b = found_in(dir.path(), b, &steps);
    assert!(from_b.own.iter().any(|(p, _)| p == &of_b));
    assert!(from_b.others.iter().any(|o| o.path == own));

    // A former journal whose header names another target is not this run's.
    journal_with_header(&former, b, "group 7");
    let found = found_in(dir.path(), a, &steps);
    assert!(found.others.iter().any(|o| o.path == former));
    assert_eq!(found.own.len(), 1);
}

#[test]
fn adopting_moves_a_journal_named_as_before_to_its_keyed_name_only() {
    let dir = tempfile::tempdir().unwrap();
    let target = "http://localhost:1 (account 1)";
    let steps = [StepKey {
        step: "people",
        group: "group \"People\"",
    }];
    let former = dir.path().join("people.jsonl");
    journal_with_header(&former, target, "group \"People\"");
    let found = found_in(dir.path(), target, &steps);
    adopt(&found).unwrap();
    assert!(!former.exists());
    let keyed = dir
        .path()
        .join(file_name("people", target, "group \"People\""));
    assert_eq!(header(&keyed).unwrap().target, target);
    // Found again: by its keyed name, with nothing left to move.
    let again = found_in(dir.path(), target, &steps);
    assert_eq!(again.own, vec![(keyed.clone(), keyed)]);
}

#[test]
fn messages_name_the_journal_its_target_and_the_way_back_to_it() {
    let again = Again {
        pipeline_file: Path::new("a/nightly.toml"),
        target_url: Some("http://localhost:2"),
    };
    assert_eq!(
        again.with("--resume"),
        "listpipe run a/nightly.toml --resume --target-url http://localhost:2"
    );
    let other = Elsewhere {
        path: PathBuf::from(".listpipe/journal/a/nightly/people-0123456789abcdef.jsonl"),
        header: Some(Header {
            ev: "header".into(),
            target: "http://localhost:1 (account 3)".into(),
            group: "group \"A\"".into(),
        }),
        group: Some("group \"A\"".into()),
    };
    let refused = belongs_elsewhere(&other, "http://localhost:2 (account 3)", &again).unwrap();
    assert!(
        refused.starts_with(
            "listpipe: the journal .listpipe/journal/a/nightly/people-0123456789abcdef.jsonl belongs to group \"A\" of http://localhost:1 (account 3), not to group \"A\" of http://localhost:2 (account 3); "
        ),
        "{refused}"
    );
    assert!(
        refused.contains(
            "resume it against that target with: listpipe run a/nightly.toml --resume --target-url http://localhost:1, \
             or discard it with: listpipe run a/nightly.toml --discard-journal --target-url http://localhost:1"
        ),
        "{refused}"
    );
    let note = kept_note(&other, "http://localhost:2 (account 3)", &again).unwrap();
    assert_eq!(
        note,
        "listpipe: note: the journal .listpipe/journal/a/nightly/people-0123456789abcdef.jsonl of an unfinished run into group \"A\" of http://localhost:1 (account 3) is kept; \
         resume it with: listpipe run a/nightly.toml --resume --target-url http://localhost:1"
    );
    // Of this very target, but another group: nothing to resume it with.
    let note = kept_note(&other, "http://localhost:1 (account 3)", &again).unwrap();
    assert!(
        note.ends_with(
            "is kept; this run does not write that group: delete the file if that run is over"
        ),
        "{note}"
    );
    // A journal without a header has nothing to refuse a resume by.
    let headless = Elsewhere {
        header: None,
        ..other
    };
    assert!(belongs_elsewhere(&headless, "x", &again).is_none());
    assert!(kept_note(&headless, "x", &again).is_none());
}

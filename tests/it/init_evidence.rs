//! `listpipe init` on exports shaped like tools it has no preset for (issue 55), run
//! unedited against a server on port 0 and exported back over HTTP: consent only from
//! clear evidence, opt-outs taken, names any header can take, legacy encodings, dates with
//! month names and in the order the tool writes them, and questions answered in a
//! terminal. Each fixture reproduces the trait of a real export, written here.

use crate::in_process::run_here;
use crate::init::{Row, emails, init_run_export, row};
use crate::support::TestServer;

fn active(rows: &[Row]) -> Vec<&str> {
    let mut a: Vec<&str> = rows
        .iter()
        .filter(|r| r["active"] == "true")
        .map(|r| r["email"].as_str())
        .collect();
    a.sort();
    a
}

fn deactivated(rows: &[Row]) -> Vec<&str> {
    let mut a: Vec<&str> = rows
        .iter()
        .filter(|r| !r["deactivated"].is_empty())
        .map(|r| r["email"].as_str())
        .collect();
    a.sort();
    a
}

#[tokio::test]
async fn a_customer_records_status_activates_nobody_and_asks_with_its_counts() {
    // Zoho Books contacts: `Status = Active` is the customer record's.
    let t = TestServer::start().await;
    let file = "Created Time,Display Name,EmailID,Status,Contact Type,Payment Terms\n\
2023-01-15 10:22:11,Anna Berg,anna@example.com,Active,customer,Net 30\n\
2023-01-16 11:22:11,Ben Cole,ben@example.com,Active,customer,Net 30\n\
2023-01-17 12:22:11,Cara Diaz,cara@example.com,Inactive,vendor,Due on Receipt\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("Contacts.csv", file.as_bytes())], "Books").await;
    assert_eq!(rows.len(), 3);
    assert!(active(&rows).is_empty(), "{pipeline}");
    assert!(deactivated(&rows).is_empty());
    assert!(
        pipeline
            .contains("# DECIDE: is \"Status\" (Active 2, Inactive 1) consent to receive email?"),
        "{pipeline}"
    );
    assert!(
        pipeline.contains(
            r#"# activated = { column = "Created Time", default = "now", only_if = { column = "Status", equals = "Active" } }"#
        ),
        "{pipeline}"
    );
    assert!(
        summary.contains("consent: is \"Status\" (Active 2, Inactive 1)"),
        "{summary}"
    );
    // The record's status is kept as an attribute, not lost.
    assert_eq!(row(&rows, "cara@example.com")["status"], "Inactive");
    assert_eq!(
        row(&rows, "anna@example.com")["registered"],
        "2023-01-15T10:22:11Z"
    );
}

#[tokio::test]
async fn partner_offers_beside_the_newsletter_column_grant_nothing() {
    // PrestaShop customers: `Opt-in` is partner offers; `Newsletter` is the newsletter.
    let t = TestServer::start().await;
    let file = "ID;Social title;First name;Last name;Email;Enabled;Newsletter;Opt-in;Registration\n\
1;Mr.;John;Doe;john@example.com;1;1;1;2023-03-01 10:00:00\n\
2;Mrs.;Jane;Roe;jane@example.com;1;0;1;2023-03-02 10:00:00\n\
3;Mr.;Max;Muster;max@example.com;0;0;0;2023-03-03 10:00:00\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("customer.csv", file.as_bytes())], "Shop").await;
    assert_eq!(active(&rows), ["john@example.com"], "{pipeline}");
    assert_eq!(
        row(&rows, "john@example.com")["activated"],
        "2023-03-01T10:00:00Z"
    );
    assert!(
        pipeline.contains("\"Opt-in\" is not read as email consent: \"Newsletter\" is the file's"),
        "{pipeline}"
    );
    assert!(
        summary.contains("consent of the 3 rows read: 1 active, 0 deactivated, 2 registered"),
        "{summary}"
    );
}

#[tokio::test]
async fn subscription_statuses_activate_and_deactivate_whatever_their_header() {
    // MailPoet: `List status` and `Global status`; consent only where neither disagrees.
    let t = TestServer::start().await;
    let file = "Email,First name,List status,Global status,Subscribed on\n\
a@example.com,A,subscribed,subscribed,2022-01-01 10:00:00\n\
b@example.com,B,unsubscribed,subscribed,2022-01-02 10:00:00\n\
c@example.com,C,subscribed,unconfirmed,2022-01-03 10:00:00\n\
d@example.com,D,subscribed,bounced,2022-01-04 10:00:00\n\
e@example.com,E,abonniert,abonniert,2022-01-05 10:00:00\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("mailpoet.csv", file.as_bytes())], "News").await;
    assert_eq!(
        active(&rows),
        ["a@example.com", "e@example.com"],
        "{pipeline}"
    );
    assert_eq!(deactivated(&rows), ["b@example.com", "d@example.com"]);
    assert_eq!(
        row(&rows, "a@example.com")["activated"],
        "2022-01-01T10:00:00Z"
    );
}

#[tokio::test]
async fn an_email_flag_without_any_date_activates_at_the_run() {
    // Ghost members: `subscribed_to_emails = true`, `created_at` empty.
    let t = TestServer::start().await;
    let file = "id,email,name,subscribed_to_emails,complimentary_plan,created_at,deleted_at,labels\n\
1,g1@example.com,G One,true,false,,,\n\
2,g2@example.com,G Two,false,false,,,\n\
3,g3@example.com,G Three,true,true,,,vip\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("members.csv", file.as_bytes())], "Ghost").await;
    assert_eq!(
        active(&rows),
        ["g1@example.com", "g3@example.com"],
        "{pipeline}"
    );
    assert!(!row(&rows, "g1@example.com")["activated"].is_empty());
}

#[tokio::test]
async fn a_paid_plan_is_no_consent_and_email_disabled_decides() {
    // Substack signups: `active_subscription` is a paid plan; `email_disabled = false`
    // receives the newsletter.
    let t = TestServer::start().await;
    let file = "email,active_subscription,expiry,plan,email_disabled,created_at\n\
s1@example.com,true,2025-01-01,yearly,false,2021-03-01T10:00:00.000Z\n\
s2@example.com,false,,,false,2021-03-02T10:00:00.000Z\n\
s3@example.com,false,,,true,2021-03-03T10:00:00.000Z\n\
s4@example.com,true,2025-01-01,monthly,,2021-03-04T10:00:00.000Z\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("signups.csv", file.as_bytes())], "Substack").await;
    assert_eq!(
        active(&rows),
        ["s1@example.com", "s2@example.com"],
        "{pipeline}"
    );
    assert_eq!(deactivated(&rows), ["s3@example.com"]);
    assert_eq!(
        row(&rows, "s2@example.com")["activated"],
        "2021-03-02T10:00:00Z"
    );
}

#[tokio::test]
async fn sms_and_account_flags_grant_nothing_and_opt_outs_win() {
    let t = TestServer::start().await;
    let file = "Email,Accepts SMS Marketing,Activated,Newsletter,Email Opt Out\n\
a@example.com,yes,true,yes,no\n\
b@example.com,yes,true,no,no\n\
c@example.com,no,false,yes,yes\n";
    let (pipeline, summary, rows) =
        init_run_export(&t, &[("crm.csv", file.as_bytes())], "CRM").await;
    assert_eq!(active(&rows), ["a@example.com"], "{pipeline}");
    assert_eq!(deactivated(&rows), ["c@example.com"]);
    assert!(
        summary.contains("1 row(s) marked subscribed also record an opt-out"),
        "{summary}"
    );
}

#[tokio::test]
async fn german_japanese_and_digit_headers_make_attribute_names_listpipe_accepts() {
    let t = TestServer::start().await;
    let file = "E-Mail;Name (Adressattyp natürl. Person);0;名前;Größe\n\
x@example.de;Müller;1;山田;42\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("kunden.csv", file.as_bytes())], "Kunden").await;
    assert!(
        pipeline
            .contains(r#"name_adressattyp_natuerl_person = "Name (Adressattyp natürl. Person)""#),
        "{pipeline}"
    );
    let x = row(&rows, "x@example.de");
    assert_eq!(x["name_adressattyp_natuerl_person"], "Müller");
    assert_eq!(x["ming_qian"], "山田");
    assert_eq!(x["c_0"], "1");
    assert_eq!(x["groesse"], "42");
}

#[tokio::test]
async fn a_shift_jis_export_is_read_as_shift_jis() {
    let t = TestServer::start().await;
    let text = "メールアドレス,姓,名,会社\n\
yamada@example.jp,山田,太郎,株式会社サンプル\n\
suzuki@example.jp,鈴木,花子,東京商事株式会社\n\
sato@example.jp,佐藤,次郎,大阪電機工業\n";
    let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(text);
    let (pipeline, _, rows) = init_run_export(&t, &[("address.csv", &bytes)], "JP").await;
    assert!(pipeline.contains("encoding = \"shift_jis\""), "{pipeline}");
    assert_eq!(emails(&rows).len(), 3);
    let yamada = row(&rows, "yamada@example.jp");
    assert!(
        yamada.values().any(|v| v == "株式会社サンプル"),
        "{yamada:?}"
    );
}

#[tokio::test]
async fn creation_dates_with_month_names_are_the_registration() {
    let t = TestServer::start().await;
    let file = "email,Signup Date,Last seen\n\
m1@example.com,\"September 15, 2014 5:59:48 PM\",15 Jan 2023\n\
m2@example.com,\"May 11, 2019 11:21 AM\",3 Feb 2023\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("members.csv", file.as_bytes())], "Members").await;
    assert_eq!(
        row(&rows, "m1@example.com")["registered"],
        "2014-09-15T17:59:48Z",
        "{pipeline}"
    );
    assert_eq!(
        row(&rows, "m2@example.com")["registered"],
        "2019-05-11T11:21:00Z"
    );
    assert_eq!(row(&rows, "m1@example.com")["last_seen"], "2023-01-15");
}

#[tokio::test]
async fn a_magento_date_that_reads_both_ways_is_read_month_first() {
    let t = TestServer::start().await;
    let file = "ID,Name,Email,Group,Customer Since,Web Site,Account Created in\n\
1,Veronica Costello,roni@example.com,General,5/6/2012 15:53,Main Website,Default Store View\n\
2,John Smith,john@example.com,General,5/6/2012 15:53,Main Website,Default Store View\n";
    let (pipeline, _, rows) =
        init_run_export(&t, &[("customer.csv", file.as_bytes())], "Magento").await;
    assert_eq!(rows.len(), 2, "{pipeline}");
    assert_eq!(
        row(&rows, "roni@example.com")["registered"],
        "2012-05-06T15:53:00Z"
    );
    assert!(
        pipeline.contains("as Magento writes its dates"),
        "{pipeline}"
    );
}

/// Runs `listpipe ARGS` in `dir` with standard input and error on a pseudo-terminal (as a
/// person at a terminal would), answering each prompt whose text appears with its keys,
/// in order. Returns what the terminal showed and the exit code. Bounded: 60 s.
fn in_terminal(dir: &std::path::Path, args: &[&str], answers: &[(&str, &str)]) -> (String, i32) {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::Stdio;
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two new descriptors, which are owned below and closed once.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and nothing else owns them.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = crate::support::binary()
        .current_dir(dir)
        .args(args)
        .env_remove("LISTPIPE_URL")
        .env_remove("LISTPIPE_TOKEN")
        .env("TERM", "xterm")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut master = std::fs::File::from(master);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut screen = String::new();
    let mut next = 0;
    let mut seen_upto = 0;
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out; the terminal showed:\n{screen}"
        );
        let mut fds = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&master),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut fds, 1, 200) };
        if ready > 0 {
            let mut buf = [0u8; 4096];
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break, // EIO: the child closed the terminal
                Ok(n) => screen.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        } else if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if let Some((prompt, keys)) = answers.get(next)
            && let Some(at) = screen[seen_upto..].find(prompt)
        {
            seen_upto += at + prompt.len();
            next += 1;
            // Let the prompt finish drawing before the keys arrive.
            std::thread::sleep(std::time::Duration::from_millis(150));
            master.write_all(keys.as_bytes()).unwrap();
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(
        next,
        answers.len(),
        "not every question was asked:\n{screen}"
    );
    (screen, status.code().unwrap_or(-1))
}

#[tokio::test]
async fn in_a_terminal_init_asks_and_writes_the_answers_into_the_pipeline() {
    let t = TestServer::start().await;
    let dir = t.dir.path().to_path_buf();
    std::fs::write(
        dir.join("contacts.csv"),
        "email,Status,signup\na@example.com,Active,03/04/2025\nb@example.com,Inactive,05/05/2025\n",
    )
    .unwrap();
    let (screen, code) = tokio::task::spawn_blocking(move || {
        in_terminal(
            &dir,
            &["init", "contacts.csv", "--group", "G", "--out", "p.toml"],
            &[
                // Day or month first: the third choice, month first.
                ("How does the file write its dates?", "\x1b[B\x1b[B\r"),
                ("Is this consent to receive email?", "y"),
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("\"Status\": Active 1, Inactive 1."),
        "{screen}"
    );
    let pipeline = std::fs::read_to_string(t.dir.path().join("p.toml")).unwrap();
    assert!(
        pipeline.contains(r#"registered = { column = "signup", format = "%m/%d/%Y" }"#),
        "{pipeline}"
    );
    assert!(
        pipeline.contains("\"signup\" is written month first (%m/%d/%Y): answered at init."),
        "{pipeline}"
    );
    assert!(
        pipeline.contains("is consent to receive email: answered at init"),
        "{pipeline}"
    );
    assert!(!pipeline.contains("# DECIDE:"), "{pipeline}");
    let (code, _, stderr) = run_here(&t, &t.dir.path().join("p.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let rows = t.receivers_of("G").await;
    assert_eq!(rows.len(), 2);
}

#[tokio::test]
async fn without_a_terminal_init_never_waits_and_writes_decide() {
    let t = TestServer::start().await;
    std::fs::write(
        t.dir.path().join("contacts.csv"),
        "email,Status\na@example.com,Active\n",
    )
    .unwrap();
    let dir = t.dir.path().to_path_buf();
    // `--interactive` without a terminal: the prompt cannot be shown, nothing waits.
    let out = tokio::task::spawn_blocking(move || {
        crate::import::listpipe(
            &dir,
            &["init", "contacts.csv", "--interactive", "--out", "p.toml"],
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let pipeline = std::fs::read_to_string(t.dir.path().join("p.toml")).unwrap();
    assert!(pipeline.contains("# DECIDE: is \"Status\""), "{pipeline}");
}

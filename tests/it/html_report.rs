//! `check --html` and `run --html` (issue 60): one self-contained page with
//! the same numbers as the JSON report, nothing fetched, every value escaped.

use crate::authorize::chromium;
use crate::import::{listpipe, run};
use crate::support::TestServer;
use serde_json::Value;
use std::path::Path;

const HOSTILE: &str = "<script>alert(1)</script>";

/// Two bad addresses (one hostile), a duplicate, a hostile first name in a
/// row that is sent, and three good receivers.
fn fixture(dir: &Path) -> std::path::PathBuf {
    std::fs::write(
        dir.join("people.csv"),
        format!(
            "email,first,birthday\n\
             a@example.com,Ann,1990-05-01\n\
             \"{HOSTILE}\",Eve,\n\
             b@example.com,{HOSTILE},1980-01-02\n\
             not-an-address,Bob,\n\
             a@example.com,Ann again,\n\
             c@example.com,Cid,1975-12-31\n"
        ),
    )
    .unwrap();
    let path = dir.join("news.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"news\"\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.global_attributes]\nfirstname = \"first\"\n\
         birthday = { column = \"birthday\", type = \"date\" }\n",
    )
    .unwrap();
    path
}

/// What every page must be: a page of its own, nothing loaded from elsewhere,
/// the hostile value shown as text only.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("name=\"viewport\""));
    assert!(html.contains("<svg"));
    let lower = html.to_lowercase();
    for resource in ["<script", "src=", "href=", "url(", "@import", "<link"] {
        assert!(!lower.contains(resource), "{resource} in {html}");
    }
    assert!(!html.contains(HOSTILE));
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(html.len() < 300 * 1024, "{} bytes", html.len());
}

/// A bar of the page's charts: `<title>LABEL: N</title>`.
fn bar(label: &str, n: &Value) -> String {
    format!("<title>{label}: {n}</title>")
}

#[tokio::test]
async fn check_html_holds_the_numbers_of_the_report_and_escapes_hostile_values() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let path = fixture(dir);
    let out = listpipe(dir, &["check", "news.toml", "--html", "check.html"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("check.html")).unwrap();
    assert_self_contained(&html);

    // The same rows through `run --dry-run --report`: the same numbers.
    let (_, report, stderr) = run(&t, &path, &["--dry-run"]).await;
    let step = &report["steps"][0];
    let prepare = &step["prepare"];
    assert_eq!(prepare["rows_read"], 6, "{stderr}");
    assert_eq!(prepare["duplicates"], 1, "{report}");
    let rejected: u64 = prepare["rejected"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(rejected, 2, "{report}");
    assert!(
        html.contains(&bar("rows read", &prepare["rows_read"])),
        "{html}"
    );
    assert!(html.contains(&bar("rejected", &Value::from(rejected))));
    assert!(html.contains(&bar("duplicates", &prepare["duplicates"])));
    for (reason, n) in prepare["rejected"].as_object().unwrap() {
        assert!(html.contains(&bar(reason, n)), "{reason} in {html}");
    }
    // What a check would send is what the dry run would create (an empty group).
    assert!(html.contains(&bar("ready to send", &step["import"]["created"])));
    // The header, and the profile of the columns as sent.
    assert!(html.contains("people.csv"));
    assert!(html.contains("exit 1"));
    assert!(html.contains("columns as sent"));
    assert!(html.contains("<code>g:firstname</code>"), "{html}");
    // b@example.com's 1980-01-02 to c@example.com's 1975-12-31 (a@'s 1990 is
    // the duplicate's first row, kept).
    assert!(html.contains("1975-12-31 – 1990-05-01"), "{html}");
}

#[tokio::test]
async fn run_html_shows_what_the_run_created_and_its_requests() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let path = fixture(dir);
    let page = dir.join("run.html");
    let (code, report, stderr) = run(&t, &path, &["--html", page.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{stderr}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let import = &report["steps"][0]["import"];
    assert_eq!(import["created"], 3, "{report}");
    assert!(html.contains(&bar("created", &import["created"])), "{html}");
    assert!(html.contains(&bar("updated", &import["updated"])));
    assert!(html.contains(&bar("failed", &import["failed"])));
    assert!(html.contains("<h2>requests</h2>"));
    // The columns as sent, profiled while the run prepared them.
    assert!(html.contains("<code>g:firstname</code>"), "{html}");
    assert!(html.contains("1975-12-31 – 1990-05-01"), "{html}");
    let sent = &report["requests"]["sent"];
    assert!(
        html.contains(&format!("<dt>sent</dt><dd>{sent} (")),
        "{html}"
    );
}

/// The page in a headless Chromium at a phone's width: it loads nothing
/// (no resource entries), draws its charts, fits the screen without a
/// horizontal scroll, and a screenshot of it is taken (into the temp dir).
#[tokio::test]
async fn the_page_renders_in_a_headless_chromium_on_a_phone() {
    use base64::Engine as _;
    let Some(exe) = chromium::find_or_skip() else {
        return;
    };
    let t = TestServer::start().await;
    let dir = t.dir.path();
    fixture(dir);
    let out = listpipe(dir, &["check", "news.toml", "--html", "check.html"]);
    assert_eq!(out.status.code(), Some(1));
    let url = format!("file://{}", dir.join("check.html").display());
    let mut browser = chromium::Browser::launch(&exe).await;
    let page = browser.open("about:blank").await;
    browser
        .command(
            &page,
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true}),
        )
        .await;
    browser
        .command(&page, "Page.navigate", serde_json::json!({"url": url}))
        .await;
    browser
        .wait_for(
            &page,
            "document.readyState === 'complete' && document.querySelectorAll('svg').length >= 2",
        )
        .await;
    let loaded = browser
        .eval(&page, "performance.getEntriesByType('resource').length")
        .await;
    assert_eq!(loaded, 0, "the page fetched something");
    let fits = browser
        .eval(
            &page,
            "document.documentElement.scrollWidth <= window.innerWidth + 1",
        )
        .await;
    assert_eq!(
        fits,
        Value::Bool(true),
        "the page scrolls sideways on a phone"
    );
    let shot = browser
        .command(
            &page,
            "Page.captureScreenshot",
            serde_json::json!({"format": "png", "captureBeyondViewport": true}),
        )
        .await;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    std::fs::write(dir.join("check.png"), &png).unwrap();
    if let Some(keep) = std::env::var_os("LISTPIPE_HTML_SCREENSHOT") {
        std::fs::write(keep, &png).unwrap();
    }
    browser.close().await;
}

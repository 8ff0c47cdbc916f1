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
    // The run's pace over time: every request sent in one of its intervals.
    let timeline = report["requests"]["timeline"].as_array().unwrap();
    assert!(!timeline.is_empty(), "{report}");
    let in_timeline: u64 = timeline.iter().map(|s| s["sent"].as_u64().unwrap()).sum();
    assert_eq!(Some(in_timeline), sent.as_u64(), "{report}");
    assert!(html.contains("<svg class=\"pace\""), "{html}");
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
    // Console messages, script errors, the browser's own log and every
    // request, from here on.
    for domain in ["Runtime.enable", "Log.enable", "Network.enable"] {
        browser.command(&page, domain, serde_json::json!({})).await;
    }
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
    // The only request is the page's own file; nothing on the console.
    let requests: Vec<&str> = browser
        .events("Network.requestWillBeSent")
        .iter()
        .filter_map(|e| e["params"]["request"]["url"].as_str())
        .collect();
    assert_eq!(requests, [url.as_str()], "requests from the page");
    assert_eq!(
        browser.events("Runtime.exceptionThrown"),
        Vec::<&Value>::new()
    );
    let console: Vec<&Value> = browser
        .events("Runtime.consoleAPICalled")
        .into_iter()
        .filter(|e| {
            matches!(
                e["params"]["type"].as_str(),
                Some("error" | "warning" | "assert")
            )
        })
        .collect();
    assert!(console.is_empty(), "console: {console:?}");
    let logged: Vec<&Value> = browser
        .events("Log.entryAdded")
        .into_iter()
        .filter(|e| {
            matches!(
                e["params"]["entry"]["level"].as_str(),
                Some("error" | "warning")
            )
        })
        .collect();
    assert!(logged.is_empty(), "the browser's log: {logged:?}");
    // The charts: the funnel and the reject reasons, as inline SVG.
    let charts = browser
        .eval(
            &page,
            "document.querySelectorAll('svg rect, svg path, svg line').length",
        )
        .await;
    assert!(charts.as_u64().unwrap_or(0) >= 4, "chart marks: {charts}");
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

/// Consent from a status column, a typo domain, a role address, tags and
/// orders in two currencies, with `[report] html` in the pipeline file
/// instead of `--html`.
fn shop_fixture(dir: &Path) -> std::path::PathBuf {
    std::fs::write(
        dir.join("shop.csv"),
        "email,first,status,joined,left,tags,points,order,price,currency\n\
         ann@gmail.com,Ann,subscribed,2024-01-05,,vip|news,10,A1,19.90,EUR\n\
         bob@gmial.com,Bob,subscribed,2024-03-07,,news,25,A2,5.00,EUR\n\
         info@shop.de,Shop,unsubscribed,2023-11-01,2024-02-02,,3,A3,7.50,USD\n\
         dan@example.com,Dan,pending,,,vip,,,,\n\
         eve@example.com,Eve,subscribed,2022-12-24,,news,100,A4,1.00,EUR\n\
         bad-address,X,subscribed,2024-01-01,,,,,,\n",
    )
    .unwrap();
    let path = dir.join("shop.toml");
    std::fs::write(
        &path,
        "[report]\nhtml = \"pages/shop.html\"\n\
         [[import]]\nname = \"shop\"\nsource = \"shop.csv\"\ngroup = \"Shop\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         activated = { column = \"joined\", only_if = { column = \"status\", equals = \"subscribed\" } }\n\
         deactivated = { column = \"left\", only_if = { column = \"status\", equals = \"unsubscribed\" } }\n\
         registered = \"joined\"\n\
         [import.global_attributes]\nfirstname = \"first\"\npoints = { column = \"points\", type = \"number\" }\n\
         [import.tags]\ncolumns = [\"tags\"]\nseparator = \"|\"\n\
         [import.orders]\norder_id = \"order\"\nprice = \"price\"\ncurrency = \"currency\"\n",
    )
    .unwrap();
    path
}

#[tokio::test]
async fn the_page_shows_consent_addresses_tags_orders_and_the_columns_charts() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let path = shop_fixture(dir);
    let page = dir.join("pages/shop.html");
    std::fs::create_dir_all(dir.join("pages")).unwrap();
    let out = listpipe(dir, &["check", "shop.toml"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Consent: three subscribed with a date, one unsubscribed, Dan with
    // nothing (created registered, never active on a guess).
    assert!(
        html.contains(&bar("active (activated)", &Value::from(3))),
        "{html}"
    );
    assert!(html.contains(&bar("deactivated", &Value::from(1))));
    assert!(html.contains(&bar("no state of their own", &Value::from(1))));
    assert!(
        html.contains(
            "<code>activated</code> from column `joined`, only where `status` is one of subscribed"
        ),
        "{html}"
    );
    // Addresses: the typo with its suggestion, the role address, the domains.
    assert!(
        html.contains("<td><code>gmial.com</code></td><td><code>gmail.com</code></td>"),
        "{html}"
    );
    assert!(html.contains("role addresses: 1 (info@ 1)"), "{html}");
    assert!(html.contains(&bar("example.com", &Value::from(2))));
    // Tags and orders.
    assert!(html.contains(&bar("news", &Value::from(3))));
    assert!(html.contains("4 rows with tags, 5 tags in all"), "{html}");
    assert!(
        html.contains("<tr><td>EUR</td><td class=\"n\">3</td><td class=\"n\">25.90</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<tr><td>USD</td><td class=\"n\">1</td><td class=\"n\">7.50</td></tr>"));
    // Dates over time and the numbers' distribution.
    assert!(html.contains("<code>activated</code> over time"), "{html}");
    assert!(
        html.contains("<code>g:points</code>: min 3, median 17.50, max 100"),
        "{html}"
    );
    assert!(html.contains("<svg class=\"histogram\""));

    // After `run --dry-run` (no --html: the pipeline file's page), the same
    // figures as the JSON report's.
    let (code, report, stderr) = run(&t, &path, &["--dry-run"]).await;
    assert_eq!(code, 1, "{stderr}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained_page(&html);
    let step = &report["steps"][0];
    assert_eq!(step["prepare"]["orders_accepted"], 4, "{report}");
    assert!(
        html.contains("orders: 4 read, 4 accepted, 0 rejected"),
        "{html}"
    );
    assert!(html.contains(&format!(
        "<li>on the blacklist (not sent): {}</li>",
        step["import"]["blocked"]
    )));
    assert!(html.contains(&bar("to create", &step["import"]["created"])));
}

/// [`assert_self_contained`] without the hostile value (this fixture has none).
fn assert_self_contained_page(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    let lower = html.to_lowercase();
    for resource in ["<script", "src=", "href=", "url(", "@import", "<link"] {
        assert!(!lower.contains(resource), "{resource} in {html}");
    }
    assert!(html.len() < 300 * 1024, "{} bytes", html.len());
}

/// The quickstart's page holds the figures of its JSON report, step by step.
#[tokio::test]
async fn the_quickstart_page_holds_the_figures_of_its_report() {
    let t = TestServer::start().await;
    let page = t.dir.path().join("quickstart.html");
    let (code, report, stderr) = run(
        &t,
        &crate::import::repo("pipelines/quickstart.toml"),
        &["--html", page.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained_page(&html);
    for step in report["steps"].as_array().unwrap() {
        let name = step["name"].as_str().unwrap();
        assert!(html.contains(&format!("<h2>{name} ")), "{name} in {html}");
        let prepare = &step["prepare"];
        if step["kind"] == "export" {
            continue;
        }
        assert!(
            html.contains(&bar("rows read", &prepare["rows_read"])),
            "{name}"
        );
        for (reason, n) in prepare["rejected"].as_object().unwrap() {
            assert!(html.contains(&bar(reason, n)), "{name}: {reason}");
        }
        for (outcome, label) in [
            ("created", "created"),
            ("updated", "updated"),
            ("added", "added"),
        ] {
            for kind in ["import", "blacklist"] {
                if let Some(n) = step[kind].get(outcome) {
                    assert!(html.contains(&bar(label, n)), "{name}: {kind}.{outcome}");
                }
            }
        }
    }
    assert!(html.contains(&format!(
        "<dt>sent</dt><dd>{} (",
        report["requests"]["sent"]
    )));
}

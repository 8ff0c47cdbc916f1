//! A headless Chromium (Debian's `chromium`) driven over the DevTools
//! protocol, to act as the person on the authorization page: it types into
//! the fields and clicks the button, and the page's own form does the rest.
//!
//! The protocol runs over `--remote-debugging-pipe` (JSON messages ending
//! in NUL on file descriptors 3 and 4), so no WebSocket client and no port
//! is needed: `sh` moves the child's stdin and stdout pipes to fds 3 and 4.
//!
//! Missing Chromium fails the test in CI (`CI=true`; `.ci/run` installs it)
//! and skips it with a note elsewhere.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long any one wait on the browser may take.
const WAIT: Duration = Duration::from_secs(30);

/// The Chromium to drive, or `None` (with a note) to skip outside CI.
pub(crate) fn find_or_skip() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "chromium is missing: CI must install it (apt-get install -y chromium; see .ci/run)"
        );
        eprintln!("note: SKIPPED the headless-Chromium test: chromium is not installed");
    }
    found
}

/// The first line a child prints on stdout.
pub(crate) async fn first_line(stdout: ChildStdout) -> String {
    let mut line = String::new();
    tokio::time::timeout(WAIT, BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("the child prints a line")
        .unwrap();
    line.trim().to_string()
}

/// A page the browser holds open (a DevTools session on it).
pub(crate) struct Page(String);

pub(crate) struct Browser {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    next_id: u64,
    profile: tempfile::TempDir,
    /// The events that came while waiting for answers, in order.
    events: Vec<Value>,
}

impl Browser {
    pub(crate) async fn launch(exe: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(profile.path().join("chromium.log")).unwrap();
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#)
            .arg(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--no-proxy-server",
                "--password-store=basic",
                "--window-size=800,700",
                "--remote-debugging-pipe",
            ])
            .arg(format!(
                "--user-data-dir={}",
                profile.path().join("profile").display()
            ))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("chromium starts");
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        Browser {
            child,
            to,
            from,
            next_id: 0,
            profile,
            events: Vec::new(),
        }
    }

    /// What Chromium logged, for a failure message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromium.log")).unwrap_or_default()
    }

    /// The events of `method` so far (`Runtime.exceptionThrown`,
    /// `Log.entryAdded`...: a domain sends them once enabled).
    pub(crate) fn events(&self, method: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["method"] == json!(method))
            .collect()
    }

    /// Sends one command and waits for its answer (events on the way are
    /// kept, see [`Browser::events`]). `Err` is the protocol's error message.
    async fn send(
        &mut self,
        page: Option<&Page>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(p) = page {
            msg["sessionId"] = json!(p.0);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        let events = &mut self.events;
        let io = async {
            self.to.write_all(&bytes).await?;
            self.to.flush().await?;
            loop {
                let mut buf = Vec::new();
                if self.from.read_until(0, &mut buf).await? == 0 {
                    return Err(std::io::Error::other("chromium closed the pipe"));
                }
                buf.pop();
                let answer: Value = serde_json::from_slice(&buf).map_err(std::io::Error::other)?;
                if answer["id"] == json!(id) {
                    return Ok(answer);
                }
                if answer.get("id").is_none() {
                    events.push(answer);
                }
            }
        };
        let answer = match tokio::time::timeout(WAIT, io).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => panic!("DevTools {method}: {e}\n{}", self.log()),
            Err(_) => panic!("DevTools {method}: no answer in {WAIT:?}\n{}", self.log()),
        };
        match answer.get("error") {
            Some(e) => Err(e["message"].as_str().unwrap_or("error").to_string()),
            None => Ok(answer["result"].clone()),
        }
    }

    /// Opens `url` in a new tab.
    pub(crate) async fn open(&mut self, url: &str) -> Page {
        let target = self
            .send(None, "Target.createTarget", json!({"url": url}))
            .await
            .unwrap();
        let session = self
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await
            .unwrap();
        Page(session["sessionId"].as_str().unwrap().to_string())
    }

    async fn try_eval(&mut self, page: &Page, expression: &str) -> Result<Value, String> {
        let r = self
            .send(
                Some(page),
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await?;
        match r.get("exceptionDetails") {
            Some(e) => Err(e.to_string()),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    /// The value of a JavaScript expression in the page.
    pub(crate) async fn eval(&mut self, page: &Page, expression: &str) -> Value {
        self.try_eval(page, expression).await.unwrap()
    }

    /// Polls until the expression is truthy (a page that is navigating
    /// answers errors meanwhile); answers its value.
    pub(crate) async fn wait_for(&mut self, page: &Page, expression: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut last = Value::Null;
        while tokio::time::Instant::now() < deadline {
            match self.try_eval(page, expression).await {
                Ok(v) if !matches!(v, Value::Null | Value::Bool(false)) => return v,
                Ok(v) => last = v,
                Err(e) => last = Value::String(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let html = self
            .try_eval(
                page,
                "location.href + '\\n' + document.documentElement.outerHTML",
            )
            .await;
        panic!("waited {WAIT:?} for `{expression}` (last: {last}); page: {html:?}");
    }

    /// One DevTools command to the page, its result
    /// (`Page.captureScreenshot`, `Emulation.setDeviceMetricsOverride`...).
    pub(crate) async fn command(&mut self, page: &Page, method: &str, params: Value) -> Value {
        self.send(Some(page), method, params).await.unwrap()
    }

    /// Focuses the field and types into it, as a keyboard would.
    pub(crate) async fn type_into(&mut self, page: &Page, selector: &str, text: &str) {
        let focused = self
            .eval(
                page,
                &format!("(e => (e.focus(), document.activeElement === e))(document.querySelector({selector:?}))"),
            )
            .await;
        assert_eq!(focused, Value::Bool(true), "{selector} takes the focus");
        self.send(Some(page), "Input.insertText", json!({"text": text}))
            .await
            .unwrap();
    }

    /// Clicks the middle of the element with the mouse.
    pub(crate) async fn click(&mut self, page: &Page, selector: &str) {
        let at = self
            .eval(
                page,
                &format!(
                    "(r => [r.x + r.width / 2, r.y + r.height / 2])(document.querySelector({selector:?}).getBoundingClientRect())"
                ),
            )
            .await;
        let (x, y) = (at[0].clone(), at[1].clone());
        for (kind, button) in [
            ("mouseMoved", "none"),
            ("mousePressed", "left"),
            ("mouseReleased", "left"),
        ] {
            self.send(
                Some(page),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": button, "clickCount": 1}),
            )
            .await
            .unwrap();
        }
    }

    pub(crate) async fn close(mut self) {
        // No answer to wait for: the browser goes, and the pipe with it.
        let _ = self
            .to
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\",\"params\":{}}\0")
            .await;
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

//! The one-shot loopback listener of the login (RFC 8252 §7.3): it
//! listens on `http://127.0.0.1:PORT/callback` for the browser's return from
//! the authorization page, hands the query to the login, and shows the
//! browser the login's outcome once it is known.
//!
//! Only an answer carrying this login's `state` counts: anything else that
//! reaches the port (another tab, another program) is turned away and the
//! wait goes on.

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The target of this module's log events, named as the module was before it
/// moved out of the command line: what `LISTPIPE_LOG` filters on stays as it was.
const LOG_TARGET: &str = "listpipe::cli::auth::callback";

/// The path the authorization server sends the browser back to.
pub(super) const PATH: &str = "/callback";

/// What the browser is shown at the end.
pub(super) struct Page {
    pub ok: bool,
    pub message: String,
}

/// One return of the browser, waiting for its page.
struct Arrival {
    query: Vec<(String, String)>,
    reply: oneshot::Sender<Page>,
}

/// The authorization server's answer for this login.
pub(super) enum Answer {
    /// Approved: exchange the code, then [`Pending::finish`] the browser's page.
    Code(String, Pending),
    /// Refused or failed: the `error` (and `error_description`) it sent.
    Error(String),
}

/// The browser's request, held open until the login knows how it ended.
pub(super) struct Pending(oneshot::Sender<Page>);

impl Pending {
    pub(super) fn finish(self, ok: bool, message: impl Into<String>) {
        // Deliberately ignored (here and for every page below): the
        // browser's request is gone, and nobody is left to show it to.
        let _ = self.0.send(Page {
            ok,
            message: message.into(),
        });
    }
}

pub(super) struct Listener {
    port: u16,
    arrivals: mpsc::Receiver<Arrival>,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Listens on a free port of 127.0.0.1.
    pub(super) async fn bind() -> std::io::Result<Listener> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (tx, arrivals) = mpsc::channel::<Arrival>(8);
        let app = Router::new().route(PATH, get(arrive)).with_state(tx);
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(target: LOG_TARGET, error = %e, "the login's callback listener stopped");
            }
        });
        Ok(Listener {
            port,
            arrivals,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// The redirect URI to send to the authorization page.
    pub(super) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits for the browser to come back with `state`; `None` on timeout.
    pub(super) async fn wait(&mut self, state: &str, timeout: Duration) -> Option<Answer> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrival = tokio::time::timeout_at(deadline, self.arrivals.recv())
                .await
                .ok()??;
            let get = |key: &str| {
                arrival
                    .query
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
            };
            if get("state").as_deref() != Some(state) {
                let _ = arrival.reply.send(Page {
                    ok: false,
                    message: "This answer does not belong to the login that is waiting \
                              (its state does not match). Nothing was done."
                        .into(),
                });
                continue;
            }
            if let Some(error) = get("error") {
                let detail = match get("error_description") {
                    Some(d) => format!("{error}: {d}"),
                    None => error,
                };
                let _ = arrival.reply.send(Page {
                    ok: false,
                    message: format!("The login was not approved ({detail})."),
                });
                return Some(Answer::Error(detail));
            }
            match get("code").filter(|c| !c.is_empty()) {
                Some(code) => return Some(Answer::Code(code, Pending(arrival.reply))),
                None => {
                    let _ = arrival.reply.send(Page {
                        ok: false,
                        message: "The answer carries no code.".into(),
                    });
                    return Some(Answer::Error("invalid_request: no code".into()));
                }
            }
        }
    }

    /// Stops listening once the last page is out (or after two seconds).
    pub(super) async fn close(mut self) {
        // Deliberately ignored: a listener already gone needs no stop,
        // and one that does not stop in time is aborted below.
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut self.task).await;
        self.task.abort();
    }
}

async fn arrive(State(tx): State<mpsc::Sender<Arrival>>, RawQuery(q): RawQuery) -> Response {
    let query = form_urlencoded::parse(q.as_deref().unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let (reply, page) = oneshot::channel();
    let page = match tx.send(Arrival { query, reply }).await {
        Ok(()) => page.await.ok(),
        Err(_) => None,
    };
    let page = page.unwrap_or(Page {
        ok: false,
        message: "listpipe is no longer waiting for this login.".into(),
    });
    render(page)
}

fn render(page: Page) -> Response {
    let title = if page.ok { "Logged in" } else { "Login failed" };
    let body = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>listpipe: {title}</title>\n\
         <style>body {{ font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; }}</style>\n\
         </head>\n<body>\n<main>\n<h1>{title}</h1>\n<p role=\"status\">{}</p>\n\
         <p>You can close this window and go back to the terminal.</p>\n</main>\n</body>\n</html>\n",
        escape(&page.message)
    );
    let status = if page.ok {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    let mut res = (status, body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// The message may quote the authorization server's `error_description`.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

//! The target down as a whole (issue 58): while its database restarts or
//! fails over, a target answers every request `503 Service Unavailable`
//! (a proxy in front of it `502` or `504`). Measured before: each row
//! spent its retries on those answers and failed, and a 30-second database
//! stop failed 68,606 of 97,000 rows of a batch import. Such answers across
//! requests are an *outage*: the run waits it out instead of spending rows.
//!
//! Decisions:
//! - The target is down after [`DOWN_AFTER`] such answers in a row (no
//!   other answer between them) spread over [`DOWN_OVER`] at least: a busy
//!   server's odd 503 among successes is back-pressure (the window
//!   shrinks), not an outage.
//! - While it is down, no request is sent but one, the *probe*: the first
//!   request to come after the probe's time. Every other request waits (in
//!   its place, so no new row is taken), and none spends its retries. A
//!   probe that is answered otherwise (a success, a 4xx: the target serves
//!   again) ends the outage and every waiting request goes; one answered
//!   503 again sets the next probe a backoff later: doubling from 1 s to
//!   [`PROBE_MAX`], never sooner than its `Retry-After`.
//! - The run gives up after `[target] max_outage_secs` (default
//!   [`MAX_OUTAGE`]): the run's breaker opens, and the run stops with exit 3
//!   and its rows in the journal for `--resume`. A target that stops
//!   answering at all (nothing listening) is the breaker's, within seconds
//!   as before.
//! - The log says when the target went down, every [`SAY_EVERY`] while it
//!   is down, and when it came back; the report lists each outage.

use listpipe_client::ClientError;
use serde::Serialize;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Unavailable answers in a row before the target is down.
pub const DOWN_AFTER: u32 = 5;
/// ... spread over at least this long.
pub const DOWN_OVER: Duration = Duration::from_secs(1);
/// The longest wait between two probes of a target that is down.
pub const PROBE_MAX: Duration = Duration::from_secs(10);
/// How long a run waits for a target that is down, by default.
pub const MAX_OUTAGE: Duration = Duration::from_secs(600);
/// How often the log says the target is still down.
pub const SAY_EVERY: Duration = Duration::from_secs(60);

/// One outage, for the report's `requests.outages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutageReport {
    /// Milliseconds from the run's first request to the first answer that
    /// began it.
    pub after_ms: u64,
    /// How long the target was down (until the probe it answered, or the
    /// end of the run), milliseconds.
    pub lasted_ms: u64,
    /// The answer that said so, e.g. `HTTP 503: Service Unavailable: …`.
    pub cause: String,
    /// The run gave up waiting (`max_outage_secs`).
    pub gave_up: bool,
}

/// Whether an answer says the target as a whole cannot serve.
pub fn unavailable(e: &ClientError) -> bool {
    matches!(e.status(), Some(502..=504))
}

pub(super) struct Outage {
    max: Duration,
    state: Mutex<State>,
    /// Woken when an outage ends or a probe's turn may have come.
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Unavailable answers in a row, and when the first of them came.
    streak: u32,
    streak_since: Option<Instant>,
    down: Option<Down>,
    done: Vec<OutageReport>,
}

struct Down {
    since: Instant,
    cause: String,
    /// The last unavailable answer (what a run that gives up reports).
    last: ClientError,
    /// A probe is in flight.
    probing: bool,
    next_probe: Instant,
    probes: u32,
    said: Instant,
}

/// What a request may do now.
pub(super) enum Turn {
    Go,
    /// Wait until then (or a change), and ask again.
    Wait(Instant),
    /// The target has been down longer than the run waits: the last answer.
    GiveUp(ClientError),
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A copy of an unavailable answer (an API error: no transport source).
fn copy(e: &ClientError) -> ClientError {
    match e {
        ClientError::Api {
            method,
            path,
            status,
            message,
            retry_after,
        } => ClientError::Api {
            method: method.clone(),
            path: path.clone(),
            status: *status,
            message: message.clone(),
            retry_after: *retry_after,
        },
        other => ClientError::Api {
            method: String::new(),
            path: String::new(),
            status: other.status().unwrap_or(503),
            message: listpipe_base::cause::flat(other),
            retry_after: other.retry_after(),
        },
    }
}

impl Outage {
    pub(super) fn new(max: Duration) -> Outage {
        Outage {
            max,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    /// Whether the target is down now.
    pub(super) fn is_down(&self) -> bool {
        lock(&self.state).down.is_some()
    }

    /// How long the run waits for a target that is down.
    pub(super) fn max(&self) -> Duration {
        self.max
    }

    /// For the progress line: how long the target has been down, if it is.
    pub(super) fn down_for(&self, now: Instant) -> Option<Duration> {
        let s = lock(&self.state);
        s.down
            .as_ref()
            .map(|d| now.saturating_duration_since(d.since))
    }

    /// Waits until a request may go: at once while the target is up; while
    /// it is down, as the probe when its time comes. `Err`: the run gives
    /// up on the target, with its last unavailable answer.
    pub(super) async fn wait(&self) -> Result<(), ClientError> {
        loop {
            let notified = self.changed.notified();
            match self.turn(Instant::now()) {
                Turn::Go => return Ok(()),
                Turn::GiveUp(e) => return Err(e),
                Turn::Wait(until) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => {}
                        () = notified => {}
                    }
                }
            }
        }
    }

    pub(super) fn turn(&self, now: Instant) -> Turn {
        let mut s = lock(&self.state);
        let max = self.max;
        let Some(d) = &mut s.down else {
            return Turn::Go;
        };
        let lasted = now.saturating_duration_since(d.since);
        if lasted >= max {
            return Turn::GiveUp(copy(&d.last));
        }
        if now.saturating_duration_since(d.said) >= SAY_EVERY {
            d.said = now;
            tracing::warn!(target: log_target!(),
                down_for_secs = lasted.as_secs(), cause = %d.cause,
                "the target is still down: every request waits (giving up after {} s)", max.as_secs()
            );
        }
        if !d.probing && now >= d.next_probe {
            d.probing = true;
            return Turn::Go;
        }
        let next = if d.probing {
            now + PROBE_MAX
        } else {
            d.next_probe
        };
        Turn::Wait(next.min(d.since + max).min(d.said + SAY_EVERY))
    }

    /// An answer came at `now`: `error` is `None` for a success. True when
    /// the target is down now (an unavailable answer's request then waits
    /// for the outage's end without spending a retry).
    pub(super) fn answered(
        &self,
        now: Instant,
        error: Option<&ClientError>,
        first: Instant,
    ) -> bool {
        let mut s = lock(&self.state);
        match error {
            Some(e) if unavailable(e) => {
                s.streak += 1;
                let since = *s.streak_since.get_or_insert(now);
                if let Some(d) = &mut s.down {
                    if d.probing {
                        d.probing = false;
                        d.probes += 1;
                        let backoff = Duration::from_secs(1 << d.probes.min(4)).min(PROBE_MAX);
                        let asked = Duration::from_secs(e.retry_after().unwrap_or(0).min(300));
                        d.next_probe = now + backoff.max(asked);
                    }
                    d.last = copy(e);
                    return true;
                }
                if s.streak < DOWN_AFTER || now.saturating_duration_since(since) < DOWN_OVER {
                    return false;
                }
                let cause = e.server_message();
                tracing::warn!(target: log_target!(), %cause,
                    "the target is down: every request waits, one probes it (giving up after {} s)",
                    self.max.as_secs()
                );
                let asked = Duration::from_secs(e.retry_after().unwrap_or(1).clamp(1, 300));
                s.down = Some(Down {
                    since,
                    cause,
                    last: copy(e),
                    probing: false,
                    next_probe: now + asked,
                    probes: 0,
                    said: now,
                });
                true
            }
            // A transport failure says nothing either way (the breaker's);
            // a probe that got none may go again.
            Some(e) if e.is_transport() => {
                if let Some(d) = &mut s.down
                    && d.probing
                {
                    d.probing = false;
                    d.next_probe = now + Duration::from_secs(1);
                    drop(s);
                    self.changed.notify_waiters();
                    return true;
                }
                s.down.is_some()
            }
            // Any other answer: the target serves.
            _ => {
                s.streak = 0;
                s.streak_since = None;
                let Some(d) = s.down.take() else {
                    return false;
                };
                let lasted = now.saturating_duration_since(d.since);
                tracing::warn!(target: log_target!(),
                    down_for_secs = (lasted.as_secs_f64() * 10.0).round() / 10.0,
                    "the target answers again: the run goes on"
                );
                s.done.push(OutageReport {
                    after_ms: d.since.saturating_duration_since(first).as_millis() as u64,
                    lasted_ms: lasted.as_millis() as u64,
                    cause: d.cause,
                    gave_up: false,
                });
                drop(s);
                self.changed.notify_waiters();
                false
            }
        }
    }

    /// A probe's request ended without an answer (dropped, stopped).
    pub(super) fn abandoned(&self) {
        if let Some(d) = &mut lock(&self.state).down {
            d.probing = false;
        }
        self.changed.notify_waiters();
    }

    /// The outages so far; one still going counts up to `now`.
    pub(super) fn report(&self, now: Instant, first: Option<Instant>) -> Vec<OutageReport> {
        let s = lock(&self.state);
        let mut out = s.done.clone();
        if let Some(d) = &s.down {
            let lasted = now.saturating_duration_since(d.since);
            out.push(OutageReport {
                after_ms: first.map_or(0, |f| {
                    d.since.saturating_duration_since(f).as_millis() as u64
                }),
                lasted_ms: lasted.as_millis() as u64,
                cause: d.cause.clone(),
                gave_up: lasted >= self.max,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unavailable_answer() -> ClientError {
        ClientError::Api {
            method: "POST".into(),
            path: "/v3/x".into(),
            status: 503,
            message: "Service Unavailable: the database cannot be reached".into(),
            retry_after: Some(1),
        }
    }

    #[test]
    fn answers_in_a_row_make_an_outage_that_a_probe_ends() {
        let o = Outage::new(MAX_OUTAGE);
        let t0 = Instant::now();
        let e = unavailable_answer();
        // Five 503s at once: a burst, not yet an outage.
        for _ in 0..DOWN_AFTER {
            assert!(!o.answered(t0, Some(&e), t0));
        }
        assert!(matches!(o.turn(t0), Turn::Go));
        // Still 503 a second and more later: down.
        let t1 = t0 + Duration::from_millis(1_100);
        assert!(o.answered(t1, Some(&e), t0));
        assert!(o.is_down());
        // Nothing goes until the probe's time, then one request only.
        assert!(matches!(o.turn(t1), Turn::Wait(_)));
        let t2 = t1 + Duration::from_secs(1);
        assert!(matches!(o.turn(t2), Turn::Go));
        assert!(matches!(o.turn(t2), Turn::Wait(_)));
        // The probe is refused again: the next waits 2 s.
        assert!(o.answered(t2, Some(&e), t0));
        assert!(matches!(
            o.turn(t2 + Duration::from_millis(1_900)),
            Turn::Wait(_)
        ));
        let t3 = t2 + Duration::from_secs(2);
        assert!(matches!(o.turn(t3), Turn::Go));
        // Answered: up again, everyone goes, and the report has it.
        assert!(!o.answered(t3, None, t0));
        assert!(matches!(o.turn(t3), Turn::Go));
        let r = o.report(t3, Some(t0));
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].after_ms, r[0].lasted_ms, r[0].gave_up),
            (0, 4_100, false)
        );
        assert!(r[0].cause.contains("HTTP 503"), "{:?}", r[0]);
    }

    #[test]
    fn a_success_between_the_503s_is_no_outage_and_a_long_one_is_given_up() {
        let o = Outage::new(Duration::from_secs(30));
        let t0 = Instant::now();
        let e = unavailable_answer();
        for i in 0..20u64 {
            let t = t0 + Duration::from_millis(200 * i);
            o.answered(t, if i % 4 == 3 { None } else { Some(&e) }, t0);
        }
        assert!(!o.is_down());
        for i in 0..10u64 {
            o.answered(t0 + Duration::from_secs(5 + i), Some(&e), t0);
        }
        assert!(o.is_down());
        assert!(matches!(
            o.turn(t0 + Duration::from_secs(36)),
            Turn::GiveUp(_)
        ));
        assert!(o.report(t0 + Duration::from_secs(36), Some(t0))[0].gave_up);
    }
}

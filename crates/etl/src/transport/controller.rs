//! The run's request controller: one per connection, consulted by every
//! request of the run (imports, reads of the target, blacklist batches,
//! export pages) through [`super::retry::retrying`]. It holds
//!
//! - the concurrency limit, a semaphore whose permits follow the adaptive
//!   [`Window`] (permits are added on an increase and forgotten on a
//!   decrease, as they come back) or stay pinned;
//! - one view of the target's rate limit: a 429's `Retry-After`, or an
//!   exhausted `X-RateLimit-Remaining`, pauses every request of the run
//!   until the reset, and a client-side token bucket (`governor`) keeps the
//!   rate under `max_requests_per_second` or under what the 429s taught;
//! - the figures of the report's `requests` section ([`RequestsReport`]),
//!   its pace over time among them ([`timeline`]).
//!
//! Decisions:
//! - A permit is held from before the pause and the bucket until the
//!   answer, and given back before a retry's backoff: a waiting retry takes
//!   no room from requests that can go now. The controller counts the
//!   requests waiting out a 429's `Retry-After` ([`Controller::waiting`]),
//!   and the chunk writer takes a row more for each, so they take no room
//!   from rows either. A wait after a failure or a 503 is not counted: a
//!   failing or overloaded target keeps its rows' places. The RTT is timed
//!   from the send; a 429's is no sample ([`Window::refused`]).
//! - 429s of requests sent before the pause are the same event: they
//!   teach no rate and do not shrink the window again.
//! - A sporadic 429 (few among the recent answers) neither pauses the run
//!   nor shrinks the window: the refused request alone waits its
//!   `Retry-After`. How a 429 is judged, how a rate is learned, lowered
//!   and raised again: [`rate`].
//! - A graceful stop ([`super::Stop`]) ends every wait for a pause or the
//!   rate, and every retry's backoff: a request not sent yet is not sent
//!   (its row stays for `--resume`), so the stop takes about one request
//!   timeout, whatever the rate or the pause. A wait for a place among
//!   the requests in flight is not cut: they finish, and the rows a stop
//!   finds started go out as before when nothing else holds them back.

mod evidence;
mod learn;
pub mod outage;
mod rate;
mod report;
pub mod timeline;

use super::remembered::StartRate;
use super::requests::{self, Latencies};
use super::window::{Change, Window};
use crate::pipeline::Concurrency;
use listpipe_client::{ClientError, RateHeaders};
use rate::Bucket;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use timeline::{Event, Timeline};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Where the adaptive limit starts: the old fixed batch concurrency, low
/// enough for a limited target, and doubled within a few round trips.
pub const ADAPTIVE_START: usize = 4;
/// The longest pause a server may ask for.
const MAX_PAUSE: Duration = Duration::from_secs(300);

/// Locks a mutex, taking over a poisoned one (a panic elsewhere is a bug
/// reported by its own task; the figures here stay usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Controller {
    mode: &'static str,
    max: usize,
    sem: Arc<Semaphore>,
    limit: AtomicUsize,
    sending: AtomicUsize,
    /// Requests waiting out a 429's `Retry-After`, holding no place.
    waiting: AtomicUsize,
    state: Mutex<State>,
    pause: Mutex<Pause>,
    bucket: Mutex<Bucket>,
    stats: Mutex<Stats>,
    stop: super::Stop,
    /// The rate remembered from earlier runs that this one started at.
    start: Mutex<Option<StartRate>>,
    /// The target down as a whole ([`outage`]).
    outage: outage::Outage,
    /// The run's pace over time ([`timeline`]); locked alone, never with
    /// another lock taken after it.
    timeline: Mutex<Timeline>,
}

struct State {
    window: Window,
    /// Permits to forget as they come back (a decrease below what is in flight).
    to_forget: usize,
}

#[derive(Default)]
struct Pause {
    until: Option<Instant>,
    count: u64,
    total: Duration,
}

#[derive(Default)]
struct Stats {
    sent: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    latencies: Latencies,
    retries: BTreeMap<&'static str, u64>,
    /// Milliseconds spent at each limit.
    at_limit: BTreeMap<usize, u64>,
    since: Option<Instant>,
}

/// A request's place: hold it while the request is in flight.
pub struct Ticket {
    permit: Option<OwnedSemaphorePermit>,
    started: Instant,
}

/// A request waiting out a 429's `Retry-After`: counted until dropped,
/// however the wait ends (its time, the breaker, a stop).
pub struct Waiting429<'a>(&'a AtomicUsize);

impl Drop for Waiting429<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Controller {
    pub fn new(concurrency: Concurrency, max_requests_per_second: Option<u32>) -> Self {
        let (mode, window) = match concurrency {
            Concurrency::Adaptive => (
                "adaptive",
                Window::new(ADAPTIVE_START, 1, crate::pipeline::ADAPTIVE_MAX),
            ),
            Concurrency::Fixed(n) => ("fixed", Window::new(n, n, n)),
        };
        let limit = window.limit();
        let bucket = Bucket::new(max_requests_per_second.map(f64::from), Instant::now());
        Controller {
            mode,
            max: concurrency.max(),
            sem: Arc::new(Semaphore::new(limit)),
            limit: AtomicUsize::new(limit),
            sending: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            state: Mutex::new(State {
                window,
                to_forget: 0,
            }),
            pause: Mutex::new(Pause::default()),
            bucket: Mutex::new(bucket),
            stats: Mutex::new(Stats::default()),
            stop: super::Stop::default(),
            start: Mutex::new(None),
            outage: outage::Outage::new(outage::MAX_OUTAGE),
            timeline: Mutex::new(Timeline::default()),
        }
    }

    /// How long the run waits for a target that is down before it gives
    /// up ([`outage`]; `[target] max_outage_secs`).
    pub fn with_max_outage(mut self, max: Duration) -> Self {
        self.outage = outage::Outage::new(max);
        self
    }

    /// The target is down as a whole now ([`outage`]): a request it
    /// refused waits for the end of the outage without spending a retry.
    pub fn target_down(&self) -> bool {
        self.outage.is_down()
    }

    /// How long the run waits for a target that is down.
    pub fn max_outage(&self) -> Duration {
        self.outage.max()
    }

    /// Starts paced at a rate earlier runs remembered ([`super::remembered`]).
    pub fn start_from(&self, start: StartRate) {
        lock(&self.bucket).remembered(
            start.per_second,
            start.trusted(),
            Instant::now(),
            start.describe(),
        );
        *lock(&self.start) = Some(start);
    }

    /// The rate for the next run to start at, when the target paced this one.
    pub fn rate_to_remember(&self) -> Option<f64> {
        lock(&self.bucket).holding(Instant::now())
    }

    /// The run's graceful stop: setting it ends every wait for a pause, the
    /// rate or a backoff ([`Controller::acquire_unless_stopped`]).
    pub fn stop_signal(&self) -> super::Stop {
        self.stop.clone()
    }

    /// The most requests ever in flight (the adaptive bound, or the pinned number).
    pub fn max(&self) -> usize {
        self.max
    }

    /// The requests in flight allowed now.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Waits for room: a permit, the end of a pause, a token of the bucket.
    pub async fn acquire(&self) -> Ticket {
        let permit = self.permit().await;
        // A request sent on its own (no retries) goes even when the run
        // would give up on a target that is down: its answer says so.
        let _ = self.turn().await;
        self.start(permit)
    }

    /// [`Controller::acquire`], unless a graceful stop comes while the
    /// request waits for its turn (an outage, a pause, the rate): then it
    /// is not sent (`Interrupted`). `Err` with the target's last answer
    /// when the target has been down longer than the run waits.
    /// A place among the requests in flight is still waited for, as they
    /// finish: the rows a stop finds started go out as before when nothing
    /// else holds them back.
    pub async fn acquire_unless_stopped(&self) -> Result<Ticket, ClientError> {
        let permit = self.permit().await;
        tokio::select! {
            biased;
            turn = self.turn() => turn.map(|()| self.start(permit)),
            () = self.stopped() => Err(ClientError::Interrupted),
        }
    }

    async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed; without a permit the request
        // would go unlimited rather than never.
        self.sem.clone().acquire_owned().await.ok()
    }

    /// Waits for the end of an outage (or a probe's turn), of a pause, and
    /// for a token of the bucket.
    async fn turn(&self) -> Result<(), ClientError> {
        self.outage.wait().await?;
        self.paused().await;
        let limiter = {
            // The pause is over: a first limit not learned yet is learned now.
            let mut bucket = lock(&self.bucket);
            bucket.settle(true);
            bucket.limiter()
        };
        if let Some(l) = limiter
            && l.check().is_err()
        {
            // The rate holds this request back: it may rise (see `rate`).
            lock(&self.bucket).held = true;
            l.until_ready().await;
            // A 429 may have paused the run while this waited for a token.
            self.paused().await;
        }
        Ok(())
    }

    /// The request goes now, in the place `permit` holds.
    fn start(&self, permit: Option<OwnedSemaphorePermit>) -> Ticket {
        let sending = self.sending.fetch_add(1, Ordering::Relaxed) + 1;
        if sending >= self.limit() {
            lock(&self.state).window.reached();
        }
        let now = Instant::now();
        let mut s = lock(&self.stats);
        s.sent += 1;
        s.first.get_or_insert(now);
        drop(s);
        let rate = {
            let mut bucket = lock(&self.bucket);
            bucket.sent(now);
            bucket.rate
        };
        lock(&self.timeline).record(now, Event::Sent, sending, rate);
        Ticket {
            permit,
            started: now,
        }
    }

    async fn paused(&self) {
        loop {
            let until = lock(&self.pause).until;
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }

    /// The request of `ticket` ended: `error` is `None` on success. Frees
    /// its place and adjusts the limit, the pause and the bucket.
    pub fn finish(
        &self,
        ticket: Ticket,
        error: Option<&ClientError>,
        headers: Option<RateHeaders>,
    ) {
        self.finish_at(Instant::now(), ticket, error, headers);
    }

    /// [`Controller::finish`] at `now` (tests pass synthetic times).
    fn finish_at(
        &self,
        now: Instant,
        ticket: Ticket,
        error: Option<&ClientError>,
        headers: Option<RateHeaders>,
    ) {
        let rtt = now.saturating_duration_since(ticket.started);
        self.sending.fetch_sub(1, Ordering::Relaxed);
        let first = lock(&self.stats).first.unwrap_or(ticket.started);
        self.outage.answered(now, error, first);
        let answered = !error.is_some_and(ClientError::is_transport);
        // A 429 of a request sent before the pause is the event already
        // seen: it neither teaches a rate nor shrinks the window again.
        let refused = error.filter(|e| e.status() == Some(429));
        let new_429 = match refused {
            Some(e) => {
                let spent = headers.is_some_and(|h| h.remaining == Some(0));
                self.refused_429(now, ticket.started, e.retry_after(), spent)
            }
            None => {
                let mut bucket = lock(&self.bucket);
                if !answered {
                    bucket.ended(ticket.started);
                } else if let Some(rate) = bucket.answered(now, ticket.started, false) {
                    tracing::debug!(target: log_target!(), rate, "requests per second raised: no limiting 429");
                }
                false
            }
        };
        let back_pressure = match error {
            None => false,
            Some(e) => e.is_transport() || matches!(e.status(), Some(408 | 503 | 504)) || new_429,
        };
        {
            let mut s = lock(&self.stats);
            if answered {
                s.latencies.record(rtt);
            }
            s.last = Some(now);
            let since = s.since.replace(now).unwrap_or(now);
            let ms = now.saturating_duration_since(since).as_millis() as u64;
            *s.at_limit.entry(self.limit()).or_default() += ms;
        }
        if let Some(h) = headers
            && h.remaining == Some(0)
            && let Some(reset) = h.reset_secs
        {
            self.pause_until(now, now + Duration::from_secs(reset));
        }
        let mut st = lock(&self.state);
        if refused.is_some() {
            st.window.refused();
        }
        let old = st.window.limit();
        let rtt = (answered && refused.is_none()).then_some(rtt);
        if let Some(change) = st.window.observe(now.into_std(), rtt, back_pressure) {
            let new = st.window.limit();
            tracing::debug!(target: log_target!(), ?change, old, new, "concurrency limit");
            match change {
                Change::Increased => {
                    let back = (new - old).min(st.to_forget);
                    st.to_forget -= back;
                    self.sem.add_permits(new - old - back);
                }
                Change::Decreased => {
                    let forgotten = self.sem.forget_permits(old - new);
                    st.to_forget += old - new - forgotten;
                }
            }
            self.limit.store(new, Ordering::Relaxed);
        }
        drop(st);
        let event = match (answered, refused) {
            (false, _) => Event::Ended,
            (true, refused) => Event::Answered {
                refused: refused.is_some(),
            },
        };
        self.record(now, event);
        self.release(ticket.permit);
    }

    /// `event` into the [`timeline`], with what is in flight and the rate now.
    fn record(&self, now: Instant, event: Event) {
        let rate = lock(&self.bucket).rate;
        let in_flight = self.sending.load(Ordering::Relaxed);
        lock(&self.timeline).record(now, event, in_flight, rate);
    }

    /// The request of `ticket` was dropped unanswered (the breaker opened).
    pub fn abandon(&self, ticket: Ticket) {
        self.sending.fetch_sub(1, Ordering::Relaxed);
        self.outage.abandoned();
        lock(&self.bucket).ended(ticket.started);
        self.record(Instant::now(), Event::Ended);
        self.release(ticket.permit);
    }

    /// Gives a place back, or forgets it when the limit went down.
    fn release(&self, permit: Option<OwnedSemaphorePermit>) {
        let mut st = lock(&self.state);
        if let Some(p) = permit
            && st.to_forget > 0
        {
            st.to_forget -= 1;
            p.forget();
        }
    }

    /// A retry is about to wait and go again, for `cause`.
    pub fn retrying(&self, e: &ClientError) {
        *lock(&self.stats)
            .retries
            .entry(requests::cause(e))
            .or_default() += 1;
        self.record(Instant::now(), Event::Retry);
    }

    /// A refused request waits out its 429's `Retry-After` while the value
    /// lives: it holds no place meanwhile, so the chunk writer may take
    /// another row ([`super::flow`]).
    pub fn waits_out_a_429(&self) -> Waiting429<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting429(&self.waiting)
    }

    /// Requests waiting out a 429's `Retry-After` now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    fn pause_until(&self, now: Instant, until: Instant) {
        let until = until.min(now + MAX_PAUSE);
        let mut p = lock(&self.pause);
        let from = p.until.filter(|t| *t > now);
        if from.is_some_and(|t| t >= until) {
            return;
        }
        // A pause extended counts its added time only.
        p.total += until.saturating_duration_since(from.unwrap_or(now));
        if from.is_none() {
            p.count += 1;
            tracing::info!(target: log_target!(),
                secs = (until - now).as_secs_f64(),
                "the target asked to wait: every request pauses"
            );
        }
        p.until = Some(until);
    }

    /// A 429 answered the request sent at `sent`. A limiting one lowers the
    /// rate (learns one, the first time) and, while no rate was learned or
    /// the 429s are most answers, pauses the run for the `Retry-After`; a
    /// sporadic one only counts. True for a new limiting event.
    #[cfg(test)]
    fn rate_limited(&self, now: Instant, sent: Instant, retry_after: Option<u64>) -> bool {
        self.refused_429(now, sent, retry_after, false)
    }

    /// A 429 answered the request sent at `sent`; `spent`: it came with
    /// `X-RateLimit-Remaining: 0`, a limit the answer explains.
    fn refused_429(
        &self,
        now: Instant,
        sent: Instant,
        retry_after: Option<u64>,
        spent: bool,
    ) -> bool {
        let wait = Duration::from_secs(retry_after.unwrap_or(1).max(1));
        // Still paused: a request sent before the pause, the same event.
        // (The pause is read before the bucket is locked: `report` takes
        // them in that order.)
        let paused = lock(&self.pause).until.is_some_and(|t| t > now);
        let decision = lock(&self.bucket).refused_answer_explained(now, sent, wait, paused, spent);
        if decision.pause {
            self.pause_until(now, now + wait);
        }
        if !decision.limiting && !paused {
            tracing::debug!(target: log_target!(), "a sporadic 429: the refused request waits its Retry-After alone");
        }
        decision.limiting
    }

    /// Waits for a graceful stop (see [`Controller::stop_signal`]).
    pub async fn stopped(&self) {
        self.stop.stopped().await
    }
}

#[cfg(test)]
mod learn_tests;
#[cfg(test)]
mod pacing_tests;
#[cfg(test)]
mod tests;

//! The controller with synthetic times: answers are given the round-trip
//! times a test chooses, and pauses are seen as requests that cannot start
//! (a future polled once stays pending), never by waiting on the clock.

use super::*;
use futures::FutureExt;

fn too_many(retry_after: Option<u64>) -> ClientError {
    ClientError::Api {
        method: "POST".into(),
        path: "/v3/groups/1/receivers".into(),
        status: 429,
        message: "Too Many Requests".into(),
        retry_after,
    }
}

/// A clock the test moves.
pub(super) struct Clock(pub(super) Instant);

/// One round: `n` requests sent together, all answered `rtt` later.
async fn round(
    c: &Controller,
    clock: &mut Clock,
    n: usize,
    rtt: Duration,
    error: Option<&ClientError>,
) {
    let mut tickets = Vec::new();
    for _ in 0..n {
        let mut t = c.acquire().await;
        // Sent at the test's time, for the bucket too.
        let mut bucket = lock(&c.bucket);
        bucket.ended(t.started);
        *bucket.in_flight.entry(clock.0).or_default() += 1;
        drop(bucket);
        t.started = clock.0;
        tickets.push(t);
    }
    clock.0 += rtt;
    for t in tickets {
        c.finish_at(clock.0, t, error, None);
    }
    clock.0 += Duration::from_millis(1);
}

async fn grown(c: &Controller, clock: &mut Clock) {
    for _ in 0..40 {
        round(c, clock, c.limit(), Duration::from_millis(50), None).await;
    }
}

#[tokio::test]
async fn a_flat_rtt_grows_the_limit_and_the_semaphore_with_it() {
    let c = Controller::new(Concurrency::Adaptive, None);
    let mut clock = Clock(Instant::now());
    assert_eq!(c.limit(), ADAPTIVE_START);
    grown(&c, &mut clock).await;
    assert_eq!(c.limit(), crate::pipeline::ADAPTIVE_MAX);
    assert_eq!(c.sem.available_permits(), c.limit());
    let r = c.report();
    assert_eq!(r.concurrency.mode, "adaptive");
    assert_eq!(r.concurrency.last, c.limit());
    assert_eq!(
        (r.concurrency.min, r.concurrency.max),
        (ADAPTIVE_START, 256)
    );
    assert!(
        (50.0..=53.5).contains(&r.latency_ms.p50),
        "{:?}",
        r.latency_ms
    );
}

#[tokio::test]
async fn rate_limit_answers_shrink_the_limit_and_forget_the_permits_in_flight() {
    let c = Controller::new(Concurrency::Adaptive, None);
    let mut clock = Clock(Instant::now());
    grown(&c, &mut clock).await;
    let grown = c.limit();
    // Every request is refused from now on: once the 429s are a fifth of
    // the last second's answers (rate.rs) they show the limit, the limit
    // drops below the requests in flight, and their permits are forgotten
    // as they return. That takes about a quarter of a second of them.
    let refused = too_many(Some(1));
    let mut rounds = 0;
    while c.limit() == grown && rounds < 20 {
        round(
            &c,
            &mut clock,
            grown,
            Duration::from_millis(50),
            Some(&refused),
        )
        .await;
        rounds += 1;
    }
    assert!(c.limit() < grown, "{} -> {}", grown, c.limit());
    assert!(
        rounds <= 6,
        "{rounds} rounds of 429s before the limit shrank"
    );
    assert_eq!(c.sem.available_permits(), c.limit());
    assert_eq!(c.report().pauses, 1);
}

#[tokio::test]
async fn rising_latency_shrinks_the_limit() {
    let c = Controller::new(Concurrency::Adaptive, None);
    let mut clock = Clock(Instant::now());
    grown(&c, &mut clock).await;
    let grown = c.limit();
    for ms in [200, 400, 800] {
        round(&c, &mut clock, c.limit(), Duration::from_millis(ms), None).await;
    }
    assert!(c.limit() < grown, "{} -> {}", grown, c.limit());
    assert_eq!(c.sem.available_permits(), c.limit());
}

#[tokio::test]
async fn a_pinned_concurrency_never_moves() {
    let c = Controller::new(Concurrency::Fixed(8), None);
    let mut clock = Clock(Instant::now());
    for _ in 0..20 {
        round(&c, &mut clock, 8, Duration::from_millis(10), None).await;
    }
    let t = c.acquire().await;
    c.finish_at(clock.0, t, Some(&ClientError::BadUrl("x".into())), None);
    assert_eq!((c.limit(), c.sem.available_permits()), (8, 8));
    assert_eq!(c.report().concurrency.mode, "fixed");
}

#[tokio::test]
async fn a_retry_after_holds_back_every_request_of_the_run() {
    let c = Controller::new(Concurrency::Fixed(16), None);
    // The first answers: 429s, a spent quota.
    for _ in 0..3 {
        let t = c.acquire().await;
        c.finish(t, Some(&too_many(Some(30))), None);
    }
    // Permits are free, yet no request may start: all wait for the reset.
    assert_eq!(c.sem.available_permits(), 16);
    for _ in 0..10 {
        assert!(c.acquire().now_or_never().is_none());
    }
    let r = c.report();
    assert_eq!((r.pauses, r.paused_ms), (1, 30_000));
    // A second 429 within the pause extends it, and is the same pause.
    let until = lock(&c.pause).until;
    assert!(!c.rate_limited(Instant::now(), Instant::now(), Some(1)));
    assert_eq!(lock(&c.pause).until, until);
    assert_eq!(c.report().pauses, 1);
}

#[tokio::test]
async fn an_exhausted_quota_holds_back_requests_until_its_reset_before_any_429() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let t = c.acquire().await;
    let headers = RateHeaders {
        limit: Some(100),
        remaining: Some(0),
        reset_secs: Some(20),
    };
    c.finish(t, None, Some(headers));
    assert!(c.acquire().now_or_never().is_none());
    assert_eq!(c.report().pauses, 1);
}

/// A request sent at `at` on the test's clock: noted as `acquire` notes
/// it, without waiting for the bucket's real-time tokens.
pub(super) async fn sent_at(c: &Controller, at: Instant) -> Ticket {
    c.sending.fetch_add(1, Ordering::Relaxed);
    lock(&c.bucket).sent(at);
    Ticket {
        permit: None,
        started: at,
    }
}

/// A 429 at `clock`, for a request sent then.
pub(super) async fn refused_at(c: &Controller, clock: &Clock, retry_after: Option<u64>) {
    let t = sent_at(c, clock.0).await;
    c.finish_at(clock.0, t, Some(&too_many(retry_after)), None);
}

/// `n` requests sent together at `clock`, accepted `rtt` later.
pub(super) async fn accepted(c: &Controller, clock: &mut Clock, n: usize, rtt: Duration) {
    let mut tickets = Vec::new();
    for _ in 0..n {
        tickets.push(sent_at(c, clock.0).await);
    }
    clock.0 += rtt;
    for t in tickets {
        c.finish_at(clock.0, t, None, None);
    }
}

pub(super) fn learned(c: &Controller) -> f64 {
    c.report().rate_limit_per_second.expect("a learned rate")
}

#[tokio::test]
async fn a_429_teaches_a_rate_just_under_what_the_target_let_through() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let mut clock = Clock(Instant::now());
    // One request every 200 ms for two seconds, then a 429 (the target
    // allows less than five a second, then).
    for _ in 0..10 {
        accepted(&c, &mut clock, 1, Duration::from_millis(200)).await;
    }
    // Three 429s: more than a fifth of the answers.
    for _ in 0..3 {
        refused_at(&c, &clock, Some(1)).await;
    }
    // A bucket of one second's worth, full at the start, lets ten through
    // in 1.8 seconds from 3.57 a second (10 <= r + 1.8 r): 90% of that.
    assert!((learned(&c) - 3.21).abs() < 0.01, "{}", learned(&c));
    // Another 429 at once, of a request sent before the pause: the same
    // event, not lowered again.
    assert!(!c.rate_limited(clock.0, clock.0, Some(1)));
    assert!((learned(&c) - 3.21).abs() < 0.01, "{}", learned(&c));
}

#[tokio::test]
async fn a_burst_from_an_idle_start_teaches_about_its_size_per_retry_after() {
    let c = Controller::new(Concurrency::Fixed(8), None);
    let mut clock = Clock(Instant::now());
    // Five let through at once, the sixth refused, wait a second: the
    // target's quota is five per second, however fast they went.
    accepted(&c, &mut clock, 5, Duration::from_millis(10)).await;
    for _ in 0..3 {
        refused_at(&c, &clock, Some(1)).await;
    }
    assert!((learned(&c) - 4.5).abs() < 0.01, "{}", learned(&c));
}

#[tokio::test]
async fn a_later_429_lowers_the_rate_only_when_429s_are_a_share_of_the_answers() {
    let c = Controller::new(Concurrency::Fixed(16), None);
    let mut clock = Clock(Instant::now());
    accepted(&c, &mut clock, 10, Duration::from_millis(10)).await;
    for _ in 0..3 {
        refused_at(&c, &clock, Some(1)).await;
    }
    let first = learned(&c);
    assert!(first > 8.0, "{first}");
    // The pause ends; four a second for eight seconds, and one 429: one in
    // 33 answers is sporadic, it lowers nothing and pauses nothing.
    clock.0 += Duration::from_secs(1);
    lock(&c.pause).until = None;
    for _ in 0..32 {
        accepted(&c, &mut clock, 1, Duration::from_millis(250)).await;
    }
    refused_at(&c, &clock, Some(1)).await;
    assert_eq!(learned(&c), (first * 100.0).round() / 100.0);
    // (The first two 429s, before the third told a limit, lowered nothing.)
    assert_eq!((c.report().pauses, c.report().sporadic_429), (1, 3));
    // Then the target refuses one in three: a limit, once it is more than
    // a fifth of the last 100 answers. The rate goes down to what was
    // accepted, and the run is not paused for it (a rate is known).
    for _ in 0..36 {
        accepted(&c, &mut clock, 2, Duration::from_millis(250)).await;
        refused_at(&c, &clock, Some(1)).await;
    }
    let lowered = learned(&c);
    assert!(lowered < first * 0.9, "{first} -> {lowered}");
    assert_eq!(c.report().pauses, 1);
}

#[tokio::test]
async fn a_few_429s_after_one_or_two_requests_pause_but_teach_no_rate() {
    let c = Controller::new(Concurrency::Fixed(8), None);
    let mut clock = Clock(Instant::now());
    accepted(&c, &mut clock, 2, Duration::from_millis(10)).await;
    for _ in 0..3 {
        refused_at(&c, &clock, Some(1)).await;
    }
    let r = c.report();
    assert_eq!((r.pauses, r.rate_limit_per_second), (1, None));
}

#[tokio::test]
async fn a_long_retry_after_is_the_window_a_rate_is_learned_over() {
    let c = Controller::new(Concurrency::Fixed(16), None);
    let mut clock = Clock(Instant::now());
    // A quota of 300 a minute: ten requests a second for thirty seconds,
    // then a 429 asking to wait the thirty seconds left. The last second
    // alone (ten) spread over the wait would teach a third of a request per
    // second; over the wait's window it is about the quota, 5 a second.
    for _ in 0..30 {
        accepted(&c, &mut clock, 10, Duration::from_millis(1000)).await;
    }
    // The quota is spent: what is sent now is refused, one after another,
    // and once they are more than a sporadic share of the answers the
    // rate is learned.
    for _ in 0..20 {
        refused_at(&c, &clock, Some(30)).await;
    }
    assert_eq!(
        c.report().rate_limit_per_second,
        None,
        "20 of 100: sporadic"
    );
    refused_at(&c, &clock, Some(30)).await;
    let rate = learned(&c);
    assert!((4.4..=4.7).contains(&rate), "{rate}");
}

#[tokio::test]
async fn a_few_429s_with_nothing_let_through_pause_but_learn_no_rate() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    for _ in 0..3 {
        let t = c.acquire().await;
        c.finish(t, Some(&too_many(None)), None);
    }
    let r = c.report();
    assert_eq!((r.pauses, r.rate_limit_per_second), (1, None));
}

#[test]
fn a_configured_rate_is_the_bucket_from_the_start() {
    let c = Controller::new(Concurrency::Adaptive, Some(5));
    assert_eq!(c.report().rate_limit_per_second, Some(5.0));
}

#[test]
fn retries_are_counted_by_cause() {
    let c = Controller::new(Concurrency::Adaptive, None);
    c.retrying(&too_many(Some(1)));
    c.retrying(&too_many(Some(1)));
    let unavailable = ClientError::Api {
        method: "GET".into(),
        path: "/v3/groups".into(),
        status: 503,
        message: "busy".into(),
        retry_after: None,
    };
    c.retrying(&unavailable);
    let r = c.report();
    assert_eq!(
        r.retries.into_iter().collect::<Vec<_>>(),
        [("rate_limited", 2), ("unavailable", 1)]
    );
}

#[test]
fn the_progress_line_and_the_summary_say_when_and_why_the_run_is_paced() {
    let c = Controller::new(Concurrency::Fixed(4), Some(5));
    assert_eq!(
        c.progress(),
        "4 in flight max, 0 req/s, paced at 5.0 req/s: max_requests_per_second = 5 in the pipeline file"
    );
    let mut r = c.report();
    assert_eq!(
        r.rate_summary().as_deref(),
        Some(
            "requests: paced at 5 req/s from 0.0 s in: max_requests_per_second = 5 in the pipeline file"
        )
    );
    r.sporadic_429 = 3;
    r.paced = None;
    r.rate_limit_per_second = None;
    assert_eq!(
        r.rate_summary().as_deref(),
        Some("requests: not paced; 3 sporadic 429s retried without slowing the run")
    );
}

#[tokio::test]
async fn a_learned_rate_says_the_share_of_429s_that_set_it() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let mut clock = Clock(Instant::now());
    for _ in 0..10 {
        accepted(&c, &mut clock, 1, Duration::from_millis(200)).await;
    }
    for _ in 0..3 {
        refused_at(&c, &clock, Some(1)).await;
    }
    assert!(
        c.progress().ends_with(
            ", paced at 3.2 req/s: the target answered 429 Too Many Requests to 23% of recent requests"
        ),
        "{}",
        c.progress()
    );
    let paced = c.report().paced.expect("paced");
    assert_eq!(
        paced.why,
        "the target answered 429 Too Many Requests to 23% of recent requests"
    );
}

#[tokio::test]
async fn a_lone_429_among_the_first_answers_pauses_nothing() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let mut clock = Clock(Instant::now());
    accepted(&c, &mut clock, 3, Duration::from_millis(10)).await;
    refused_at(&c, &clock, Some(1)).await;
    accepted(&c, &mut clock, 3, Duration::from_millis(10)).await;
    refused_at(&c, &clock, Some(1)).await;
    let r = c.report();
    assert_eq!(
        (r.pauses, r.sporadic_429, r.rate_limit_per_second),
        (0, 2, None)
    );
}

/// A 429 comes back at once, ahead of the writes sent with it: 256 sent
/// together against a target refusing 8% of them, and the first 20
/// answers are all 429s. The 236 still in flight, sent with them, count.
#[tokio::test]
async fn the_429s_a_burst_gets_back_first_are_no_limit() {
    let c = Controller::new(Concurrency::Fixed(256), None);
    let clock = Clock(Instant::now());
    let mut burst = Vec::new();
    for _ in 0..256 {
        burst.push(sent_at(&c, clock.0).await);
    }
    let mut burst = burst.into_iter();
    let now = clock.0 + Duration::from_millis(1);
    for t in burst.by_ref().take(20) {
        c.finish_at(now, t, Some(&too_many(Some(1))), None);
    }
    for t in burst {
        c.finish_at(now + Duration::from_millis(20), t, None, None);
    }
    let r = c.report();
    assert_eq!(
        (r.pauses, r.sporadic_429, r.rate_limit_per_second),
        (0, 20, None)
    );
}

/// The chunk writer takes a row more for each retry waiting (flow.rs):
/// the count follows the waits however they end.
#[test]
fn retries_waiting_are_counted_until_their_waits_end() {
    let c = Controller::new(Concurrency::Fixed(2), None);
    let first = c.waits_out_a_429();
    let second = c.waits_out_a_429();
    assert_eq!(c.waiting(), 2);
    drop(first);
    assert_eq!(c.waiting(), 1);
    drop(second);
    assert_eq!(c.waiting(), 0);
}

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
struct Clock(Instant);

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
    // Every request of the round is refused: the limit drops below the
    // requests in flight, and their permits are forgotten as they return.
    let refused = too_many(Some(1));
    round(
        &c,
        &mut clock,
        grown,
        Duration::from_millis(50),
        Some(&refused),
    )
    .await;
    assert!(c.limit() < grown, "{} -> {}", grown, c.limit());
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
    let t = c.acquire().await;
    c.finish(t, Some(&too_many(Some(30))), None);
    // Permits are free, yet no request may start: all wait for the reset.
    assert_eq!(c.sem.available_permits(), 16);
    for _ in 0..10 {
        assert!(c.acquire().now_or_never().is_none());
    }
    let r = c.report();
    assert_eq!((r.pauses, r.paused_ms), (1, 30_000));
    // A second 429 within the pause extends it, and is the same pause.
    let until = lock(&c.pause).until;
    c.rate_limited(Instant::now(), Some(1));
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

#[tokio::test]
async fn a_429_teaches_a_rate_just_under_what_the_target_accepted() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let mut clock = Clock(Instant::now());
    // Ten answers accepted over two seconds, then a 429.
    for _ in 0..10 {
        round(&c, &mut clock, 1, Duration::from_millis(199), None).await;
    }
    let t = c.acquire().await;
    c.finish_at(clock.0, t, Some(&too_many(Some(1))), None);
    // Five of them in the last second: 80% of 5 per second.
    let rate = c.report().rate_limit_per_second.expect("a learned rate");
    assert!((3.9..=4.1).contains(&rate), "{rate}");
    // Another 429 at once, with the same answers behind it: not lowered again.
    assert_eq!(lock(&c.bucket).learn(clock.0), None);
}

#[tokio::test]
async fn a_429_of_a_request_sent_before_the_pause_or_at_the_very_start_teaches_no_rate() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let mut clock = Clock(Instant::now());
    round(&c, &mut clock, 4, Duration::from_millis(100), None).await;
    // 100 ms after the first request: too little to count over.
    c.rate_limited(clock.0, Some(1));
    assert_eq!(c.report().rate_limit_per_second, None);
    for _ in 0..10 {
        round(&c, &mut clock, 1, Duration::from_millis(199), None).await;
    }
    // In flight when a pause began: the same event.
    lock(&c.pause).until = Some(clock.0 + Duration::from_secs(1));
    c.rate_limited(clock.0, Some(1));
    assert_eq!(c.report().rate_limit_per_second, None);
}

#[tokio::test]
async fn a_pause_counts_in_the_rate_learned_a_limited_target_refills_during_it() {
    let c = Controller::new(Concurrency::Fixed(8), None);
    let mut clock = Clock(Instant::now());
    round(&c, &mut clock, 1, Duration::from_millis(10), None).await;
    // A second of pause (nothing accepted), then a burst of five and a 429.
    clock.0 += Duration::from_millis(900);
    round(&c, &mut clock, 5, Duration::from_millis(50), None).await;
    let t = c.acquire().await;
    c.finish_at(clock.0, t, Some(&too_many(Some(1))), None);
    // Six accepted within the 0.96 s since the first request: 80% of 6.2/s.
    let rate = c.report().rate_limit_per_second.expect("a learned rate");
    assert!((4.9..=5.1).contains(&rate), "{rate}");
}

#[tokio::test]
async fn a_429_with_nothing_accepted_pauses_but_learns_no_rate() {
    let c = Controller::new(Concurrency::Fixed(4), None);
    let t = c.acquire().await;
    c.finish(t, Some(&too_many(None)), None);
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

//! How the first rate is learned ([`super::learn`]): from what the target
//! let through, once the requests sent before the limit are answered.

use super::learn::{LEARN_SHARE, lowest_rate};
use super::rate::{Bucket, Decision};
use super::tests::{Clock, accepted, learned, refused_at, sent_at};
use super::*;
use futures::FutureExt;

#[test]
fn requests_refused_earlier_are_not_counted_as_let_through() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut b = Bucket::default();
    for ms in (0..10).map(|i| i * 100) {
        b.sent(at(ms));
        b.ended(at(ms));
    }
    // Answered out of the order they were sent in.
    b.refused.extend([at(500), at(200)]);
    b.learn(at(1000), Duration::from_secs(1));
    let through: Vec<Instant> = [0, 100, 300, 400, 600, 700, 800, 900].map(at).to_vec();
    let expected = lowest_rate(&through, Duration::from_secs(1)) * LEARN_SHARE;
    assert!(
        (b.rate.expect("a rate") - expected).abs() < 1e-9,
        "{:?} {expected}",
        b.rate
    );
}

#[tokio::test]
async fn a_first_limit_still_waiting_for_answers_is_learned_when_the_pause_ends() {
    let c = Controller::new(Concurrency::Fixed(64), None);
    let mut clock = Clock(Instant::now());
    // Ten let through at once; then ten sent to a target slow to answer,
    // and 429s for the requests after them until a limit is told.
    accepted(&c, &mut clock, 10, Duration::from_millis(10)).await;
    let mut slow = Vec::new();
    for _ in 0..10 {
        slow.push(sent_at(&c, clock.0).await);
    }
    clock.0 += Duration::from_millis(1);
    for _ in 0..10 {
        if c.report().pauses == 0 {
            refused_at(&c, &clock, Some(1)).await;
        }
    }
    assert_eq!(c.report().pauses, 1, "a limit told");
    assert_eq!(
        c.report().rate_limit_per_second,
        None,
        "learned once the ten are answered"
    );
    // The pause ends with the ten still in flight: the rate is learned from
    // the ten answered (ten at once, 90% of 10 a second), without them.
    lock(&c.pause).until = None;
    assert!(c.acquire().now_or_never().is_some());
    assert!((learned(&c) - 9.0).abs() < 0.01, "{}", learned(&c));
    for t in slow {
        c.finish_at(clock.0, t, None, None);
    }
    assert!((learned(&c) - 9.0).abs() < 0.01, "{}", learned(&c));
}

/// 100 requests sent 0.1 ms apart, all in flight; then the 429s of
/// `refused` answered in the order given, then every other answered.
fn burst(b: &mut Bucket, t0: Instant, refused: &[usize]) -> Vec<Decision> {
    let sent = |i: usize| t0 + Duration::from_micros(100 * i as u64);
    for i in 0..100 {
        b.sent(sent(i));
    }
    let answered = t0 + Duration::from_millis(20);
    let decisions = refused
        .iter()
        .map(|i| b.refused_answer(answered, sent(*i), Duration::from_secs(1), false))
        .collect();
    for i in (0..100).filter(|i| !refused.contains(i)) {
        b.answered(answered, sent(i), false);
    }
    decisions
}

#[test]
fn a_first_limit_is_learned_from_what_was_let_through_once_it_is_answered() {
    let t0 = Instant::now();
    let mut b = Bucket::default();
    // The target took the later 50 (they reached it first) and refused the
    // first 50, whose 429s come back first, latest sent first. The limit is
    // told while the refused ones sent before it are still in flight:
    // counted as let through then, they taught a rate from requests the
    // target had refused.
    let refused: Vec<usize> = (0..50).rev().collect();
    let decisions = burst(&mut b, t0, &refused);
    let told = decisions.iter().position(|d| d.limiting).expect("a limit");
    assert!(decisions[told].pause);
    assert_eq!(decisions[told].lowered, None, "learned before the answers");
    let through: Vec<Instant> = (50..100)
        .map(|i| t0 + Duration::from_micros(100 * i))
        .collect();
    let expected = lowest_rate(&through, Duration::from_secs(1)) * LEARN_SHARE;
    let rate = b.rate.expect("learned once every request was answered");
    assert!((rate - expected).abs() < 1e-9, "{rate} {expected}");
    // From 50 let through: additive rises from the start.
    assert!(b.confirmed);
}

#[test]
fn a_limit_told_by_the_first_answers_of_a_burst_can_turn_out_sporadic() {
    let t0 = Instant::now();
    let mut b = Bucket::default();
    // Three 429s answered first, while the ten sent before them are in
    // flight: a limit, by the first answers. Once all 100 are answered,
    // three in a hundred: sporadic, and no rate (before, one learned from
    // the ten sent before them, about nine a second).
    let decisions = burst(&mut b, t0, &[10, 11, 12]);
    assert!(decisions[2].limiting && decisions[2].pause);
    assert_eq!((b.rate, b.sporadic), (None, 3));
}

//! The `X-RateLimit-*` headers some services send with every answer (the
//! quota, what is left of it, when it resets), read once here so that the
//! run's controller can pause before the quota runs out instead of after.
//!
//! The headers travel with their answer: [`answered`] runs one call (one
//! attempt of a request, as the controller sees it) with a slot of its own
//! that [`super::ApiClient`] fills from that call's response, and hands the
//! headers back beside the call's result. Concurrent calls each have their
//! slot: one answer's `X-RateLimit-Remaining: 0` is never overwritten by
//! another's, nor read by the wrong request (before, one slot per client
//! was shared by every request in flight).

use reqwest::header::HeaderMap;
use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    /// The rate headers of the call [`answered`] is running.
    static ANSWER: Cell<Option<RateHeaders>>;
}

/// A call's result and the rate headers of its response.
#[derive(Debug)]
pub struct Answered<T> {
    pub result: T,
    /// `None` when the answer had none (or no answer came).
    pub rate: Option<RateHeaders>,
}

/// Runs `call` and answers its result with the `X-RateLimit-*` headers of
/// the response it got. A call that sends several requests keeps the
/// last answer's headers.
pub async fn answered<T>(call: impl Future<Output = T>) -> Answered<T> {
    ANSWER
        .scope(Cell::new(None), async {
            let result = call.await;
            let rate = ANSWER.with(Cell::get);
            Answered { result, rate }
        })
        .await
}

/// Notes the headers of a response for the call that made it.
pub(super) fn note(headers: RateHeaders) {
    // Deliberately ignored outside [`answered`]: a call made without the
    // run's controller (`auth`, the server's own tests) has nobody to
    // tell, and its headers concern no other request.
    let _ = ANSWER.try_with(|slot| slot.set(Some(headers)));
}

/// What the latest answer said about the rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateHeaders {
    /// `X-RateLimit-Limit`: requests per window.
    pub limit: Option<u64>,
    /// `X-RateLimit-Remaining`: requests left in this window.
    pub remaining: Option<u64>,
    /// `X-RateLimit-Reset`, as seconds from now.
    pub reset_secs: Option<u64>,
}

/// Reset values above this are Unix times (GitHub's habit), below it
/// seconds from now (the IETF draft's).
const EPOCH_FROM: u64 = 1_000_000_000;

impl RateHeaders {
    /// The headers of an answer, `None` when it has none. `now` is the Unix time.
    pub fn read(headers: &HeaderMap, now: u64) -> Option<Self> {
        let num = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v.ceil() as u64)
        };
        let h = RateHeaders {
            limit: num("x-ratelimit-limit"),
            remaining: num("x-ratelimit-remaining"),
            reset_secs: num("x-ratelimit-reset").map(|r| {
                if r >= EPOCH_FROM {
                    r.saturating_sub(now)
                } else {
                    r
                }
            }),
        };
        (h != RateHeaders::default()).then_some(h)
    }
}

/// A `Retry-After` value as seconds from `now` (the Unix time): either
/// form RFC 9110 allows, delay-seconds (`"7"`) or an HTTP date (`"Wed, 21
/// Oct 2026 07:28:00 GMT"`; one already past is 0). `None` for anything else.
pub(super) fn retry_after(value: &str, now: u64) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value)
        .ok()?
        .timestamp();
    // A date before 1970 is long past: no wait.
    Some(u64::try_from(at).unwrap_or(0).saturating_sub(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn remaining(n: u64) -> RateHeaders {
        RateHeaders {
            remaining: Some(n),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn concurrent_calls_each_get_the_headers_of_their_own_answer() {
        // Two calls in flight at once, the second answered first: each
        // keeps its own answer's headers.
        let (first_sent, first_go) = tokio::sync::oneshot::channel::<()>();
        let first = answered(async {
            note(remaining(0));
            first_go.await.ok();
            "first"
        });
        let second = answered(async {
            note(remaining(7));
            first_sent.send(()).ok();
            "second"
        });
        let (a, b) = tokio::join!(first, second);
        assert_eq!((a.result, a.rate), ("first", Some(remaining(0))));
        assert_eq!((b.result, b.rate), ("second", Some(remaining(7))));
    }

    #[tokio::test]
    async fn a_call_without_headers_answers_none_and_notes_outside_a_call_go_nowhere() {
        note(remaining(0));
        let a = answered(async { 1 }).await;
        assert_eq!(a.rate, None);
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn reset_is_read_as_seconds_or_as_a_unix_time() {
        let h = headers(&[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "7"),
        ]);
        let read = RateHeaders::read(&h, 1_700_000_000);
        assert_eq!(
            read,
            Some(RateHeaders {
                limit: Some(100),
                remaining: Some(0),
                reset_secs: Some(7)
            })
        );
        let h = headers(&[("X-RateLimit-Reset", "1700000012")]);
        let read = RateHeaders::read(&h, 1_700_000_000);
        assert_eq!(read.and_then(|r| r.reset_secs), Some(12));
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        // 2026-10-21 07:28:00 UTC.
        let now = 1_792_567_680;
        assert_eq!(retry_after(" 7 ", now), Some(7));
        assert_eq!(retry_after("Wed, 21 Oct 2026 07:28:30 GMT", now), Some(30));
        assert_eq!(retry_after("Wed, 21 Oct 2026 07:27:00 GMT", now), Some(0));
        assert_eq!(retry_after("soon", now), None);
    }

    #[test]
    fn answers_without_the_headers_or_with_garbage_say_nothing() {
        assert_eq!(RateHeaders::read(&HeaderMap::new(), 0), None);
        let h = headers(&[("x-ratelimit-remaining", "lots")]);
        assert_eq!(RateHeaders::read(&h, 0), None);
    }
}

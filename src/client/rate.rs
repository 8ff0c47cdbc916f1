//! The `X-RateLimit-*` headers some services send with every answer (the
//! quota, what is left of it, when it resets), read once here so that the
//! run's controller can pause before the quota runs out instead of after.

use reqwest::header::HeaderMap;

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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
    fn answers_without_the_headers_or_with_garbage_say_nothing() {
        assert_eq!(RateHeaders::read(&HeaderMap::new(), 0), None);
        let h = headers(&[("x-ratelimit-remaining", "lots")]);
        assert_eq!(RateHeaders::read(&h, 0), None);
    }
}

//! Backoff: how long to wait before trying a request again, for every
//! caller that retries (the ETL's transport and its downloads alike).

use std::time::Duration;

const BASE_DELAY_MS: u64 = 200;
const MAX_DELAY_MS: u64 = 20_000;

/// The delay before retry `attempt` (0-based), or what the server asked
/// for. Full jitter, as in AWS's "Exponential Backoff And Jitter": a
/// uniform draw from `[0, min(MAX, BASE * 2^attempt)]`. Decision: full
/// rather than equal jitter, because many workers failing together (a
/// target that restarts) then come back spread over the whole window
/// instead of all in its second half.
pub fn delay(attempt: u32, retry_after: Option<u64>) -> Duration {
    if let Some(secs) = retry_after {
        return Duration::from_secs(secs.min(300));
    }
    let window = window_ms(attempt);
    let mut buf = [0u8; 8];
    // Without the system's randomness (never seen), the longest delay of
    // the window: a slower retry, never a burst of them at once.
    let random = getrandom::fill(&mut buf)
        .map(|_| u64::from_le_bytes(buf))
        .unwrap_or(window);
    Duration::from_millis(random % (window + 1))
}

/// The upper bound of retry `attempt`'s delay, in milliseconds.
fn window_ms(attempt: u32) -> u64 {
    BASE_DELAY_MS
        .saturating_mul(1u64 << attempt.min(16))
        .min(MAX_DELAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_capped_and_retry_after_wins() {
        assert!(delay(0, None) <= Duration::from_millis(BASE_DELAY_MS));
        assert!(delay(30, None) <= Duration::from_millis(MAX_DELAY_MS));
        assert_eq!(delay(0, Some(7)), Duration::from_secs(7));
    }

    /// Full jitter: every draw lies in `[0, window]`, and draws reach into
    /// the window's lower half (equal jitter never goes below half).
    #[test]
    fn delays_are_full_jitter_over_the_whole_window() {
        for attempt in [0, 3, 7, 30] {
            let window = Duration::from_millis(window_ms(attempt));
            let draws: Vec<Duration> = (0..400).map(|_| delay(attempt, None)).collect();
            assert!(draws.iter().all(|d| *d <= window), "attempt {attempt}");
            assert!(
                draws.iter().any(|d| *d < window / 2),
                "attempt {attempt}: no draw below half the window"
            );
        }
        assert_eq!(window_ms(0), BASE_DELAY_MS);
        assert_eq!(window_ms(3), BASE_DELAY_MS * 8);
        assert_eq!(window_ms(30), MAX_DELAY_MS);
    }
}

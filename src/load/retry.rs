//! Retries: 408, 429, 5xx and connection errors are retried with
//! exponential backoff and full jitter, honouring `Retry-After`; a 401 is
//! retried once after a token refresh; any other error is final and goes to
//! the rejects file with the server's message.

use super::target::Connected;
use crate::client::ClientError;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BASE_DELAY_MS: u64 = 200;
const MAX_DELAY_MS: u64 = 20_000;

/// The delay before retry `attempt` (0-based): full jitter over an
/// exponentially growing window, or what the server asked for.
pub fn delay(attempt: u32, retry_after: Option<u64>) -> Duration {
    if let Some(secs) = retry_after {
        return Duration::from_secs(secs.min(300));
    }
    let window = BASE_DELAY_MS
        .saturating_mul(1u64 << attempt.min(16))
        .min(MAX_DELAY_MS);
    let mut buf = [0u8; 8];
    let random = getrandom::fill(&mut buf)
        .map(|_| u64::from_le_bytes(buf))
        .unwrap_or(window / 2);
    Duration::from_millis(window / 2 + random % (window / 2 + 1))
}

/// Runs `call` until it succeeds, fails for good, or `retries` run out.
/// Every retry is counted in `retried`.
pub async fn retrying<T, F, Fut>(
    conn: &Connected,
    retries: u32,
    retried: &AtomicU64,
    mut call: F,
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut attempt = 0;
    let mut refreshed = false;
    loop {
        let token = conn.client.token();
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) if e.status() == Some(401) && !refreshed && conn.refresh(&token).await => {
                refreshed = true
            }
            Err(e) if e.is_transient() && attempt < retries => {
                tokio::time::sleep(delay(attempt, e.retry_after())).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
        retried.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_capped_and_retry_after_wins() {
        assert!(delay(0, None) <= Duration::from_millis(BASE_DELAY_MS));
        assert!(delay(3, None) >= Duration::from_millis(BASE_DELAY_MS * 4));
        assert!(delay(30, None) <= Duration::from_millis(MAX_DELAY_MS));
        assert_eq!(delay(0, Some(7)), Duration::from_secs(7));
    }
}

//! Injected failures, for testing clients against a server that misbehaves
//! the way real ones do: `serve --faults SPEC --fault-seed N` (off by
//! default; only the `serve` flags and [`ServeOptions`](super::ServeOptions)
//! can turn it on, never a pipeline file, and the server warns loudly on
//! start when it is on).
//!
//! SPEC is a comma-separated list of `KEY=SHARE` (SHARE from 0 to 1):
//!
//! - `500=p`: answer 500 with the error body (`RestException`); the handler
//!   does not run.
//! - `429=p`: answer 429 with `Retry-After: 1`; the handler does not run.
//! - `reset=p`: drop the connection before the handler runs: the client
//!   sees a transport error and nothing was written.
//! - `reset_after=p`: run the handler (its write commits), then drop the
//!   connection instead of answering: the client sees a transport error
//!   although the write happened. This is what makes blind retries of
//!   non-idempotent writes dangerous.
//! - `delay=D@p`: wait D (`200ms`, `2s`, `1.5s`) before handling.
//! - `quota=p`: run the handler and answer as usual, with the headers of a
//!   spent quota (`X-RateLimit-Limit: 100`, `X-RateLimit-Remaining: 0`,
//!   `X-RateLimit-Reset: 1`): a client should hold back until the reset.
//!   The one fault whose answer succeeds and says so only in its headers.
//! - `stats_count=N`: not a share but a lie: every answer of
//!   `GET /v3/groups/{id}/stats` reports `total_count` N, whatever the group
//!   holds, to test that a client never trusts the count (sizes no memory
//!   from it, reads pages until they end). Other faults still apply.
//!
//! Each request gets at most one fault, so the shares add up to at most 1.
//! One uniform number per `/v3` request is drawn from a PRNG (SplitMix64)
//! seeded with `--fault-seed`, in the order requests arrive at this layer;
//! the shares split [0, 1) in the order above. Requests sent one after
//! another therefore meet the same faults for the same seed; concurrent
//! requests draw in whatever order they arrive, so which of them meets which
//! fault varies between runs (the totals do not). The OAuth token endpoint
//! is never faulted.
//!
//! A dropped connection is an answer whose body fails at once: hyper then
//! closes the connection without completing the response, so the client
//! reads an incomplete message.

use crate::error::ApiError;
use crate::ratelimit::too_many;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What `--faults` accepts, shown in every parse error.
pub const VALID_KEYS: &str = "valid keys: 500=SHARE, 429=SHARE, reset=SHARE, reset_after=SHARE, \
     delay=DURATION@SHARE (SHARE from 0 to 1, DURATION like 200ms or 2s), quota=SHARE, \
     stats_count=N \
     (a whole number), comma-separated, \
     e.g. 500=0.05,429=0.05,reset=0.01,reset_after=0.01,delay=200ms@0.05";

/// The parsed `--faults` SPEC: the share of requests that meet each fault.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultSpec {
    pub error_500: f64,
    pub error_429: f64,
    pub reset: f64,
    pub reset_after: f64,
    /// How long, and the share of requests delayed.
    pub delay: Option<(Duration, f64)>,
    /// Answered with the headers of a spent quota.
    pub quota: f64,
    /// The `total_count` every group's stats report instead of the truth.
    pub stats_count: Option<i64>,
}

/// Why a SPEC was refused; the message names the valid keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid fault spec: {0}; {VALID_KEYS}")]
pub struct FaultSpecError(pub String);

fn share(key: &str, text: &str) -> Result<f64, FaultSpecError> {
    match text.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(FaultSpecError(format!(
            "the share of \"{key}\" must be a number from 0 to 1, not \"{}\"",
            text.trim()
        ))),
    }
}

fn duration(text: &str) -> Result<Duration, FaultSpecError> {
    let text = text.trim();
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else {
        (text, f64::NAN)
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n >= 0.0 && n.is_finite() && scale.is_finite() && n * scale <= 3600.0 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => Err(FaultSpecError(format!(
            "the delay \"{text}\" must be a duration like 200ms or 2s (at most 1 hour)"
        ))),
    }
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut spec = FaultSpec::default();
        let mut seen: Vec<String> = Vec::new();
        for entry in text.split(',').map(str::trim) {
            if entry.is_empty() {
                continue;
            }
            let Some((key, value)) = entry.split_once('=') else {
                return Err(FaultSpecError(format!("\"{entry}\" has no =SHARE")));
            };
            let key = key.trim().to_ascii_lowercase();
            if seen.contains(&key) {
                return Err(FaultSpecError(format!("\"{key}\" is given twice")));
            }
            match key.as_str() {
                "500" => spec.error_500 = share(&key, value)?,
                "429" => spec.error_429 = share(&key, value)?,
                "reset" => spec.reset = share(&key, value)?,
                "reset_after" => spec.reset_after = share(&key, value)?,
                "quota" => spec.quota = share(&key, value)?,
                "delay" => {
                    let Some((d, p)) = value.split_once('@') else {
                        return Err(FaultSpecError(format!(
                            "delay takes DURATION@SHARE (like delay=200ms@0.05), not \"{}\"",
                            value.trim()
                        )));
                    };
                    spec.delay = Some((duration(d)?, share("delay", p)?));
                }
                "stats_count" => match value.trim().parse::<i64>() {
                    Ok(n) if n >= 0 => spec.stats_count = Some(n),
                    _ => {
                        return Err(FaultSpecError(format!(
                            "stats_count takes a whole number of receivers, not \"{}\"",
                            value.trim()
                        )));
                    }
                },
                _ => return Err(FaultSpecError(format!("unknown fault \"{key}\""))),
            }
            seen.push(key);
        }
        if seen.is_empty() {
            return Err(FaultSpecError("no fault given".into()));
        }
        let total = spec.total();
        if total > 1.0 + 1e-9 {
            return Err(FaultSpecError(format!(
                "the shares add up to {total}, more than 1 (a request meets at most one fault)"
            )));
        }
        Ok(spec)
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (key, p) in [
            ("500", self.error_500),
            ("429", self.error_429),
            ("reset", self.reset),
            ("reset_after", self.reset_after),
        ] {
            if p > 0.0 {
                parts.push(format!("{key}={p}"));
            }
        }
        if let Some((d, p)) = self.delay.filter(|(_, p)| *p > 0.0) {
            parts.push(format!("delay={}ms@{p}", d.as_millis()));
        }
        if self.quota > 0.0 {
            parts.push(format!("quota={}", self.quota));
        }
        if let Some(n) = self.stats_count {
            parts.push(format!("stats_count={n}"));
        }
        if parts.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&parts.join(","))
    }
}

impl FaultSpec {
    fn total(&self) -> f64 {
        self.error_500
            + self.error_429
            + self.reset
            + self.reset_after
            + self.delay.map_or(0.0, |(_, p)| p)
            + self.quota
    }

    /// The fault for a uniform draw `u` in [0, 1): the shares split the
    /// interval in the order of the module comment.
    fn pick(&self, u: f64) -> Fault {
        let delay = self.delay.unwrap_or_default();
        let mut edge = 0.0;
        for (p, fault) in [
            (self.error_500, Fault::Error500),
            (self.error_429, Fault::Error429),
            (self.reset, Fault::Reset),
            (self.reset_after, Fault::ResetAfter),
            (delay.1, Fault::Delay(delay.0)),
            (self.quota, Fault::Quota),
        ] {
            edge += p;
            if u < edge {
                return fault;
            }
        }
        Fault::None
    }
}

/// What one request meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    Error500,
    Error429,
    Reset,
    ResetAfter,
    Delay(Duration),
    Quota,
}

/// SplitMix64: small, fast, and the same sequence on every platform.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The injector of a running server: the spec and the seeded draw.
pub struct Faults {
    spec: FaultSpec,
    rng: Mutex<SplitMix64>,
}

impl Faults {
    pub fn new(spec: FaultSpec, seed: u64) -> Self {
        Faults {
            spec,
            rng: Mutex::new(SplitMix64(seed)),
        }
    }

    /// The next request's fault (one draw per call).
    pub fn draw(&self) -> Fault {
        let u = self.rng.lock().unwrap_or_else(|p| p.into_inner()).unit();
        self.spec.pick(u)
    }
}

/// An answer that never completes: its body fails at once, so hyper drops
/// the connection and the client sees a transport error.
fn dropped_connection() -> Response {
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected fault: connection dropped",
        ))
    });
    Response::new(Body::from_stream(failing))
}

/// Whether `req` asks for a group's stats (`GET /v3/groups/{id}/stats`).
fn asks_group_stats(req: &Request) -> bool {
    let segments: Vec<&str> = req.uri().path().trim_end_matches('/').split('/').collect();
    req.method() == axum::http::Method::GET
        && matches!(segments.as_slice(), ["", "v3", "groups", _, "stats"])
}

/// A stats answer with its `total_count` replaced by `count`; any other
/// answer (an error, a body that is not an object) passes unchanged.
async fn lie_about_count(response: Response, count: i64) -> Response {
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return dropped_connection();
    };
    let mut json: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    if let Some(obj) = json.as_object_mut() {
        obj.insert("total_count".into(), count.into());
    }
    let body = serde_json::to_vec(&json).unwrap_or_else(|_| bytes.to_vec());
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// The middleware on the `/v3` routes, outside the token check (a fault
/// stands for the network or the service failing, whoever asks).
pub async fn inject(
    State(faults): State<Option<Arc<Faults>>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(faults) = &faults else {
        return next.run(req).await;
    };
    let lie = faults.spec.stats_count.filter(|_| asks_group_stats(&req));
    let next = |req| async move {
        let response = next.run(req).await;
        match lie {
            Some(count) => lie_about_count(response, count).await,
            None => response,
        }
    };
    let fault = faults.draw();
    if fault != Fault::None {
        tracing::debug!(target: log_target!(), ?fault, path = %req.uri().path(), "injected fault");
    }
    match fault {
        Fault::None => next(req).await,
        Fault::Error500 => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error: RestException (injected fault)",
        )
        .into_response(),
        Fault::Error429 => too_many(
            1,
            "Too Many Requests: injected fault; retry after 1 s".into(),
        ),
        Fault::Reset => dropped_connection(),
        Fault::ResetAfter => {
            // The handler has finished (and committed) when `run` returns.
            drop(next(req).await);
            dropped_connection()
        }
        Fault::Delay(d) => {
            tokio::time::sleep(d).await;
            next(req).await
        }
        Fault::Quota => {
            let mut response = next(req).await;
            let headers = response.headers_mut();
            for (name, value) in [
                ("x-ratelimit-limit", "100"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1"),
            ] {
                headers.insert(name, axum::http::HeaderValue::from_static(value));
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<FaultSpec, String> {
        s.parse::<FaultSpec>().map_err(|e| e.to_string())
    }

    #[test]
    fn the_full_example_parses() {
        let spec = parse("500=0.05,429=0.05,reset=0.01,reset_after=0.01,delay=200ms@0.05").unwrap();
        assert_eq!(
            spec,
            FaultSpec {
                error_500: 0.05,
                error_429: 0.05,
                reset: 0.01,
                reset_after: 0.01,
                delay: Some((Duration::from_millis(200), 0.05)),
                quota: 0.0,
                stats_count: None,
            }
        );
        assert_eq!(
            spec.to_string(),
            "500=0.05,429=0.05,reset=0.01,reset_after=0.01,delay=200ms@0.05"
        );
    }

    #[test]
    fn stats_count_takes_a_whole_number_and_adds_no_share() {
        let spec = parse("stats_count=1000000000000000,500=1").unwrap();
        assert_eq!(spec.stats_count, Some(1_000_000_000_000_000));
        assert_eq!(spec.to_string(), "500=1,stats_count=1000000000000000");
        assert!(
            parse("stats_count=-1")
                .unwrap_err()
                .contains("stats_count takes a whole number of receivers, not \"-1\"")
        );
    }

    #[test]
    fn spaces_case_and_seconds_are_accepted() {
        let spec = parse(" RESET = 0.5 , delay=1.5s@0.25 ").unwrap();
        assert_eq!(spec.reset, 0.5);
        assert_eq!(spec.delay, Some((Duration::from_millis(1500), 0.25)));
    }

    #[test]
    fn an_unknown_key_is_named_with_the_valid_ones() {
        assert_eq!(
            parse("503=0.1").unwrap_err(),
            format!("invalid fault spec: unknown fault \"503\"; {VALID_KEYS}")
        );
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        let err = |s| parse(s).unwrap_err();
        assert!(err("500=1.5").starts_with(
            "invalid fault spec: the share of \"500\" must be a number from 0 to 1, not \"1.5\";"
        ));
        assert!(err("500").starts_with("invalid fault spec: \"500\" has no =SHARE;"));
        assert!(err("delay=0.1").starts_with("invalid fault spec: delay takes DURATION@SHARE"));
        assert!(err("delay=fast@0.1").contains("the delay \"fast\" must be a duration"));
        assert!(err("500=0.1,500=0.2").contains("\"500\" is given twice"));
        assert!(err("").contains("no fault given"));
        assert!(err("500=0.6,429=0.6").contains("add up to 1.2, more than 1"));
        assert!(err("reset=x").contains("valid keys: 500=SHARE"));
    }

    #[test]
    fn draws_split_the_unit_interval_in_order() {
        let spec =
            parse("500=0.1,429=0.1,reset=0.1,reset_after=0.1,delay=5ms@0.1,quota=0.1").unwrap();
        assert_eq!(spec.pick(0.05), Fault::Error500);
        assert_eq!(spec.pick(0.15), Fault::Error429);
        assert_eq!(spec.pick(0.25), Fault::Reset);
        assert_eq!(spec.pick(0.35), Fault::ResetAfter);
        assert_eq!(spec.pick(0.45), Fault::Delay(Duration::from_millis(5)));
        assert_eq!(spec.pick(0.55), Fault::Quota);
        assert_eq!(spec.pick(0.65), Fault::None);
    }

    #[test]
    fn the_same_seed_draws_the_same_faults_and_shares_hold() {
        let spec = parse("500=0.2").unwrap();
        let run = |seed| {
            let f = Faults::new(spec.clone(), seed);
            (0..10_000).map(|_| f.draw()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let errors = run(7).iter().filter(|f| **f == Fault::Error500).count();
        // Binomial(10,000, 0.2): sd 40; 4 sd either side.
        assert!((1840..=2160).contains(&errors), "{errors}");
    }
}

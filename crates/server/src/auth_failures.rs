//! Failed client authentications at the token endpoint, limited per client
//! id and per source address (issue 43): a client id that failed
//! [`CLIENT_BURST`] times in a row, or an address that failed
//! [`ADDRESS_BURST`] times, is answered 429 with `Retry-After` until its
//! allowance comes back, one failure per [`REFILL_SECS`]. Wrong secrets then
//! cost an attacker time, not the server its CPU and log.
//!
//! Decision: the limit counts failures only, so a well-behaved client never
//! meets it, and while it holds the secret is not even checked (a guess
//! made during the wait tells nothing). Per client id as well as per
//! address: an attacker with many addresses still gets few guesses at one
//! client; the price is that such an attacker can keep that client out of
//! the token endpoint meanwhile (its tokens keep working). An address gets
//! a larger allowance than a client, as several clients may share one (a
//! CI runner, a NAT), and one misconfigured client there should not lock
//! out the others at once.
//! Kept in this process's memory, on either store: with several server
//! processes on one PostgreSQL database each counts its own.

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed to one client id in a row before the wait.
pub const CLIENT_BURST: u32 = 10;
/// Failures allowed from one address in a row before the wait.
pub const ADDRESS_BURST: u32 = 30;
/// Seconds that give back one failure.
pub const REFILL_SECS: u64 = 6;
/// Above this many keys, those back at their full allowance are forgotten.
const RETAIN_ABOVE: usize = 10_000;
/// Above this many keys still counting, all are forgotten.
const FORGET_ALL_ABOVE: usize = 200_000;

/// Who failed: the client id presented, or the address it came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Client(String),
    Address(IpAddr),
}

impl Key {
    /// As the 429 names it.
    pub fn described(&self) -> &'static str {
        match self {
            Key::Client(_) => "for this client",
            Key::Address(_) => "from this address",
        }
    }
}

/// A GCRA per key over failures: `tat` is when the key is back at its full
/// allowance.
pub struct AuthFailures {
    client_burst: u32,
    address_burst: u32,
    refill: Duration,
    tat: Mutex<HashMap<Key, Instant>>,
}

impl Default for AuthFailures {
    fn default() -> Self {
        AuthFailures::new(
            CLIENT_BURST,
            ADDRESS_BURST,
            Duration::from_secs(REFILL_SECS),
        )
    }
}

impl AuthFailures {
    pub fn new(client_burst: u32, address_burst: u32, refill: Duration) -> Self {
        AuthFailures {
            client_burst: client_burst.max(1),
            address_burst: address_burst.max(1),
            refill,
            tat: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Instant>> {
        self.tat.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first of `keys` that has no failure left, with the whole seconds
    /// (at least 1) until it has one again.
    pub fn waiting<'k>(&self, keys: &'k [Key], now: Instant) -> Option<(&'k Key, u64)> {
        let tat = self.lock();
        keys.iter().find_map(|key| {
            let burst = match key {
                Key::Client(_) => self.client_burst,
                Key::Address(_) => self.address_burst,
            };
            let grace = self.refill * (burst - 1);
            let wait = tat
                .get(key)?
                .checked_duration_since(now)?
                .checked_sub(grace)?;
            (!wait.is_zero()).then(|| (key, wait.as_secs_f64().ceil().max(1.0) as u64))
        })
    }

    /// Counts one failure against each of `keys`.
    pub fn failed(&self, keys: &[Key], now: Instant) {
        let mut tat = self.lock();
        if tat.len() > RETAIN_ABOVE {
            tat.retain(|_, t| *t > now);
        }
        // Failures from very many addresses at once: memory comes first,
        // and every key starts over.
        if tat.len() > FORGET_ALL_ABOVE {
            tracing::warn!(target: log_target!(),
                keys = tat.len(),
                "failed client authentications from too many addresses: counts start over"
            );
            tat.clear();
        }
        for key in keys {
            let t = tat.entry(key.clone()).or_insert(now);
            *t = (*t).max(now) + self.refill;
        }
    }
}

/// The address a request came from (the in-process server sets it on every
/// request; `None` where the app is driven without a socket).
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Peer(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_fails_its_burst_then_waits_for_one_refill_while_another_goes_on() {
        let limit = AuthFailures::new(3, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        let a = [Key::Client("a".into())];
        for _ in 0..3 {
            assert_eq!(limit.waiting(&a, t0), None);
            limit.failed(&a, t0);
        }
        assert_eq!(limit.waiting(&a, t0), Some((&a[0], 6)));
        assert_eq!(limit.waiting(&a, t0 + Duration::from_secs(6)), None);
        assert_eq!(limit.waiting(&[Key::Client("b".into())], t0), None);
    }

    #[test]
    fn an_address_has_a_larger_allowance_than_a_client() {
        let limit = AuthFailures::new(3, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        let from = Key::Address(IpAddr::from([127, 0, 0, 1]));
        for n in 0..5 {
            limit.failed(&[Key::Client(format!("c{n}")), from.clone()], t0);
        }
        assert_eq!(limit.waiting(&[Key::Client("c9".into())], t0), None);
        assert_eq!(
            limit.waiting(std::slice::from_ref(&from), t0),
            Some((&from, 6))
        );
    }
}

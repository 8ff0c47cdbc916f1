//! Failed authentications, limited by who tried from where (issues 43 and
//! 56): wrong client secrets at the token endpoint and wrong passwords on
//! the login form of the authorization page. Each is answered 429 with
//! `Retry-After` once its allowance is spent, and gets one failure back
//! every [`REFILL_SECS`]; while it waits the secret or password is not even
//! checked (no Argon2 is computed for a refused login), so wrong guesses
//! cost the guesser time, not the server its CPU and log.
//!
//! Exactly what is counted, by [`Limit`], each failure against two keys:
//!
//! - **the name from the address**: at the token endpoint the client id
//!   presented from one source address, [`CLIENT_BURST`] failures in a row;
//!   on the login form the login (the application's account and the email,
//!   trimmed and lowercased) from one source address, [`LOGIN_BURST`] in a
//!   row. A success (the right secret, the right password) forgets this key:
//!   "in a row" means since the last success from that address.
//! - **the address**: [`ADDRESS_BURST`] failures from one source address
//!   whatever the client id, [`LOGIN_ADDRESS_BURST`] whatever the login. A
//!   success does not reset it: an attacker holding one client's secret, or
//!   one user's password, could otherwise reset it between guesses at others.
//!
//! The token endpoint and the login form count apart (two [`Limit`]s); only
//! failures count, and a request refused with 429 is not counted again. An
//! attempt is counted as a failure when it is let through and given back if
//! it succeeds ([`Limit::admit`]), so that many sent at once cannot all pass
//! before the first has failed.
//!
//! The source address is the connection's peer. Behind a reverse proxy given
//! to `serve --trusted-proxy ADDR` (repeatable, none by default), it is the
//! address that proxy forwarded for: read from `X-Forwarded-For` or, when a
//! request has none, `Forwarded` (RFC 7239 `for=`), right to left past every
//! trusted proxy ([`AuthFailures::source`]). From any other peer both headers
//! are ignored, as anyone can send them; a trusted proxy is matched exactly.
//! An IPv4-mapped IPv6 address counts as its IPv4 address, and an IPv6
//! address by its /64 (one host's allocation; counted apart, each of its
//! addresses would be a new allowance).
//!
//! Decision (issue 56): the name is counted only together with the address.
//! A client id is public in OAuth, and counted alone (as issue 43 did) anyone
//! could keep a client out of the token endpoint, refreshes included, with a
//! wrong secret every few seconds: once its access token expired it was
//! locked out. Now a failing address is slowed, and another address with the
//! right secret is not. The price: an attacker with many addresses gets
//! [`CLIENT_BURST`] guesses per address, which tells nothing against a
//! secret of 256 random bits; a user's password is weaker, so each address
//! gets few guesses at it ([`LOGIN_BURST`]) and few at all logins together
//! ([`LOGIN_ADDRESS_BURST`]). An address gets a larger allowance than a
//! name, as several clients or people may share one (a CI runner, a NAT),
//! and one misconfigured client there should not lock out the others at once.
//! Kept in this process's memory, on either store: with several server
//! processes on one PostgreSQL database each counts its own.

use crate::store::Clock;
use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Failures allowed to one client id from one address in a row before the wait.
pub const CLIENT_BURST: u32 = 10;
/// Failures allowed from one address, whatever the client id, before the wait.
pub const ADDRESS_BURST: u32 = 30;
/// Failed logins allowed to one login (account and email) from one address in a row.
pub const LOGIN_BURST: u32 = 10;
/// Failed logins allowed from one address, whatever the login.
pub const LOGIN_ADDRESS_BURST: u32 = 30;
/// Seconds that give back one failure.
pub const REFILL_SECS: u64 = 6;
/// Above this many keys, those back at their full allowance are forgotten.
const RETAIN_ABOVE: usize = 10_000;
/// Above this many keys still counting, all are forgotten.
const FORGET_ALL_ABOVE: usize = 200_000;

/// The time the limits go by: the real time, as far ahead as the server's
/// clock is (a test that advances its clock refills the allowances).
pub fn now(clock: &Clock) -> Instant {
    let ahead = Duration::from_secs(u64::try_from(clock.ahead_secs()).unwrap_or(0));
    Instant::now() + ahead
}

/// The two limits and where requests come from (`AppState::auth_failures`,
/// [`crate::state`]).
pub struct AuthFailures {
    clients: Limit,
    logins: Limit,
    /// `serve --trusted-proxy`: peers whose forwarded headers are believed.
    trusted_proxies: Vec<IpAddr>,
}

impl Default for AuthFailures {
    fn default() -> Self {
        AuthFailures::new(Vec::new())
    }
}

impl AuthFailures {
    /// The limits of this module's constants, believing the forwarded
    /// headers of `trusted_proxies` only.
    pub fn new(trusted_proxies: Vec<IpAddr>) -> Self {
        let refill = Duration::from_secs(REFILL_SECS);
        AuthFailures {
            clients: Limit::new(CLIENT_BURST, ADDRESS_BURST, refill),
            logins: Limit::new(LOGIN_BURST, LOGIN_ADDRESS_BURST, refill),
            trusted_proxies: trusted_proxies.iter().map(IpAddr::to_canonical).collect(),
        }
    }

    /// Failed client authentications at the token endpoint.
    pub fn clients(&self) -> &Limit {
        &self.clients
    }

    /// Failed logins on the authorization page's form.
    pub fn logins(&self) -> &Limit {
        &self.logins
    }

    /// Exactly (an IPv4-mapped address as IPv4, never by prefix).
    fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.contains(&ip.to_canonical())
    }

    /// Where a request from `peer` with `headers` comes from: `peer`, or if
    /// it is a trusted proxy, the address it forwarded for. The hops of
    /// `X-Forwarded-For` (else of `Forwarded`) are read right to left, each
    /// written by the hop after it: past every trusted proxy, to the first
    /// address that is not one. A hop that names no address (`unknown`, an
    /// obfuscated name, garbage) ends the walk at the last address known.
    pub fn source(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let mut source = peer?.to_canonical();
        if !self.trusts(source) {
            return Some(source);
        }
        for hop in forwarded_for(headers).into_iter().rev() {
            match hop {
                Some(ip) if self.trusts(source) => source = ip.to_canonical(),
                _ => break,
            }
        }
        Some(source)
    }
}

/// The hops a request names, nearest the client first: of every
/// `X-Forwarded-For` line or, without one, the `for=` of every `Forwarded`
/// element (`None` for a hop that names no address).
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let lines = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    };
    let xff = lines("x-forwarded-for");
    if !xff.is_empty() {
        return xff
            .iter()
            .flat_map(|line| line.split(','))
            .map(node)
            .collect();
    }
    lines("forwarded")
        .iter()
        .flat_map(|line| line.split(','))
        .map(|element| {
            element.split(';').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                key.trim().eq_ignore_ascii_case("for").then_some(value)
            })
        })
        .map(|value| value.and_then(node))
        .collect()
}

/// The address of a node as proxies write it: `1.2.3.4`, `1.2.3.4:80`,
/// `::1`, `[::1]`, `[::1]:80`, any of them in quotes.
fn node(text: &str) -> Option<IpAddr> {
    let text = text.trim().trim_matches('"');
    if let Ok(ip) = text.parse() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    text.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// An address as it is counted and compared: an IPv4-mapped IPv6 address
/// as IPv4, any other IPv6 address by its /64.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !(u128::MAX >> 64);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// Who failed: a name (its SHA-256, so a long one costs no memory) from an
/// address, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    NameFrom([u8; 32], Option<IpAddr>),
    Address(IpAddr),
}

/// Which allowance is spent, for the 429 to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// The name's, from this address.
    NameFromAddress,
    /// The address's, whatever the name.
    Address,
}

/// One attempt's keys: the name (a client id, a login) from the source
/// address, and the address.
pub struct Attempt {
    name_from: Key,
    address: Option<Key>,
}

impl Attempt {
    /// `name` tried from `from` (`None` where the app is driven without a socket).
    pub fn new(name: &str, from: Option<IpAddr>) -> Attempt {
        let from = from.map(canonical);
        Attempt {
            name_from: Key::NameFrom(Sha256::digest(name.as_bytes()).into(), from),
            address: from.map(Key::Address),
        }
    }

    fn keys(&self) -> impl Iterator<Item = &Key> {
        std::iter::once(&self.name_from).chain(self.address.as_ref())
    }
}

/// A GCRA per key over failures: `tat` is when the key is back at its full
/// allowance.
pub struct Limit {
    name_burst: u32,
    address_burst: u32,
    refill: Duration,
    tat: Mutex<HashMap<Key, Instant>>,
}

impl Limit {
    pub fn new(name_burst: u32, address_burst: u32, refill: Duration) -> Self {
        Limit {
            name_burst: name_burst.max(1),
            address_burst: address_burst.max(1),
            refill,
            tat: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Instant>> {
        self.tat.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits `attempt`, or refuses it while one of its allowances is spent:
    /// then `Err` names that allowance, with the whole seconds (at least 1)
    /// until it has a failure again, and nothing is counted. An admitted
    /// attempt is counted as a failure at once, under the same lock as the
    /// check, so that attempts sent at once cannot all pass the check before
    /// any has failed; a failure then needs nothing more, a success is told
    /// with [`Limit::succeeded`], an attempt that could not be decided (a
    /// server error) with [`Limit::undecided`].
    pub fn admit(&self, attempt: &Attempt, now: Instant) -> Result<(), (Spent, u64)> {
        let mut tat = self.lock();
        let spent = attempt.keys().find_map(|key| {
            let (burst, spent) = match key {
                Key::NameFrom(..) => (self.name_burst, Spent::NameFromAddress),
                Key::Address(_) => (self.address_burst, Spent::Address),
            };
            let grace = self.refill * (burst - 1);
            let wait = tat
                .get(key)?
                .checked_duration_since(now)?
                .checked_sub(grace)?;
            (!wait.is_zero()).then(|| (spent, wait.as_secs_f64().ceil().max(1.0) as u64))
        });
        if let Some(spent) = spent {
            return Err(spent);
        }
        if tat.len() > RETAIN_ABOVE {
            tat.retain(|_, t| *t > now);
        }
        // Failures from very many addresses at once: memory comes first,
        // and every key starts over.
        if tat.len() > FORGET_ALL_ABOVE {
            tracing::warn!(target: log_target!(),
                keys = tat.len(),
                "failed authentications from too many addresses: counts start over"
            );
            tat.clear();
        }
        for key in attempt.keys() {
            let t = tat.entry(key.clone()).or_insert(now);
            *t = (*t).max(now) + self.refill;
        }
        Ok(())
    }

    /// The admitted `attempt` succeeded: its name from its address starts
    /// over, and its address gets back the failure [`Limit::admit`] counted
    /// (the address's earlier failures stay).
    pub fn succeeded(&self, attempt: &Attempt) {
        let mut tat = self.lock();
        tat.remove(&attempt.name_from);
        if let Some(address) = &attempt.address {
            self.give_back(&mut tat, address);
        }
    }

    /// The admitted `attempt` was not decided (the server failed): the
    /// failure [`Limit::admit`] counted is given back to both keys.
    pub fn undecided(&self, attempt: &Attempt) {
        let mut tat = self.lock();
        for key in attempt.keys() {
            self.give_back(&mut tat, key);
        }
    }

    fn give_back(&self, tat: &mut HashMap<Key, Instant>, key: &Key) {
        if let Some(t) = tat.get_mut(key) {
            *t = t.checked_sub(self.refill).unwrap_or(*t);
        }
    }
}

/// The address a request comes from, as [`AuthFailures::source`] tells it
/// (the in-process server sets the peer on every request; `None` where the
/// app is driven without a socket).
pub struct Peer(pub Option<IpAddr>);

impl<S> FromRequestParts<S> for Peer
where
    S: Send + Sync,
    Arc<AuthFailures>: FromRef<S>,
{
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, Infallible> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        let failures = Arc::<AuthFailures>::from_ref(s);
        Ok(Peer(failures.source(peer, &parts.headers)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_name_fails_its_burst_from_one_address_and_waits_while_another_address_goes_on() {
        let limit = Limit::new(3, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        let attacker = Attempt::new("a", Some(ip("127.0.0.2")));
        for _ in 0..3 {
            assert_eq!(limit.admit(&attacker, t0), Ok(()));
        }
        assert_eq!(limit.admit(&attacker, t0), Err((Spent::NameFromAddress, 6)));
        assert_eq!(limit.admit(&attacker, t0 + Duration::from_secs(6)), Ok(()));
        let client = Attempt::new("a", Some(ip("127.0.0.1")));
        assert_eq!(limit.admit(&client, t0), Ok(()));
        assert_eq!(limit.admit(&Attempt::new("b", None), t0), Ok(()));
    }

    #[test]
    fn a_success_resets_the_name_from_its_address_and_costs_the_address_nothing() {
        let limit = Limit::new(3, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        let from = Some(ip("127.0.0.1"));
        let a = Attempt::new("a", from);
        for _ in 0..2 {
            limit.admit(&a, t0).unwrap();
        }
        limit.admit(&a, t0).unwrap();
        limit.succeeded(&a);
        for _ in 0..2 {
            limit.admit(&a, t0).unwrap();
        }
        // Two failures in a row, not four: a third is let through. The
        // address has failed four times, and that third was its fifth.
        assert_eq!(limit.admit(&a, t0), Ok(()));
        assert_eq!(
            limit.admit(&Attempt::new("b", from), t0),
            Err((Spent::Address, 6))
        );
    }

    #[test]
    fn an_undecided_attempt_counts_for_nothing() {
        let limit = Limit::new(1, 1, Duration::from_secs(6));
        let t0 = Instant::now();
        let a = Attempt::new("a", Some(ip("127.0.0.1")));
        limit.admit(&a, t0).unwrap();
        limit.undecided(&a);
        assert_eq!(limit.admit(&a, t0), Ok(()));
        assert!(limit.admit(&a, t0).is_err());
    }

    #[test]
    fn an_address_has_a_larger_allowance_than_a_name() {
        let limit = Limit::new(3, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        let from = Some(ip("127.0.0.1"));
        for n in 0..5 {
            limit
                .admit(&Attempt::new(&format!("c{n}"), from), t0)
                .unwrap();
        }
        assert_eq!(
            limit.admit(&Attempt::new("c9", from), t0),
            Err((Spent::Address, 6))
        );
        assert_eq!(
            limit.admit(&Attempt::new("c9", Some(ip("127.0.0.2"))), t0),
            Ok(())
        );
    }

    #[test]
    fn an_ipv6_address_counts_by_its_64_and_a_mapped_ipv4_one_as_ipv4() {
        assert_eq!(canonical(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(canonical(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
        assert_eq!(canonical(ip("::1")), ip("::"));
        let limit = Limit::new(1, 5, Duration::from_secs(6));
        let t0 = Instant::now();
        limit
            .admit(&Attempt::new("a", Some(ip("2001:db8::1"))), t0)
            .unwrap();
        assert!(
            limit
                .admit(&Attempt::new("a", Some(ip("2001:db8::2"))), t0)
                .is_err()
        );
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn forwarded_headers_are_believed_only_from_a_trusted_proxy_and_past_it_only() {
        let limits = AuthFailures::new(vec![ip("10.0.0.1"), ip("10.0.0.2")]);
        let proxy = Some(ip("10.0.0.1"));
        let spoofed = headers(&[("x-forwarded-for", "198.51.100.9")]);
        // An untrusted peer's headers are ignored.
        assert_eq!(
            limits.source(Some(ip("192.0.2.7")), &spoofed),
            Some(ip("192.0.2.7"))
        );
        assert_eq!(limits.source(proxy, &spoofed), Some(ip("198.51.100.9")));
        // The client's own entries are on the left: the walk stops at the
        // first address that is not a trusted proxy.
        let chain = headers(&[
            ("x-forwarded-for", "1.1.1.1, 203.0.113.5"),
            ("x-forwarded-for", "10.0.0.2"),
        ]);
        assert_eq!(limits.source(proxy, &chain), Some(ip("203.0.113.5")));
        // Forwarded only without X-Forwarded-For.
        let forwarded = headers(&[(
            "forwarded",
            "for=1.1.1.1, For=\"[2001:db8:cafe::17]:4711\";proto=https",
        )]);
        assert_eq!(
            limits.source(proxy, &forwarded),
            Some(ip("2001:db8:cafe::17"))
        );
        // A trusted proxy is trusted exactly, not by its /64.
        let v6 = AuthFailures::new(vec![ip("2001:db8::1")]);
        assert_eq!(
            v6.source(Some(ip("2001:db8::2")), &spoofed),
            Some(ip("2001:db8::2"))
        );
        assert_eq!(
            v6.source(Some(ip("::ffff:10.0.0.1")), &spoofed),
            Some(ip("10.0.0.1"))
        );
        let unknown = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(limits.source(proxy, &unknown), Some(ip("10.0.0.1")));
        assert_eq!(
            limits.source(proxy, &headers(&[("x-forwarded-for", "203.0.113.5:443")])),
            Some(ip("203.0.113.5"))
        );
        assert_eq!(limits.source(proxy, &HeaderMap::new()), proxy);
        assert_eq!(limits.source(None, &spoofed), None);
    }
}

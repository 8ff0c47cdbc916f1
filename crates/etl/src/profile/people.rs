//! What the report shows of a step's people besides its columns: their
//! addresses, the state the mapping gives them (consent), their tags and
//! their orders. Bounded like the rest of the profile: counts, a few top-k
//! sketches and at most [`MAX_CURRENCIES`] currencies.

use super::sketch::TopK;
use crate::prepare::OrderLines;
use std::collections::BTreeMap;

/// Local parts that name a role or a mailbox, not a person (RFC 2142 and the
/// usual company mailboxes): a newsletter to them reaches whoever reads it,
/// or no one, and some services refuse them.
pub const ROLE_ACCOUNTS: &[&str] = &[
    "abuse",
    "admin",
    "administrator",
    "billing",
    "contact",
    "enquiries",
    "hello",
    "help",
    "hostmaster",
    "info",
    "jobs",
    "kontakt",
    "mail",
    "marketing",
    "newsletter",
    "no-reply",
    "noreply",
    "office",
    "postmaster",
    "privacy",
    "sales",
    "security",
    "service",
    "support",
    "team",
    "webmaster",
];

/// Domains kept by the addresses' top-k, and shown.
const DOMAINS_KEPT: usize = 64;
pub const DOMAINS_SHOWN: usize = 10;
/// Tags kept by the tags' top-k, and shown.
const TAGS_KEPT: usize = 64;
pub const TAGS_SHOWN: usize = 15;
/// Currencies the orders' totals keep; lines in others are counted apart.
pub const MAX_CURRENCIES: usize = 32;

/// The addresses of the rows to send.
#[derive(Debug, Clone)]
pub struct Addresses {
    pub total: u64,
    pub domains: TopK,
    /// Role accounts (`info@`, `noreply@`...), and which.
    pub role: u64,
    pub roles: TopK,
    /// A local part outside ASCII (`jörg@`), which not every mail system takes.
    pub non_ascii: u64,
    /// A domain outside ASCII or written as punycode (`xn--`).
    pub international: u64,
}

impl Default for Addresses {
    fn default() -> Self {
        Addresses {
            total: 0,
            domains: TopK::new(DOMAINS_KEPT),
            role: 0,
            roles: TopK::new(ROLE_ACCOUNTS.len()),
            non_ascii: 0,
            international: 0,
        }
    }
}

impl Addresses {
    pub fn add(&mut self, email: &str) {
        let Some((local, domain)) = email.rsplit_once('@') else {
            return;
        };
        self.total += 1;
        let domain = domain.to_lowercase();
        if !domain.is_ascii() || domain.split('.').any(|label| label.starts_with("xn--")) {
            self.international += 1;
        }
        self.domains.add(&domain);
        if !local.is_ascii() {
            self.non_ascii += 1;
        }
        let mailbox = local.split('+').next().unwrap_or(local).to_lowercase();
        if ROLE_ACCOUNTS.contains(&mailbox.as_str()) {
            self.role += 1;
            self.roles.add(&mailbox);
        }
    }
}

/// The state each row's receiver gets from the mapping (spec §3): the
/// fields `registered`, `activated` and `deactivated` as the step maps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consent {
    /// A `deactivated` time: unsubscribed.
    pub deactivated: u64,
    /// An `activated` time and no `deactivated`: subscribed.
    pub active: u64,
    /// Only a `registered` time: awaiting activation.
    pub registered: u64,
    /// None of the three: a new receiver is created registered (awaiting
    /// activation, never active on a guess); an existing one keeps its state.
    pub no_state: u64,
}

impl Consent {
    /// One row, from its three cells (empty or `0` is "no time").
    pub fn add(
        &mut self,
        registered: Option<&str>,
        activated: Option<&str>,
        deactivated: Option<&str>,
    ) {
        let set = |v: Option<&str>| v.is_some_and(|v| !v.is_empty() && v != "0");
        if set(deactivated) {
            self.deactivated += 1;
        } else if set(activated) {
            self.active += 1;
        } else if set(registered) {
            self.registered += 1;
        } else {
            self.no_state += 1;
        }
    }
}

/// The tags of the rows to send.
#[derive(Debug, Clone)]
pub struct Tags {
    /// Rows with at least one tag.
    pub rows: u64,
    /// Tags in all (a row's each).
    pub total: u64,
    pub top: TopK,
}

impl Default for Tags {
    fn default() -> Self {
        Tags {
            rows: 0,
            total: 0,
            top: TopK::new(TAGS_KEPT),
        }
    }
}

impl Tags {
    /// A row's tags cell (joined by [`crate::prepare::tags::JOIN`]).
    pub fn add(&mut self, cell: &str, join: char) {
        let mut any = false;
        for tag in cell.split(join).filter(|t| !t.is_empty()) {
            any = true;
            self.total += 1;
            self.top.add(tag);
        }
        self.rows += u64::from(any);
    }
}

/// One currency's order lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CurrencyTotal {
    pub lines: u64,
    /// Price times quantity, summed.
    pub total: f64,
}

/// The orders sent with the rows' receivers.
#[derive(Debug, Clone, Default)]
pub struct Orders {
    /// Receivers with at least one order line.
    pub receivers: u64,
    pub lines: u64,
    /// By currency as sent (`""`: none given; `eur` and `EUR` apart, as the
    /// target gets them).
    pub currencies: BTreeMap<String, CurrencyTotal>,
    /// Lines in currencies past [`MAX_CURRENCIES`].
    pub lines_left_out: u64,
}

impl Orders {
    /// The order lines of the receiver at `email`.
    pub fn add(&mut self, orders: &OrderLines, email: &str) {
        let Some(lines) = orders.of(email) else {
            return;
        };
        self.receivers += 1;
        for o in lines {
            self.lines += 1;
            let currency = o.currency.clone();
            if !self.currencies.contains_key(&currency) && self.currencies.len() >= MAX_CURRENCIES {
                self.lines_left_out += 1;
                continue;
            }
            let entry = self.currencies.entry(currency).or_default();
            entry.lines += 1;
            entry.total += o.price * o.quantity as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_count_roles_international_domains_and_top_domains() {
        let mut a = Addresses::default();
        for e in [
            "ann@gmail.com",
            "Info@Shop.de",
            "noreply+x@shop.de",
            "jörg@example.com",
            "bob@bücher.de",
            "eve@xn--bcher-kva.de",
            "no-at-sign",
        ] {
            a.add(e);
        }
        assert_eq!(a.total, 6);
        assert_eq!((a.role, a.non_ascii, a.international), (2, 1, 2));
        assert_eq!(a.domains.top(1)[0], ("shop.de", 2, true));
        assert_eq!(a.roles.top(2).len(), 2);
    }

    #[test]
    fn a_row_without_a_state_is_counted_apart_and_deactivated_wins() {
        let mut c = Consent::default();
        c.add(None, Some("2024-01-01"), None);
        c.add(Some("2024-01-01"), Some("2024-01-02"), Some("2024-02-01"));
        c.add(Some("2024-01-01"), Some("0"), None);
        c.add(None, Some(""), Some("0"));
        assert_eq!(
            c,
            Consent {
                deactivated: 1,
                active: 1,
                registered: 1,
                no_state: 1
            }
        );
    }

    #[test]
    fn tags_count_rows_and_each_tag() {
        let mut t = Tags::default();
        t.add("vip\u{1f}news", '\u{1f}');
        t.add("news", '\u{1f}');
        t.add("", '\u{1f}');
        assert_eq!((t.rows, t.total), (2, 3));
        assert_eq!(t.top.top(1)[0], ("news", 2, true));
    }
}

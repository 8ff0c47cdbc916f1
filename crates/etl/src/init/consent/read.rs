//! Which columns may record consent, and how each is read: the header's words (what the
//! column is about: email, another channel, a plan, an account) and its values
//! (subscription words, yes or no, a record's state), against the tables of
//! `rules/consent.rs`.

use super::super::columns::Role;
use super::super::rules::{self, consent as table};
use super::super::sample::Sample;
use super::{Reading, counts, is_in};

/// Whether a header is a permission or state of something other than email.
fn not_consent(header: &str) -> bool {
    rules::header_contains(header, table::NOT_CONSENT_PARTS)
        || rules::words(header)
            .iter()
            .any(|w| table::NOT_CONSENT_WORDS.contains(&w.as_str()))
}

/// Whether a header names email or newsletter consent by itself.
fn names_email_consent(header: &str) -> bool {
    rules::header_contains(header, table::NEWSLETTER_PARTS)
        || (rules::header_contains(header, &["email"])
            && (rules::header_contains(header, table::CONSENT_PARTS)
                || rules::header_contains(header, table::EMAIL_CONSENT_PARTS)))
}

/// Whether a header names a status or the newsletter's subscriber: its values may be a
/// subscription's state.
fn names_status(header: &str) -> bool {
    rules::header_is(header, table::CONSENT_STATUS_NAMES)
        || rules::header_contains(header, &["status", "subscriber"])
}

/// The values of a yes/no column split into yes and no; `None` when some value is neither.
/// A column of marks (`x`, or one spelling only beside empty cells) is yes where marked.
fn yes_no(values: &[(String, usize)]) -> Option<(Vec<String>, Vec<String>)> {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for (v, _) in values {
        if is_in(v, table::YES_VALUES) || matches!(v.as_str(), "✓" | "✔") {
            yes.push(v.clone());
        } else if is_in(v, table::NO_VALUES) {
            no.push(v.clone());
        } else {
            return None;
        }
    }
    Some((yes, no))
}

/// The status words of a column split into subscribed and withdrawn, and whether any is a
/// word only a subscription uses; `None` when some value is no status word.
fn status_words(values: &[(String, usize)]) -> Option<(Vec<String>, Vec<String>, bool)> {
    let (mut grant, mut withdraw, mut strong) = (Vec::new(), Vec::new(), false);
    for (v, _) in values {
        if is_in(v, table::SUBSCRIBED_VALUES) {
            // `confirmed` alone is as often an order's or a booking's state.
            strong |= !is_in(v, &["confirmed"]);
            grant.push(v.clone());
        } else if is_in(v, table::WITHDRAWN_VALUES) {
            strong = true;
            withdraw.push(v.clone());
        } else if is_in(v, table::ACTIVE_VALUES) {
            grant.push(v.clone());
        } else if is_in(v, table::INACTIVE_VALUES) {
            if !is_in(v, &["registered"]) {
                withdraw.push(v.clone());
            }
        } else if !is_in(v, table::NEUTRAL_VALUES) {
            return None;
        }
    }
    Some((grant, withdraw, strong))
}

/// The consent role of every column that has one: a reading of consent, or an opt-out
/// flag. `None` for the others (and for empty columns).
pub(crate) fn read(sample: &Sample) -> Vec<Option<Role>> {
    let n = sample.columns.len();
    let header = |i: usize| sample.columns[i].as_str();
    // A file that records unsubscribes is about email subscriptions: an `active` status
    // there is the subscription's.
    let unsubscribes = (0..n).find(|&i| {
        !not_consent(header(i))
            && (rules::header_is(header(i), table::WITHDRAWAL_TIME_NAMES)
                || rules::header_contains(header(i), table::WITHDRAWAL_FLAG_PARTS))
    });
    let mut out: Vec<Option<Role>> = vec![None; n];
    let mut generic: Vec<usize> = Vec::new();
    let mut specific: Option<usize> = None;
    for (i, slot) in out.iter_mut().enumerate() {
        let elsewhere = unsubscribes.filter(|&u| u != i).map(header);
        let Some((role, weight)) = read_column(header(i), &counts(sample, i), elsewhere) else {
            continue;
        };
        match weight {
            Weight::Specific => specific = specific.or(Some(i)),
            Weight::Generic => generic.push(i),
            Weight::Other => {}
        }
        *slot = Some(role);
    }
    // `Opt-in` beside `Newsletter` (PrestaShop: partner offers): the column that names
    // email consent is the file's.
    if let Some(s) = specific {
        for i in generic {
            out[i] = Some(Role::Consent(Reading::Superseded {
                by: header(s).to_string(),
            }));
        }
    }
    out
}

/// How much a consent column says about the file's email consent.
enum Weight {
    /// It names email or newsletter consent, or its values are subscription words.
    Specific,
    /// It names consent without naming email (`Consent`, `Opt-in`).
    Generic,
    Other,
}

/// The consent role of one column with these values; `unsubscribes` names another column
/// of the file that records unsubscribes, if one does.
fn read_column(
    h: &str,
    values: &[(String, usize)],
    unsubscribes: Option<&str>,
) -> Option<(Role, Weight)> {
    if values.is_empty() || not_consent(h) {
        return None;
    }
    if rules::header_contains(h, table::DISABLED_FLAG_PARTS)
        && let Some((yes, no)) = yes_no(values)
    {
        let reading = Reading::Known {
            how: "whether email is disabled (\"no\": the person receives it)".into(),
            grant: no,
            withdraw: yes,
        };
        return Some((Role::Consent(reading), Weight::Specific));
    }
    if rules::header_contains(h, table::WITHDRAWAL_FLAG_PARTS) {
        return Some((Role::WithdrawalFlag, Weight::Other));
    }
    if let Some((grant, withdraw, strong)) = status_words(values)
        && (strong || names_status(h) || names_email_consent(h))
        && (!grant.is_empty() || !withdraw.is_empty())
    {
        let about_email = strong || names_email_consent(h);
        let reading = match (about_email, unsubscribes) {
            (true, _) => Reading::Known {
                how: "a subscription status".into(),
                grant,
                withdraw,
            },
            (false, Some(u)) => Reading::Known {
                how: format!("a subscription status, as the file records unsubscribes in \"{u}\""),
                grant,
                withdraw,
            },
            (false, None) => Reading::State { grant, withdraw },
        };
        let weight = if about_email {
            Weight::Specific
        } else {
            Weight::Other
        };
        return Some((Role::Consent(reading), weight));
    }
    let consent_name = names_email_consent(h) || rules::header_contains(h, table::CONSENT_PARTS);
    if consent_name && let Some((yes, no)) = yes_no(values) {
        let grant = if yes.is_empty() {
            no.iter()
                .filter_map(|v| table::YES_OF_NO.iter().find(|(n, _)| n == v))
                .map(|(_, y)| y.to_string())
                .collect()
        } else {
            yes
        };
        let reading = Reading::Known {
            how: "email consent (yes or no)".into(),
            grant,
            withdraw: Vec::new(),
        };
        let weight = if names_email_consent(h) {
            Weight::Specific
        } else {
            Weight::Generic
        };
        return Some((Role::Consent(reading), weight));
    }
    (consent_name || rules::header_is(h, table::CONSENT_STATUS_NAMES))
        .then_some((Role::Consent(Reading::Unknown), Weight::Other))
}

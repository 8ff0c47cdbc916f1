//! What each column of the sample is for, decided from its header (the tables in `rules`)
//! and its values: the address, a secret to leave out, a date and its format, a name, a
//! gender, tags, an order field, a consent flag, or an attribute with its type. One
//! function per question, each tested on its own.

use super::dates::{self, DateFormat};
use super::rules::{self, AttrType, Target};
use super::sample::Sample;
use crate::prepare::value::GENDERS;
use listpipe_api::email::{self, Rules};
use std::collections::BTreeSet;

/// A column's role in the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Role {
    /// An address column; `primary` is the receiver's `email`.
    Email { primary: bool },
    /// Left out, and why.
    Secret(&'static str),
    /// No value in the sample.
    Empty,
    /// Describes the export, not the person.
    Noise,
    /// In a file of order lines: describes the order, not the person.
    OrderDetail,
    /// A receiver field or named global attribute.
    Named {
        target: Target,
        date: Option<DateFormat>,
        gender_map: Vec<(String, String)>,
    },
    /// When the person signed up.
    Registered(DateFormat),
    /// When the person confirmed (consent on record).
    ConsentTime(DateFormat),
    /// When the person withdrew: a non-empty cell is an opt-out.
    WithdrawalTime(Option<DateFormat>),
    /// A column that may record consent, and how it is read (`consent`).
    Consent(super::consent::Reading),
    /// A flag whose yes-values mean withdrawn or blocked.
    WithdrawalFlag,
    /// Tags, with the separator found.
    Tags(&'static str),
    /// An order field on the rows.
    Order {
        field: &'static str,
        date: Option<DateFormat>,
        decimal_comma: bool,
    },
    /// Any other useful column.
    Attribute {
        kind: AttrType,
        date: Option<DateFormat>,
        decimal_comma: bool,
        gender_map: Vec<(String, String)>,
    },
}

/// Whether a value is an address listpipe accepts.
pub(super) fn is_address(v: &str) -> bool {
    email::parse(v, Rules::STRICT).is_ok()
}

/// The share of `values` that are addresses (0 without values).
pub(super) fn address_share<'a>(values: impl Iterator<Item = &'a str>) -> f64 {
    let (mut all, mut ok) = (0usize, 0usize);
    for v in values {
        all += 1;
        ok += usize::from(is_address(v));
    }
    if all == 0 {
        0.0
    } else {
        ok as f64 / all as f64
    }
}

/// The secret a column holds, by name or by its values (password hashes).
pub(super) fn secret(header: &str, values: &[&str]) -> Option<&'static str> {
    if let Some(s) = rules::SECRETS
        .iter()
        .find(|s| rules::header_contains(header, s.parts))
    {
        return Some(s.why);
    }
    let hash_like = |v: &&str| {
        v.starts_with("$2y$")
            || v.starts_with("$2a$")
            || v.starts_with("$argon2")
            || (v.len() >= 32 && v.chars().all(|c| c.is_ascii_hexdigit()))
    };
    (!values.is_empty() && values.iter().all(hash_like)).then_some(rules::SECRETS[0].why)
}

/// The separator a tags column uses: the first of [`rules::TAG_SEPARATORS`] seen in a value.
pub(super) fn tag_separator(values: &[&str]) -> &'static str {
    rules::TAG_SEPARATORS
        .iter()
        .copied()
        .find(|sep| values.iter().any(|v| v.contains(sep)))
        .unwrap_or(",")
}

/// Whether every value is a number, and whether it uses a decimal comma. Values with a
/// leading zero, or long digit runs (phone numbers, ids), stay text: their digits matter.
pub(super) fn number(values: &[&str]) -> Option<bool> {
    if values.is_empty() {
        return None;
    }
    let comma = values.iter().any(|v| v.contains(','));
    let read = |v: &&str| {
        let digits = v.trim_start_matches('-');
        if digits.len() > 1
            && digits.starts_with('0')
            && !digits.starts_with("0.")
            && !digits.starts_with("0,")
        {
            return false;
        }
        if digits.chars().filter(char::is_ascii_digit).count() > 12 {
            return false;
        }
        let n = if comma {
            v.replace('.', "").replace(',', ".")
        } else {
            v.to_string()
        };
        n.parse::<f64>().is_ok_and(f64::is_finite)
    };
    values.iter().all(read).then_some(comma)
}

/// A gender column's values mapped onto the spellings the API takes: known ones need no
/// entry; unknown ones (`Dr.`, `Firma`) map to empty. `None` when most values are not
/// genders at all.
pub(super) fn gender_map(values: &[&str]) -> Option<Vec<(String, String)>> {
    let distinct: BTreeSet<&str> = values.iter().copied().collect();
    if distinct.is_empty() {
        return None;
    }
    let known = |v: &str| GENDERS.iter().any(|g| g.eq_ignore_ascii_case(v));
    let known_count = values.iter().filter(|v| known(v)).count();
    if known_count * 10 < values.len() * 9 {
        return None;
    }
    Some(
        distinct
            .into_iter()
            .filter(|v| !known(v))
            .map(|v| (v.to_string(), String::new()))
            .collect(),
    )
}

/// Whether values look like genders by content alone: nine in ten known, two spellings at
/// least, and words rather than single letters (a column of `x` marks is not a gender).
fn genders_by_content(values: &[&str]) -> bool {
    let known: BTreeSet<String> = values
        .iter()
        .filter(|v| GENDERS.iter().any(|g| g.eq_ignore_ascii_case(v)))
        .map(|v| v.to_lowercase())
        .collect();
    gender_map(values).is_some() && known.len() >= 2 && known.iter().any(|v| v.len() > 1)
}

/// The order field a header names.
pub(super) fn order_field(header: &str) -> Option<&'static str> {
    rules::ORDER_FIELDS
        .iter()
        .find(|(_, names)| rules::header_is(header, names))
        .map(|(field, _)| *field)
}

/// The role of every column of the sample.
pub(super) fn roles(sample: &Sample) -> Vec<Role> {
    let n = sample.columns.len();
    let values: Vec<Vec<&str>> = (0..n).map(|i| sample.values(i).collect()).collect();
    let mut roles: Vec<Option<Role>> = vec![None; n];

    // The address: by content, the name breaking ties; else by name alone.
    let shares: Vec<f64> = values
        .iter()
        .map(|v| address_share(v.iter().copied()))
        .collect();
    let by_name = |i: usize| rules::header_is(&sample.columns[i], rules::EMAIL_NAMES);
    let candidates: Vec<usize> = (0..n)
        .filter(|&i| shares[i] >= rules::EMAIL_CONTENT_SHARE)
        .collect();
    let primary = candidates
        .iter()
        .copied()
        .max_by_key(|&i| (by_name(i), values[i].len(), std::cmp::Reverse(i)))
        .or_else(|| (0..n).find(|&i| by_name(i)));
    for &i in &candidates {
        roles[i] = Some(Role::Email {
            primary: Some(i) == primary,
        });
    }
    if let Some(p) = primary {
        roles[p] = Some(Role::Email { primary: true });
    }

    let has_orders = (0..n).any(|i| order_field(&sample.columns[i]) == Some("order_id"))
        && (0..n)
            .filter_map(|i| order_field(&sample.columns[i]))
            .filter(|f| *f != "order_id")
            .count()
            >= 1;

    let mut consent = super::consent::read(sample);
    let registered = registered_column(sample, &values, has_orders);
    let mut used_targets: Vec<Target> = Vec::new();
    let mut used_orders: Vec<&'static str> = Vec::new();
    for i in 0..n {
        if roles[i].is_some() {
            continue;
        }
        let header = sample.columns[i].as_str();
        let vals = &values[i];
        let column = Column {
            header,
            vals,
            consent: consent[i].take(),
            registered: registered == Some(i),
        };
        roles[i] = Some(role_of(
            column,
            has_orders,
            &mut used_targets,
            &mut used_orders,
        ));
    }
    roles
        .into_iter()
        .map(|r| r.unwrap_or(Role::Empty))
        .collect()
}

/// The column the receiver's `registered` comes from: a date column whose header names the
/// sign-up or the record's creation, an exact name first.
fn registered_column(sample: &Sample, values: &[Vec<&str>], has_orders: bool) -> Option<usize> {
    let dated = |i: &usize| {
        let header = &sample.columns[*i];
        let order_date = has_orders && order_field(header).is_some();
        !values[*i].is_empty()
            && dates::detect(&values[*i]).is_some()
            && !rules::header_is(header, rules::CONSENT_TIME_NAMES)
            && !order_date
    };
    let n = sample.columns.len();
    (0..n)
        .filter(dated)
        .find(|&i| rules::header_is(&sample.columns[i], rules::REGISTERED_NAMES))
        .or_else(|| {
            (0..n).filter(dated).find(|&i| {
                let h = &sample.columns[i];
                rules::header_contains(h, rules::REGISTERED_PARTS)
                    && !rules::header_contains(h, rules::NOT_REGISTERED_PARTS)
            })
        })
}

/// What `role_of` is told of one column.
struct Column<'a> {
    header: &'a str,
    vals: &'a [&'a str],
    /// Its consent role, if `consent::read` gave it one.
    consent: Option<Role>,
    /// It is the receiver's `registered`.
    registered: bool,
}

fn role_of(
    column: Column<'_>,
    has_orders: bool,
    used_targets: &mut Vec<Target>,
    used_orders: &mut Vec<&'static str>,
) -> Role {
    let Column {
        header,
        vals,
        consent,
        registered,
    } = column;
    if let Some(why) = secret(header, vals) {
        return Role::Secret(why);
    }
    let date = dates::detect(vals);
    if rules::header_is(header, rules::WITHDRAWAL_TIME_NAMES) && (vals.is_empty() || date.is_some())
    {
        return Role::WithdrawalTime(date);
    }
    if vals.is_empty() {
        return Role::Empty;
    }
    match (consent, &date) {
        (Some(Role::WithdrawalFlag), Some(d)) => return Role::WithdrawalTime(Some(d.clone())),
        // Dates under a header that names consent (`Double Opt-In`, `Email Marketing
        // Consent Timestamp`): when the person opted in.
        (Some(Role::Consent(super::consent::Reading::Unknown)), Some(d)) if !has_orders => {
            return Role::ConsentTime(d.clone());
        }
        (Some(role), None) => return role,
        _ => {}
    }
    if rules::header_is(header, rules::TAG_NAMES) {
        return Role::Tags(tag_separator(vals));
    }
    if has_orders
        && let Some(field) = order_field(header)
        && !used_orders.contains(&field)
    {
        used_orders.push(field);
        let decimal_comma = field == "price" && number(vals) == Some(true);
        return Role::Order {
            field,
            date: if field == "stamp" { date } else { None },
            decimal_comma,
        };
    }
    if let Some(d) = &date {
        if rules::header_is(header, rules::CONSENT_TIME_NAMES) && !has_orders {
            return Role::ConsentTime(d.clone());
        }
        if registered {
            return Role::Registered(d.clone());
        }
    }
    if let Some(named) = rules::NAMED_FIELDS
        .iter()
        .find(|f| rules::header_is(header, f.names) && !used_targets.contains(&f.target))
    {
        let fits = match named.target {
            Target::Global(_, AttrType::Date) => date.is_some(),
            Target::Global(_, AttrType::Gender) => gender_map(vals).is_some(),
            Target::Receiver("points") => vals.iter().all(|v| v.parse::<i64>().is_ok()),
            _ => true,
        };
        if fits {
            used_targets.push(named.target);
            return Role::Named {
                target: named.target,
                date,
                gender_map: gender_map(vals).unwrap_or_default(),
            };
        }
    }
    if rules::header_contains(header, rules::NOISE_PARTS) {
        return Role::Noise;
    }
    if has_orders && rules::header_contains(header, rules::ORDER_DETAIL_PARTS) {
        return Role::OrderDetail;
    }
    if genders_by_content(vals) {
        return Role::Attribute {
            kind: AttrType::Gender,
            date: None,
            decimal_comma: false,
            gender_map: gender_map(vals).unwrap_or_default(),
        };
    }
    if let Some(d) = date {
        return Role::Attribute {
            kind: AttrType::Date,
            date: Some(d),
            decimal_comma: false,
            gender_map: Vec::new(),
        };
    }
    let id_like = rules::header_contains(
        header,
        &["id", "number", "nummer", "zip", "plz", "phone", "code"],
    );
    match number(vals) {
        Some(comma) if !id_like => Role::Attribute {
            kind: AttrType::Number,
            date: None,
            decimal_comma: comma,
            gender_map: Vec::new(),
        },
        _ => Role::Attribute {
            kind: AttrType::Text,
            date: None,
            decimal_comma: false,
            gender_map: Vec::new(),
        },
    }
}

pub(super) use crate::pipeline::MAX_NAME;

/// An attribute's name from its column, one the attribute rules always accept: letters
/// transliterated first (`ä` → `ae`, `ß` → `ss`, other scripts through `deunicode`: `名前`
/// → `ming_qian`), then named as `other_columns` names them (lower case, `_` for anything
/// but letters and digits, `c_` before a leading digit, at most [`MAX_NAME`]; `column`
/// when nothing is left).
pub(super) fn attribute_name(column: &str) -> String {
    crate::pipeline::attribute_name(&transliterate(column.trim()))
}

/// `name`, or with `_2`, `_3`... when `taken` holds it, kept within [`MAX_NAME`].
pub(super) fn unique_name(name: String, taken: &[String]) -> String {
    if !taken.contains(&name) {
        return name;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let base = &name[..name.len().min(MAX_NAME - suffix.len())];
            format!("{}{suffix}", base.trim_end_matches('_'))
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or(name)
}

/// A header in ASCII letters: German umlauts and `ß` as Germans spell them without (`ä` →
/// `ae`), every other letter through `deunicode`'s tables.
pub(super) fn transliterate(header: &str) -> String {
    let mut german = String::with_capacity(header.len());
    for c in header.chars() {
        match c {
            'ä' => german.push_str("ae"),
            'ö' => german.push_str("oe"),
            'ü' => german.push_str("ue"),
            'Ä' => german.push_str("Ae"),
            'Ö' => german.push_str("Oe"),
            'Ü' => german.push_str("Ue"),
            'ß' => german.push_str("ss"),
            c => german.push(c),
        }
    }
    deunicode::deunicode(&german)
}

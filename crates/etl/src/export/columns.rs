//! The columns of an export: where each value comes from, its type, and how
//! a receiver (or a blacklist entry, or an order) becomes a row of typed
//! [`Cell`]s. The writers only see names, kinds and cells.

use listpipe_api::{BlacklistEntry, Order, ReceiverRow};
use std::borrow::Cow;

/// A column's type, which the typed formats (Parquet, XLSX, JSON lines) keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Float,
    Bool,
    /// Unix seconds on the wire; written as the step's `timestamps` say.
    Time,
    /// A `date` attribute: its text (`YYYY-MM-DD`) read as a calendar date
    /// by the typed formats, kept as text by CSV.
    Date,
    /// A `number` attribute: its text read as a number by the typed
    /// formats, kept as written by CSV.
    Number,
    /// The receiver's tags: a list in the typed formats, joined by CSV.
    Tags,
}

impl Kind {
    /// The kind of an attribute's column, from its type as the API names it
    /// (`text`, `number`, `gender`, `date`; anything else is text).
    pub fn of_attribute(kind: &str) -> Kind {
        match listpipe_api::AttributeType::parse(kind) {
            Some(listpipe_api::AttributeType::Number) => Kind::Number,
            Some(listpipe_api::AttributeType::Date) => Kind::Date,
            _ => Kind::Text,
        }
    }
}

/// One value. `Time(None)`/`Int(None)` are empty (a timestamp of 0 is "never").
/// Text is borrowed from what it was read from where it can be.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    Text(Cow<'a, str>),
    Int(Option<i64>),
    Float(f64),
    Bool(bool),
    Time(Option<i64>),
    /// A receiver's tags, each as it is.
    Tags(Vec<Cow<'a, str>>),
}

impl Cell<'_> {
    /// The same value, its text copied: one that outlives what it was read from.
    pub fn to_owned_cell(&self) -> Cell<'static> {
        match self {
            Cell::Text(s) => Cell::Text(Cow::Owned(s.to_string())),
            Cell::Int(n) => Cell::Int(*n),
            Cell::Float(f) => Cell::Float(*f),
            Cell::Bool(b) => Cell::Bool(*b),
            Cell::Time(t) => Cell::Time(*t),
            Cell::Tags(tags) => {
                Cell::Tags(tags.iter().map(|t| Cow::Owned(t.to_string())).collect())
            }
        }
    }
}

/// Where a column's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Id,
    Email,
    GroupId,
    Registered,
    Activated,
    Deactivated,
    Imported,
    Bounced,
    Source,
    Points,
    LastIp,
    LastLocation,
    LastClient,
    Active,
    Global(String),
    Group(String),
    Tags,
    /// Blacklist entries only.
    Comment,
    Stamp,
}

/// The receiver fields in their default order.
pub const RECEIVER_FIELDS: &[(&str, Source)] = &[
    ("id", Source::Id),
    ("email", Source::Email),
    ("group_id", Source::GroupId),
    ("registered", Source::Registered),
    ("activated", Source::Activated),
    ("deactivated", Source::Deactivated),
    ("imported", Source::Imported),
    ("bounced", Source::Bounced),
    ("source", Source::Source),
    ("points", Source::Points),
    ("last_ip", Source::LastIp),
    ("last_location", Source::LastLocation),
    ("last_client", Source::LastClient),
    ("active", Source::Active),
];

/// The columns of a blacklist export.
pub const BLACKLIST_FIELDS: &[(&str, Source)] = &[
    ("email", Source::Email),
    ("comment", Source::Comment),
    ("stamp", Source::Stamp),
];

/// The columns of the orders file.
pub const ORDER_COLUMNS: &[(&str, Kind)] = &[
    ("email", Kind::Text),
    ("order_id", Kind::Text),
    ("product_id", Kind::Text),
    ("product", Kind::Text),
    ("price", Kind::Float),
    ("currency", Kind::Text),
    ("quantity", Kind::Int),
    ("mailing_id", Kind::Text),
    ("stamp", Kind::Time),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The header written.
    pub name: String,
    pub source: Source,
    /// Its type: the source's, or for an attribute the attribute's type.
    pub kind: Kind,
}

impl Source {
    pub fn kind(&self) -> Kind {
        match self {
            Source::Registered
            | Source::Activated
            | Source::Deactivated
            | Source::Imported
            | Source::Bounced
            | Source::Stamp => Kind::Time,
            Source::Id | Source::GroupId | Source::Points => Kind::Int,
            Source::Tags => Kind::Tags,
            Source::Active => Kind::Bool,
            _ => Kind::Text,
        }
    }

    fn receiver<'a>(&self, r: &'a ReceiverRow<'_>) -> Cell<'a> {
        let time = |t: i64| Cell::Time((t != 0).then_some(t));
        let text = |s: &'a str| Cell::Text(Cow::Borrowed(s));
        match self {
            Source::Id => Cell::Int(Some(r.id.0)),
            Source::Email => text(&r.email),
            Source::GroupId => Cell::Int(Some(r.group_id.0)),
            Source::Registered => time(r.registered),
            Source::Activated => time(r.activated),
            Source::Deactivated => time(r.deactivated),
            Source::Imported => time(r.imported),
            Source::Bounced => time(r.bounced),
            Source::Source => text(&r.source),
            Source::Points => Cell::Int(Some(r.points)),
            Source::LastIp => text(&r.last_ip),
            Source::LastLocation => text(&r.last_location),
            Source::LastClient => text(&r.last_client),
            Source::Active => Cell::Bool(r.active),
            Source::Global(n) => text(r.global_attributes.get(n.as_str()).map_or("", |v| v)),
            Source::Group(n) => text(r.attributes.get(n.as_str()).map_or("", |v| v)),
            Source::Tags => Cell::Tags(
                r.tags
                    .iter()
                    .flatten()
                    .map(|t| Cow::Borrowed(t.as_ref()))
                    .collect(),
            ),
            Source::Comment => text(""),
            Source::Stamp => Cell::Time(None),
        }
    }

    fn entry<'a>(&self, e: &'a BlacklistEntry) -> Cell<'a> {
        match self {
            Source::Email => Cell::Text(Cow::Borrowed(&e.email)),
            Source::Comment => Cell::Text(Cow::Borrowed(&e.comment)),
            Source::Stamp => Cell::Time((e.stamp != 0).then_some(e.stamp)),
            other => match other.kind() {
                Kind::Time => Cell::Time(None),
                Kind::Int => Cell::Int(None),
                Kind::Bool => Cell::Bool(false),
                Kind::Tags => Cell::Tags(Vec::new()),
                _ => Cell::Text(Cow::Borrowed("")),
            },
        }
    }
}

/// The default receiver columns: fields, then each global attribute, then
/// each group attribute, then tags. No header repeats, and every value has a
/// column: a global attribute named like a receiver field (`points`,
/// `source`) or like `tags` is written `global.NAME`, a group attribute
/// named like either `group.NAME`. A re-import maps those columns back by
/// the same names.
///
/// `kinds` holds each attribute's column kind by `(is_global, name)`
/// ([`Kind::of_attribute`]); one not there is text.
pub fn receiver_columns(
    globals: &[String],
    group: &[String],
    kinds: &std::collections::HashMap<(bool, String), Kind>,
) -> Vec<Column> {
    let mut cols: Vec<Column> = RECEIVER_FIELDS
        .iter()
        .map(|(n, s)| Column {
            name: n.to_string(),
            source: s.clone(),
            kind: s.kind(),
        })
        .collect();
    // A set, not a search of the columns per attribute: an account with
    // thousands of attributes is named in linear time.
    let mut taken: std::collections::HashSet<String> = cols
        .iter()
        .map(|c| c.name.clone())
        .chain([TAGS_COLUMN.to_string()])
        .collect();
    for (names, prefix, source, global) in [
        (
            globals,
            "global",
            Source::Global as fn(String) -> Source,
            true,
        ),
        (group, "group", Source::Group as fn(String) -> Source, false),
    ] {
        for g in names {
            let name = if taken.contains(g) {
                format!("{prefix}.{g}")
            } else {
                g.clone()
            };
            taken.insert(name.clone());
            cols.push(Column {
                name,
                source: source(g.clone()),
                kind: kinds
                    .get(&(global, g.clone()))
                    .copied()
                    .unwrap_or(Kind::Text),
            });
        }
    }
    cols.push(Column {
        name: TAGS_COLUMN.into(),
        source: Source::Tags,
        kind: Kind::Tags,
    });
    cols
}

/// The header of a receiver's tags.
const TAGS_COLUMN: &str = "tags";

/// Whether a global attribute's name is also a receiver field's (or `tags`):
/// a rule on the name tests the field, so nothing can be asked about the
/// attribute by name, and its column is `global.NAME`.
pub fn shadowed_by_a_field(name: &str) -> bool {
    name.eq_ignore_ascii_case(TAGS_COLUMN)
        || RECEIVER_FIELDS
            .iter()
            .any(|(field, _)| field.eq_ignore_ascii_case(name))
}

pub fn blacklist_columns() -> Vec<Column> {
    BLACKLIST_FIELDS
        .iter()
        .map(|(n, s)| Column {
            name: n.to_string(),
            source: s.clone(),
            kind: s.kind(),
        })
        .collect()
}

/// Picks and renames columns from the defaults: `(column, header)` pairs.
/// An unknown name is an error naming the columns there are.
pub fn select(all: &[Column], chosen: &[(String, String)]) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for (from, to) in chosen {
        match all.iter().find(|c| &c.name == from) {
            Some(c) => out.push(Column {
                name: to.clone(),
                source: c.source.clone(),
                kind: c.kind,
            }),
            None => {
                let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "no column \"{from}\" to export; the columns are: {}",
                    names.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

pub fn receiver_row<'a>(cols: &[Column], r: &'a ReceiverRow<'_>) -> Vec<Cell<'a>> {
    cols.iter().map(|c| c.source.receiver(r)).collect()
}

pub fn entry_row<'a>(cols: &[Column], e: &'a BlacklistEntry) -> Vec<Cell<'a>> {
    cols.iter().map(|c| c.source.entry(e)).collect()
}

pub fn order_row<'a>(email: &'a str, o: &'a Order) -> Vec<Cell<'a>> {
    let text = |s: &'a str| Cell::Text(Cow::Borrowed(s));
    vec![
        text(email),
        text(&o.order_id),
        text(&o.product_id),
        text(&o.product),
        Cell::Float(o.price),
        text(&o.currency),
        Cell::Int(Some(o.quantity)),
        text(&o.mailing_id),
        Cell::Time((o.stamp != 0).then_some(o.stamp)),
    ]
}

pub use listpipe_api::time::iso;

#[cfg(test)]
mod tests {
    use super::iso;

    #[test]
    fn an_iso_timestamp_is_what_chronos_pattern_writes() {
        let pattern = |secs: i64| {
            chrono::DateTime::from_timestamp(secs, 0)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_else(|| secs.to_string())
        };
        let year_10000 = 253_402_300_800;
        let mut cases = vec![
            0,
            1,
            -1,
            1_706_795_120,
            951_782_400,     // 2000-02-29
            -62_167_219_200, // 0000-01-01
            -62_167_219_201,
            year_10000 - 1,
            year_10000,
            i64::MAX,
            i64::MIN,
        ];
        cases.extend((0..2_000).map(|i| i * 7_919_993 - 2_000_000_000));
        for secs in cases {
            assert_eq!(iso(secs), pattern(secs), "{secs}");
        }
        assert_eq!(iso(1_706_795_120), "2024-02-01T13:45:20Z");
    }
}

//! The pipeline file as text: TOML in the vocabulary of `pipelines/README.md`, with a
//! comment above every decision saying what it was read from, and `DECIDE:` where the user
//! must choose. Values are quoted through the `toml` crate, so any column name is safe.

use super::columns::Role;
use super::consent::{State, Test, When};
use super::dates::{DateFormat, readings};
use super::rules::AttrType;

/// A TOML string.
pub(super) fn string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A TOML key: bare when it can be, quoted otherwise.
pub(super) fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        string(k)
    }
}

/// A TOML array of strings.
pub(super) fn strings<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| string(s.as_ref())).collect();
    format!("[{}]", inner.join(", "))
}

/// The `format` (and `ambiguous`) keys of a date column, if it needs any. An undecided
/// column's values read two ways are left out (`ambiguous = "omit"`), not rejected: the
/// unedited pipeline still imports every row.
pub(super) fn format_keys(d: Option<&DateFormat>) -> Vec<String> {
    match d {
        None | Some(DateFormat::Iso) => Vec::new(),
        Some(DateFormat::One(f)) => vec![format!("format = {}", string(f))],
        Some(DateFormat::List(formats)) => vec![format!("format = {}", strings(formats))],
        Some(DateFormat::Ambiguous { formats, .. }) => vec![
            format!("format = {}", strings(formats)),
            "ambiguous = \"omit\"".to_string(),
        ],
    }
}

/// The comment above an ambiguous date column: both readings of a value, and what to do.
pub(super) fn ambiguity_comment(column: &str, d: Option<&DateFormat>) -> Option<String> {
    let Some(DateFormat::Ambiguous { formats, example }) = d else {
        return None;
    };
    let both: Vec<String> = readings(example, formats)
        .iter()
        .map(|(date, f)| format!("{date} with {f}"))
        .collect();
    Some(format!(
        "DECIDE: \"{column}\" reads day first and month first alike: \"{example}\" is {}. Put your export's format first and set ambiguous = \"first\"; until then such values are left out (ambiguous = \"omit\"): the rows are imported without them, and `check` and `run` count them.",
        both.join(", ")
    ))
}

/// An inline mapping table, or the bare column name when nothing else is needed.
pub(super) fn mapping(column: &str, extra: &[String]) -> String {
    if extra.is_empty() {
        string(column)
    } else {
        format!("{{ column = {}, {} }}", string(column), extra.join(", "))
    }
}

/// The keys of an attribute mapping for its role.
pub(super) fn attribute_keys(role: &Role) -> Vec<String> {
    let mut extra = Vec::new();
    let (kind, date, comma, map) = match role {
        Role::Named {
            target: super::rules::Target::Global(_, kind),
            date,
            gender_map,
        } => (*kind, date.as_ref(), false, gender_map.as_slice()),
        Role::Attribute {
            kind,
            date,
            decimal_comma,
            gender_map,
        } => (*kind, date.as_ref(), *decimal_comma, gender_map.as_slice()),
        _ => return extra,
    };
    if kind != AttrType::Text {
        extra.push(format!("type = {}", string(kind.as_str())));
    }
    if kind == AttrType::Date {
        extra.extend(format_keys(date));
    }
    if comma {
        extra.push("decimal = \",\"".into());
    }
    if kind == AttrType::Gender && !map.is_empty() {
        let entries: Vec<String> = map
            .iter()
            .map(|(from, to)| format!("{} = {}", key(from), string(to)))
            .collect();
        extra.push(format!("map = {{ {} }}", entries.join(", ")));
    }
    extra
}

fn test(t: &Test) -> String {
    let values = if t.values.len() == 1 {
        string(&t.values[0])
    } else {
        strings(&t.values)
    };
    format!(
        "{{ column = {}, {} = {} }}",
        string(&t.column),
        if t.equals { "equals" } else { "not_equals" },
        values
    )
}

/// A state mapping (`activated`, `deactivated`) as one inline table.
pub(super) fn state(s: &State) -> String {
    let mut keys: Vec<String> = Vec::new();
    match &s.when {
        When::Columns {
            columns,
            format,
            or_now,
        } => {
            keys.push(if columns.len() == 1 {
                format!("column = {}", string(&columns[0]))
            } else {
                format!("column = {}", strings(columns))
            });
            if *or_now {
                keys.push("default = \"now\"".into());
            }
            keys.extend(format_keys(format.as_ref()));
        }
        When::Now => keys.push("value = \"now\"".into()),
    }
    let mut conditions: Vec<String> = Vec::new();
    match s.any.as_slice() {
        [] => {}
        [one] => conditions.push(test(one)),
        several => conditions.push(format!(
            "{{ any = [{}] }}",
            several.iter().map(test).collect::<Vec<_>>().join(", ")
        )),
    }
    conditions.extend(s.all.iter().map(test));
    match conditions.as_slice() {
        [] => {}
        [one] => keys.push(format!("only_if = {one}")),
        several => keys.push(format!("only_if = [{}]", several.join(", "))),
    }
    format!("{{ {} }}", keys.join(", "))
}

/// A comment of several sentences, wrapped at about 90 columns.
pub(super) fn comment(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > 92 && line.len() > 1 {
            lines.push(std::mem::replace(&mut line, String::from("#")));
        }
        line.push(' ');
        line.push_str(word);
    }
    if line.len() > 1 {
        lines.push(line);
    }
    lines
}

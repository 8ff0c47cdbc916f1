//! A preset's tables made to fit one source: mappings of columns the file lacks are dropped
//! (exports differ by account, language and version), conditions on absent columns are
//! decided (an absent column is empty on every row), and the step's own keys are laid
//! over what is left, key by key.
//!
//! Everything works on TOML values, before the step is parsed, so the merged table goes
//! through the same reader as any other and its errors keep their positions: the step's
//! keys point into the pipeline file, the preset's at its `preset = "…"` key.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

pub(super) type Value = Spanned<DeValue<'static>>;

/// The import sub-tables whose entries are value mappings.
const MAPPING_TABLES: &[&str] = &["receiver", "global_attributes", "attributes"];
/// The import sub-tables a step's keys are merged into one by one, not replaced whole.
const MERGED_TABLES: &[&str] = &[
    "receiver",
    "global_attributes",
    "attributes",
    "tags",
    "orders",
    "fill_down",
];

/// The columns the source has; `None` when it cannot be read (then nothing is dropped and
/// the column check reports the source's problem).
pub(super) struct Header(pub Option<HashSet<String>>);

impl Header {
    fn has(&self, column: &str) -> bool {
        self.0.as_ref().is_none_or(|h| h.contains(column))
    }
}

/// A deep copy of a preset value with every span set to `span` (the `preset` key).
pub(super) fn respan(v: &DeValue<'static>, span: &Range<usize>) -> Value {
    let value = match v {
        DeValue::Table(t) => {
            let mut out = DeTable::new();
            for (k, v) in t.iter() {
                out.insert(
                    Spanned::new(span.clone(), k.get_ref().clone()),
                    respan(v.get_ref(), span),
                );
            }
            DeValue::Table(out)
        }
        DeValue::Array(a) => {
            let mut out = DeArray::new();
            for item in a.iter() {
                out.push(respan(item.get_ref(), span));
            }
            DeValue::Array(out)
        }
        other => other.clone(),
    };
    Spanned::new(span.clone(), value)
}

fn string(s: &str, span: &Range<usize>) -> Value {
    Spanned::new(span.clone(), DeValue::String(Cow::Owned(s.to_string())))
}

fn key(k: &str, span: &Range<usize>) -> Spanned<Cow<'static, str>> {
    Spanned::new(span.clone(), Cow::Owned(k.to_string()))
}

/// The import table of a preset, fitted to the header.
pub(super) fn import_table(t: &DeTable<'static>, header: &Header) -> DeTable<'static> {
    let mut out = DeTable::new();
    for (k, v) in t.iter() {
        let name = k.get_ref().as_ref();
        let kept = match (name, v.get_ref()) {
            (n, DeValue::Table(sub)) if MAPPING_TABLES.contains(&n) => {
                Some(table(v, mappings(sub, header)))
            }
            ("tags", DeValue::Table(sub)) => tags(v, sub, header),
            ("orders", DeValue::Table(sub)) => orders(v, sub, header),
            ("fill_down", DeValue::Table(sub)) => fill_down(v, sub, header),
            _ => Some(v.clone()),
        };
        if let Some(kept) = kept {
            out.insert(k.clone(), kept);
        }
    }
    out
}

fn table(like: &Value, t: DeTable<'static>) -> Value {
    Spanned::new(like.span(), DeValue::Table(t))
}

fn mappings(t: &DeTable<'static>, header: &Header) -> DeTable<'static> {
    let mut out = DeTable::new();
    for (k, v) in t.iter() {
        if let Some(m) = mapping(v, header) {
            out.insert(k.clone(), m);
        }
    }
    out
}

fn tags(v: &Value, t: &DeTable<'static>, header: &Header) -> Option<Value> {
    let mut out = t.clone();
    if let Some(cols) = t.get("columns") {
        let kept = present(cols, header);
        let none_left = kept.is_empty();
        out.insert(key("columns", &cols.span()), array(&kept, &cols.span()));
        if none_left && !t.contains_key("fixed") {
            return None;
        }
    }
    Some(table(v, out))
}

fn orders(v: &Value, t: &DeTable<'static>, header: &Header) -> Option<Value> {
    let mut out = DeTable::new();
    for (k, field) in t.iter() {
        match k.get_ref().as_ref() {
            "rejects" | "source" => {
                out.insert(k.clone(), field.clone());
            }
            _ => {
                if let Some(m) = mapping(field, header) {
                    out.insert(k.clone(), m);
                }
            }
        }
    }
    out.contains_key("order_id").then(|| table(v, out))
}

fn fill_down(v: &Value, t: &DeTable<'static>, header: &Header) -> Option<Value> {
    let within = t.get("within")?.get_ref().as_str()?;
    if !header.has(within) {
        return None;
    }
    let mut out = t.clone();
    if let Some(cols) = t.get("columns") {
        let kept = present(cols, header);
        if kept.is_empty() {
            return None;
        }
        out.insert(key("columns", &cols.span()), array(&kept, &cols.span()));
    }
    Some(table(v, out))
}

/// The column names of a string or list that the header has.
fn present(v: &Value, header: &Header) -> Vec<String> {
    let names: Vec<&str> = match v.get_ref() {
        DeValue::String(s) => vec![s.as_ref()],
        DeValue::Array(items) => items.iter().filter_map(|i| i.get_ref().as_str()).collect(),
        _ => Vec::new(),
    };
    names
        .into_iter()
        .filter(|n| header.has(n))
        .map(str::to_string)
        .collect()
}

fn array(items: &[String], span: &Range<usize>) -> Value {
    let mut out = DeArray::new();
    for i in items {
        out.push(string(i, span));
    }
    Spanned::new(span.clone(), DeValue::Array(out))
}

/// A mapping fitted to the header: `None` when it reads no column the file has, or its
/// condition can never hold there.
pub(super) fn mapping(v: &Value, header: &Header) -> Option<Value> {
    let t = match v.get_ref() {
        DeValue::String(column) => return header.has(column).then(|| v.clone()),
        DeValue::Table(t) => t,
        _ => return Some(v.clone()),
    };
    let mut out = t.clone();
    if let Some(col) = t.get("column") {
        let kept = present(col, header);
        match kept.as_slice() {
            [] => return None,
            [one] => out.insert(key("column", &col.span()), string(one, &col.span())),
            _ => out.insert(key("column", &col.span()), array(&kept, &col.span())),
        };
    }
    if let Some(cond) = t.get("only_if") {
        match condition(cond, header) {
            Decided::Always => {
                out.remove("only_if");
            }
            Decided::Never => return None,
            Decided::Depends(c) => {
                out.insert(key("only_if", &cond.span()), c);
            }
        }
    }
    Some(table(v, out))
}

/// What a condition comes to on a header.
pub(super) enum Decided {
    Always,
    Never,
    /// Holds on some rows: the condition, with its decided parts taken out.
    Depends(Value),
}

/// Decides the parts of a condition that read absent columns: an absent column is empty
/// on every row and in no file.
pub(super) fn condition(v: &Value, header: &Header) -> Decided {
    match v.get_ref() {
        DeValue::Array(items) => {
            let mut rest = DeArray::new();
            for item in items.iter() {
                match condition(item, header) {
                    Decided::Never => return Decided::Never,
                    Decided::Always => {}
                    Decided::Depends(c) => rest.push(c),
                }
            }
            if rest.is_empty() {
                Decided::Always
            } else {
                Decided::Depends(Spanned::new(v.span(), DeValue::Array(rest)))
            }
        }
        DeValue::Table(t) if t.contains_key("any") => {
            let Some(DeValue::Array(items)) = t.get("any").map(Spanned::get_ref) else {
                return Decided::Depends(v.clone());
            };
            let mut rest = DeArray::new();
            for item in items.iter() {
                match condition(item, header) {
                    Decided::Always => return Decided::Always,
                    Decided::Never => {}
                    Decided::Depends(c) => rest.push(c),
                }
            }
            if rest.is_empty() {
                return Decided::Never;
            }
            let mut out = t.clone();
            out.insert(
                key("any", &v.span()),
                Spanned::new(v.span(), DeValue::Array(rest)),
            );
            Decided::Depends(Spanned::new(v.span(), DeValue::Table(out)))
        }
        DeValue::Table(t) => {
            let Some(column) = t.get("column").and_then(|c| c.get_ref().as_str()) else {
                return Decided::Depends(v.clone());
            };
            if header.has(column) {
                return Decided::Depends(v.clone());
            }
            let matches_empty = |test: &str| {
                t.get(test).is_some_and(|values| {
                    present_values(values).iter().any(|s| s.trim().is_empty())
                })
            };
            let holds = if let Some(in_file) = t.get("in_file") {
                in_file.get_ref().as_bool() == Some(false)
            } else if t.contains_key("equals") {
                matches_empty("equals")
            } else {
                !matches_empty("not_equals")
            };
            if holds {
                Decided::Always
            } else {
                Decided::Never
            }
        }
        _ => Decided::Depends(v.clone()),
    }
}

fn present_values(v: &Value) -> Vec<String> {
    match v.get_ref() {
        DeValue::String(s) => vec![s.to_string()],
        DeValue::Array(items) => items
            .iter()
            .filter_map(|i| i.get_ref().as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// The step's own keys laid over the preset's: a key the step sets replaces the preset's,
/// and in the tables of [`MERGED_TABLES`] entry by entry. Keys in `drop` (the preset and
/// its options, already read) are left out.
pub(super) fn merge<'i>(
    preset: DeTable<'static>,
    step: &DeTable<'i>,
    drop: &[&str],
) -> DeTable<'i> {
    let mut out: DeTable<'i> = preset;
    for (k, v) in step.iter() {
        let name = k.get_ref().as_ref();
        if drop.contains(&name) {
            continue;
        }
        let merged = match (out.get(name).map(Spanned::get_ref), v.get_ref()) {
            (Some(DeValue::Table(base)), DeValue::Table(own)) if MERGED_TABLES.contains(&name) => {
                let mut t = base.clone();
                for (ok, ov) in own.iter() {
                    t.insert(ok.clone(), ov.clone());
                }
                Spanned::new(v.span(), DeValue::Table(t))
            }
            _ => v.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(cols: &[&str]) -> Header {
        Header(Some(cols.iter().map(|c| c.to_string()).collect()))
    }

    fn value(text: &'static str) -> Value {
        let doc = DeTable::parse(text).unwrap().into_inner();
        doc.get("v").unwrap().clone()
    }

    fn shown(v: &Option<Value>) -> String {
        match v.as_ref().map(Spanned::get_ref) {
            None => "dropped".into(),
            Some(v) => format!("{v:?}"),
        }
    }

    #[test]
    fn mappings_keep_only_the_columns_the_file_has() {
        let h = header(&["OPTIN_TIME", "EMAIL"]);
        assert_eq!(
            shown(&mapping(&value("v = \"CONFIRM_TIME\""), &h)),
            "dropped"
        );
        let kept = mapping(
            &value("v = { column = [\"CONFIRM_TIME\", \"OPTIN_TIME\"] }"),
            &h,
        );
        assert!(
            shown(&kept).contains("String(\"OPTIN_TIME\")"),
            "{}",
            shown(&kept)
        );
        assert!(!shown(&kept).contains("CONFIRM"), "{}", shown(&kept));
        assert!(shown(&mapping(&value("v = { value = \"x\" }"), &h)).contains("\"x\""));
    }

    #[test]
    fn conditions_on_absent_columns_are_decided() {
        let h = header(&["OPTIN_TIME", "OPT_IN"]);
        let m = |t: &'static str| shown(&mapping(&value(t), &h));
        // A subscribed file alone: rows are in no unsubscribed file.
        assert!(!m("v = { column = \"OPTIN_TIME\", only_if = [{ column = \"UNSUB_TIME\", in_file = false }] }").contains("only_if"));
        assert_eq!(
            m(
                "v = { column = \"OPTIN_TIME\", only_if = { column = \"UNSUB_TIME\", in_file = true } }"
            ),
            "dropped"
        );
        assert_eq!(
            m(
                "v = { column = \"OPTIN_TIME\", only_if = { column = \"DOUBLE_OPT-IN\", equals = \"Yes\" } }"
            ),
            "dropped"
        );
        assert!(!m("v = { column = \"OPTIN_TIME\", only_if = { column = \"EMAIL_BLACKLISTED\", not_equals = \"Yes\" } }").contains("only_if"));
        let any = m(
            "v = { column = \"OPTIN_TIME\", only_if = { any = [{ column = \"DOUBLE_OPT-IN\", equals = \"Yes\" }, { column = \"OPT_IN\", equals = \"Yes\" }] } }",
        );
        assert!(any.contains("OPT_IN") && !any.contains("DOUBLE"), "{any}");
    }

    #[test]
    fn the_steps_keys_replace_the_presets_one_by_one() {
        let preset = DeTable::parse(
            "receiver = { email = \"E\", source = { value = \"p\" } }\ndedupe = \"first\"\n",
        )
        .unwrap()
        .into_inner();
        let step = DeTable::parse(
            "preset = \"x\"\ndedupe = \"last\"\nreceiver = { source = { value = \"own\" } }\n",
        )
        .unwrap()
        .into_inner();
        let merged = merge(preset, &step, &["preset"]);
        assert!(!merged.contains_key("preset"));
        assert_eq!(
            merged.get("dedupe").unwrap().get_ref().as_str(),
            Some("last")
        );
        let receiver = format!("{:?}", merged.get("receiver").unwrap().get_ref());
        assert!(
            receiver.contains("\"E\"") && receiver.contains("own") && !receiver.contains("\"p\""),
            "{receiver}"
        );
    }
}

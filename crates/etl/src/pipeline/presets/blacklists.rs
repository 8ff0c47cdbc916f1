//! A preset's `[[blacklist]]` steps: run before its import when the step's options ask
//! for them (Mailchimp's `unsubscribed = "blacklist"`), over the step's own source.

use super::resolve::{self, Header, respan};
use super::text;
use crate::pipeline::reader::Table;
use std::collections::BTreeMap;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The preset's `[[blacklist]]` tables whose `when` matches the options, fitted to the
/// header and given the step's source and a name; each with the label messages use.
pub(super) fn tables<'i>(
    t: &Table<'_, 'i>,
    doc: &DeTable<'static>,
    chosen: &BTreeMap<String, String>,
    header: &Header,
    span: &std::ops::Range<usize>,
    step_name: &str,
    preset: &str,
) -> Vec<(Spanned<DeValue<'i>>, String)> {
    let Some(DeValue::Array(templates)) = doc.get("blacklist").map(Spanned::get_ref) else {
        return Vec::new();
    };
    let Some(source) = t.get("source") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for template in templates.iter() {
        let DeValue::Table(tpl) = template.get_ref() else {
            continue;
        };
        let applies = match tpl.get("when").map(Spanned::get_ref) {
            Some(DeValue::Table(when)) => when.iter().all(|(k, v)| {
                chosen.get(k.get_ref().as_ref()).map(String::as_str) == v.get_ref().as_str()
            }),
            _ => true,
        };
        if !applies {
            continue;
        }
        let suffix = text(tpl, "suffix").unwrap_or("blacklist");
        let Some(fitted) = fit_blacklist(tpl, header) else {
            continue;
        };
        let DeValue::Table(fitted) = respan(&DeValue::Table(fitted), span).into_inner() else {
            continue;
        };
        let mut table: DeTable<'i> = fitted;
        table.insert(Spanned::new(span.clone(), "source".into()), source.clone());
        table.insert(
            Spanned::new(span.clone(), "name".into()),
            Spanned::new(
                span.clone(),
                DeValue::String(format!("{step_name}-{suffix}").into()),
            ),
        );
        out.push((
            Spanned::new(span.clone(), DeValue::Table(table)),
            format!("the {preset} preset's [[blacklist]] step for {}", t.name),
        ));
    }
    out
}

/// A preset's blacklist table fitted to the header, without its `when` and `suffix`;
/// `None` when no row could qualify (no unsubscribed file given) or the address column is
/// absent.
fn fit_blacklist(tpl: &DeTable<'static>, header: &Header) -> Option<DeTable<'static>> {
    let mut out = DeTable::new();
    for (k, v) in tpl.iter() {
        match k.get_ref().as_ref() {
            "when" | "suffix" => {}
            "email" => {
                out.insert(k.clone(), resolve::mapping(v, header)?);
            }
            "comment" => {
                if let Some(m) = resolve::mapping(v, header) {
                    out.insert(k.clone(), m);
                }
            }
            "only_if" => match resolve::condition(v, header) {
                resolve::Decided::Never => return None,
                resolve::Decided::Always => {}
                resolve::Decided::Depends(c) => {
                    out.insert(k.clone(), c);
                }
            },
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(out)
}

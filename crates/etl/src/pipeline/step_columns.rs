//! Step keys about whole columns rather than one value:
//!
//! - `fill_down`: exports that write an order's fields on its first line only (Shopify)
//!   need them copied to the order's other lines before mapping.
//! - `other_columns` / `ignore_columns`: exports whose custom fields differ per account
//!   (Mailchimp merge fields, HubSpot properties, Brevo attributes) map every column the
//!   step does not name onto an attribute, so nothing is lost without listing it. Resolved
//!   here against the source's header into plain attribute mappings, so later stages see
//!   nothing new.

use super::keys::FILL_DOWN_KEYS;
use super::parse::Parser;
use super::reader::{Table, choices};
use super::*;
use crate::source;
use std::collections::{HashMap, HashSet};
use toml::Spanned;

const OTHER_COLUMNS: &[&str] = &["global_attributes", "attributes"];
/// The longest attribute name the API takes.
pub const MAX_NAME: usize = 64;

/// Where the columns a step does not name go.
#[derive(Clone, Copy, PartialEq)]
enum Others {
    Global,
    Group,
}

impl Parser<'_> {
    pub(super) fn fill_down(&mut self, t: &Table, src: Option<usize>) -> Option<FillDown> {
        let f = t.table(&mut self.ctx, "fill_down")?;
        f.check_keys(&mut self.ctx, FILL_DOWN_KEYS);
        let ctx = &mut self.ctx;
        let within = f.str(ctx, "within");
        let columns = f.strings(ctx, "columns");
        let (Some(within), Some(columns)) = (within, columns) else {
            f.missing(
                &mut self.ctx,
                "within` and `columns",
                ": the column naming the order (or record) and the columns to fill",
            );
            return None;
        };
        self.check_column(src, &within);
        for c in &columns {
            self.check_column(src, c);
        }
        Some(FillDown {
            within: within.into_inner(),
            columns: columns.into_iter().map(Spanned::into_inner).collect(),
        })
    }

    /// `other_columns` and `ignore_columns` of step `t`: every column of its source that
    /// the step does not name becomes a mapping in `global_attributes` or `attributes`.
    pub(super) fn other_columns(
        &mut self,
        t: &Table,
        src: Option<usize>,
        global_attributes: &mut Vec<AttributeMapping>,
        attributes: &mut Vec<AttributeMapping>,
    ) {
        if let (Some((to, ignore)), Some(src)) = (self.others(t), src) {
            let into = match to {
                Others::Global => global_attributes,
                Others::Group => attributes,
            };
            self.map_other_columns(src, &ignore, into);
        }
    }

    /// `other_columns = "global_attributes" | "attributes"` and `ignore_columns`.
    fn others(&mut self, t: &Table) -> Option<(Others, Vec<String>)> {
        let ctx = &mut self.ctx;
        let ignore: Vec<String> = t
            .strings(ctx, "ignore_columns")
            .unwrap_or_default()
            .into_iter()
            .map(Spanned::into_inner)
            .collect();
        let Some(to) = t.str(ctx, "other_columns") else {
            // Without `other_columns` no column is mapped by default: there
            // is nothing for `ignore_columns` to leave out.
            if let Some(v) = t.get("ignore_columns") {
                ctx.error(
                    v.span(),
                    format!(
                        "`ignore_columns` has no effect without `other_columns`: it names columns that `other_columns` should leave out; add other_columns = {} or remove it",
                        choices(OTHER_COLUMNS)
                    ),
                );
            }
            return None;
        };
        match to.get_ref().as_str() {
            "global_attributes" => Some((Others::Global, ignore)),
            "attributes" => Some((Others::Group, ignore)),
            other => {
                ctx.error(
                    to.span(),
                    format!(
                        "unknown other_columns \"{other}\"; valid values: {}",
                        choices(OTHER_COLUMNS)
                    ),
                );
                None
            }
        }
    }

    /// Adds an attribute mapping for every column of the step's source that no mapping,
    /// tag, order field or `fill_down` names and `ignore` does not list.
    fn map_other_columns(
        &mut self,
        src: usize,
        ignore: &[String],
        into: &mut Vec<AttributeMapping>,
    ) {
        let Some((spec, span)) = self.sources.get(src) else {
            return;
        };
        if crate::remote::is_remote(spec) {
            let span = span.clone();
            self.ctx.error(
                span,
                "`other_columns` needs the source's columns when the pipeline is loaded, and a URL source is downloaded only when the step runs; map its columns by name instead",
            );
            return;
        }
        // An unreadable source is reported by the column check; nothing to add then.
        let Ok(header) = source::read_columns(spec, &self.base_dir) else {
            return;
        };
        let named: HashSet<&str> = self
            .columns
            .iter()
            .filter(|c| c.source == src)
            .map(|c| c.column.as_str())
            .chain(ignore.iter().map(String::as_str))
            .collect();
        let mut names = UniqueNames::new(into.iter().map(|a| a.name.clone()));
        for column in header.iter().filter(|c| !named.contains(c.as_str())) {
            if is_unnamed(column) {
                continue;
            }
            let name = names.unique(attribute_name(column));
            into.push(AttributeMapping {
                name,
                kind: listpipe_api::AttributeType::Text,
                mapping: Mapping {
                    from: ValueFrom::Column(column.clone()),
                    trim: true,
                    decimal: '.',
                    ..Default::default()
                },
            });
        }
    }
}

/// Attribute names made unique as they come: a name taken gets `_2`, `_3`... Each name's
/// next number is remembered, so 100,000 columns that read as one attribute name are named
/// in linear time, not by searching from `_2` again for every one.
struct UniqueNames {
    taken: HashSet<String>,
    next: HashMap<String, usize>,
}

impl UniqueNames {
    fn new(taken: impl Iterator<Item = String>) -> Self {
        UniqueNames {
            taken: taken.collect(),
            next: HashMap::new(),
        }
    }

    fn unique(&mut self, base: String) -> String {
        if self.taken.insert(base.clone()) {
            return base;
        }
        let n = self.next.entry(base.clone()).or_insert(2);
        loop {
            let suffix = format!("_{n}");
            *n += 1;
            let name = format!("{}{suffix}", truncate(&base, MAX_NAME - suffix.len()));
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// The source names a column without a header cell `column_N`: nothing to keep.
fn is_unnamed(column: &str) -> bool {
    column
        .strip_prefix("column_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A column name as an attribute name: lower case, runs of anything but letters and
/// digits as one `_`, starting with a letter, at most 64 characters. `ZIP Code` becomes
/// `zip_code`, `State/Region` `state_region`.
pub fn attribute_name(column: &str) -> String {
    let mut out = String::new();
    for c in column.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_');
    let out = if out.is_empty() {
        "column".to_string()
    } else if out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.to_string()
    } else {
        format!("c_{out}")
    };
    truncate(&out, MAX_NAME).trim_end_matches('_').to_string()
}

fn truncate(s: &str, max: usize) -> &str {
    // ASCII only by construction, so any byte index is a boundary.
    &s[..s.len().min(max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_become_attribute_names() {
        assert_eq!(attribute_name("ZIP Code"), "zip_code");
        assert_eq!(attribute_name("State/Region"), "state_region");
        assert_eq!(attribute_name("  Phone Number "), "phone_number");
        assert_eq!(attribute_name("2nd Address"), "c_2nd_address");
        assert_eq!(attribute_name("Größe"), "gr_e");
        assert_eq!(attribute_name("!!!"), "column");
        assert_eq!(attribute_name(&"x".repeat(100)).len(), 64);
        assert!(is_unnamed("column_12") && !is_unnamed("column_") && !is_unnamed("columns"));
    }

    #[test]
    fn a_hundred_thousand_columns_of_one_attribute_name_are_named_in_linear_time() {
        let started = std::time::Instant::now();
        let mut names = UniqueNames::new(std::iter::once("phone".to_string()));
        let given: HashSet<String> = (0..100_000)
            .map(|i| names.unique(attribute_name(&format!("Phone{}", "!".repeat(i % 3)))))
            .collect();
        let took = started.elapsed();
        assert_eq!(given.len(), 100_000);
        assert!(given.contains("phone_2") && given.contains("phone_100001"));
        assert!(given.iter().all(|n| n.len() <= MAX_NAME));
        // Searching from `_2` for every copy took minutes here; numbered in one pass it
        // takes well under a second in a debug build. The bound leaves room
        // for a machine busy with other tests, and none for a quadratic pass.
        assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    }

    #[test]
    fn a_numbered_name_stays_within_the_longest_attribute_name() {
        let mut names = UniqueNames::new(std::iter::empty());
        let long = "x".repeat(MAX_NAME);
        assert_eq!(names.unique(long.clone()), long);
        let second = names.unique(long.clone());
        assert_eq!(second.len(), MAX_NAME);
        assert!(second.ends_with("_2"));
    }
}

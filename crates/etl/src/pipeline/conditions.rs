//! `only_if`: when a mapped value (or a blacklist row) is used. One condition names a
//! column and one test; a list of them must all hold; `{ any = [...] }` needs one.
//!
//! ```toml
//! only_if = { column = "Newsletter", equals = ["1", "ja"] }
//! only_if = [{ column = "UNSUB_TIME", in_file = false }, { column = "EMAIL_BLACKLISTED", not_equals = "Yes" }]
//! only_if = { any = [{ column = "OPT_IN", equals = "Yes" }, { column = "DOUBLE_OPT-IN", equals = "Yes" }] }
//! ```

use super::keys::CONDITION_KEYS;
use super::parse::{ColumnRef, Parser};
use super::reader::{Table, Value, choices, type_name};
use super::*;
use toml::Spanned;
use toml::de::DeValue;

const TESTS: &[&str] = &["equals", "not_equals", "in_file"];

impl Parser<'_> {
    /// A condition, a list of conditions (all must hold) or `{ any = [...] }`.
    pub(super) fn condition(
        &mut self,
        v: &Value,
        parent: &str,
        src: Option<usize>,
    ) -> Option<Condition> {
        match v.get_ref() {
            DeValue::Array(items) => {
                let all: Vec<Condition> = items
                    .iter()
                    .filter_map(|item| self.condition(item, parent, src))
                    .collect();
                (all.len() == items.len()).then_some(Condition::All(all))
            }
            DeValue::Table(_) => {
                let t = Table::new(v, format!("`only_if` of {parent}"))?;
                t.check_keys(&mut self.ctx, CONDITION_KEYS);
                if let Some(any) = t.get("any") {
                    return self.any(&t, any, parent, src);
                }
                self.test(&t, src)
            }
            other => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "`only_if` of {parent} must be a table such as {{ column = \"…\", equals = \"…\" }}, or a list of them, not {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    fn any(
        &mut self,
        t: &Table,
        any: &Value,
        parent: &str,
        src: Option<usize>,
    ) -> Option<Condition> {
        if t.map.len() > 1 {
            self.ctx.error(
                t.span.clone(),
                format!(
                    "{} has `any` beside other keys; put every test inside `any`",
                    t.name
                ),
            );
            return None;
        }
        match any.get_ref() {
            DeValue::Array(items) if !items.is_empty() => {
                let alternatives: Vec<Condition> = items
                    .iter()
                    .filter_map(|item| self.condition(item, parent, src))
                    .collect();
                (alternatives.len() == items.len()).then_some(Condition::Any(alternatives))
            }
            _ => {
                self.ctx.error(
                    any.span(),
                    format!("`any` in {} must be a non-empty list of conditions", t.name),
                );
                None
            }
        }
    }

    /// One test: `column` and exactly one of `equals`, `not_equals`, `in_file`.
    fn test(&mut self, t: &Table, src: Option<usize>) -> Option<Condition> {
        let given: Vec<&str> = TESTS
            .iter()
            .copied()
            .filter(|k| t.get(k).is_some())
            .collect();
        let column = t.str(&mut self.ctx, "column");
        if given.len() != 1 {
            self.ctx.error(
                t.span.clone(),
                format!("{} needs exactly one test: {}", t.name, choices(TESTS)),
            );
        }
        let Some(column) = column else {
            t.missing(&mut self.ctx, "column", ": the column the test reads");
            return None;
        };
        if given.len() != 1 {
            return None;
        }
        let ctx = &mut self.ctx;
        let condition = match given[0] {
            "in_file" => Condition::InFile {
                column: column.get_ref().clone(),
                present: t.bool(ctx, "in_file")?,
            },
            test => {
                let values: Vec<String> = t
                    .strings(ctx, test)?
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect();
                self.check_column(src, &column);
                let column = column.into_inner();
                if test == "equals" {
                    Condition::Equals { column, values }
                } else {
                    Condition::NotEquals { column, values }
                }
            }
        };
        Some(condition)
    }

    /// Remembers a column the file names, to check against its source's header.
    pub(super) fn check_column(&mut self, src: Option<usize>, column: &Spanned<String>) {
        if let Some(s) = src {
            self.columns.push(ColumnRef {
                source: s,
                column: column.get_ref().clone(),
                span: column.span(),
            });
        }
    }
}

impl Condition {
    /// The columns whose cells the condition reads (not those it only looks for in a file).
    pub fn columns(&self) -> Vec<&str> {
        match self {
            Condition::Equals { column, .. } | Condition::NotEquals { column, .. } => {
                vec![column.as_str()]
            }
            Condition::InFile { .. } => Vec::new(),
            Condition::All(cs) | Condition::Any(cs) => {
                cs.iter().flat_map(Condition::columns).collect()
            }
        }
    }
}

//! A reader over TOML's spanned tree that collects every problem instead of
//! stopping at the first, each with its `file:line:col` and the valid
//! choices. serde's `deny_unknown_fields` stops at the first unknown key, and
//! users fixing a pipeline file want the whole list at once.

use std::ops::Range;
use std::path::Path;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

pub type Value<'i> = Spanned<DeValue<'i>>;

/// One problem in a pipeline file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// The collector: the file's text (for line and column) and the problems so far.
pub struct Ctx<'t> {
    text: &'t str,
    pub diags: Vec<Diagnostic>,
}

impl<'t> Ctx<'t> {
    pub fn new(text: &'t str) -> Self {
        Ctx {
            text,
            diags: Vec::new(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..self.text.floor_char_boundary(offset)];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    pub fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        let (line, col) = self.line_col(span.start);
        self.diags.push(Diagnostic {
            line,
            col,
            message: message.into(),
        });
    }

    /// The diagnostics in file order, rendered as `file:line:col: message`.
    pub fn render(&self, file: &Path) -> Vec<String> {
        let mut diags = self.diags.clone();
        diags.sort_by_key(|d| (d.line, d.col));
        diags.dedup();
        diags
            .iter()
            .map(|d| format!("{}:{}:{}: {}", file.display(), d.line, d.col, d.message))
            .collect()
    }
}

/// "a, b or c" for messages.
pub fn choices(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => format!("`{one}`"),
        [init @ .., last] => {
            format!(
                "{} or `{last}`",
                init.iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

pub fn type_name(v: &DeValue) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// A table being read: remembers where it is, for messages and for
/// reporting keys that are missing.
pub struct Table<'a, 'i> {
    pub map: &'a DeTable<'i>,
    pub span: Range<usize>,
    /// How messages name this table, e.g. "[[import]] #2".
    pub name: String,
}

impl<'a, 'i> Table<'a, 'i> {
    pub fn new(value: &'a Value<'i>, name: impl Into<String>) -> Option<Self> {
        match value.get_ref() {
            DeValue::Table(map) => Some(Table {
                map,
                span: value.span(),
                name: name.into(),
            }),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&'a Value<'i>> {
        self.map.get(key)
    }

    /// Reports every key not in `known`, naming the valid ones.
    pub fn check_keys(&self, ctx: &mut Ctx, known: &[&str]) {
        for (key, _) in self.map.iter() {
            if !known.contains(&key.get_ref().as_ref()) {
                ctx.error(
                    key.span(),
                    format!(
                        "unknown key `{}` in {}; valid keys: {}",
                        key.get_ref(),
                        self.name,
                        choices(known)
                    ),
                );
            }
        }
    }

    pub fn missing(&self, ctx: &mut Ctx, key: &str, hint: &str) {
        ctx.error(
            self.span.clone(),
            format!("{} needs `{key}`{hint}", self.name),
        );
    }

    pub fn str(&self, ctx: &mut Ctx, key: &str) -> Option<Spanned<String>> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::String(s) => Some(Spanned::new(v.span(), s.to_string())),
            other => {
                ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be a string, not {}",
                        self.name,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    pub fn bool(&self, ctx: &mut Ctx, key: &str) -> Option<bool> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            other => {
                ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be true or false, not {}",
                        self.name,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// An integer within `range`.
    pub fn int(&self, ctx: &mut Ctx, key: &str, range: Range<i64>) -> Option<i64> {
        let v = self.get(key)?;
        let n = match v.get_ref() {
            DeValue::Integer(i) => {
                i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok()
            }
            _ => None,
        };
        match n {
            Some(n) if range.contains(&n) => Some(n),
            _ => {
                ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be a whole number from {} to {}",
                        self.name,
                        range.start,
                        range.end - 1
                    ),
                );
                None
            }
        }
    }

    /// A string or an array of strings.
    pub fn strings(&self, ctx: &mut Ctx, key: &str) -> Option<Vec<Spanned<String>>> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::String(s) => Some(vec![Spanned::new(v.span(), s.to_string())]),
            DeValue::Array(items) => {
                let mut out = Vec::new();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(s) => out.push(Spanned::new(item.span(), s.to_string())),
                        other => ctx.error(
                            item.span(),
                            format!(
                                "`{key}` in {} must list strings, not {}",
                                self.name,
                                type_name(other)
                            ),
                        ),
                    }
                }
                Some(out)
            }
            other => {
                ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be a string or an array of strings, not {}",
                        self.name,
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// A sub-table (inline or not).
    pub fn table(&self, ctx: &mut Ctx, key: &str) -> Option<Table<'a, 'i>> {
        let v = self.get(key)?;
        let name = if self.span.is_empty() {
            format!("[{key}]")
        } else {
            format!("`{key}` of {}", self.name)
        };
        let t = Table::new(v, name);
        if t.is_none() {
            ctx.error(
                v.span(),
                format!(
                    "`{key}` in {} must be a table, not {}",
                    self.name,
                    type_name(v.get_ref())
                ),
            );
        }
        t
    }
}

//! The parts of a step that map values: receiver fields, attributes, tags
//! and orders, each column name remembered for the header check.

use super::keys::{ATTRIBUTE_KEYS, EMAIL_ALLOW, MAPPING_KEYS, TAGS_KEYS};
use super::parse::{ATTRIBUTE_TYPES, CASES, Parser};
use super::reader::{Table, Value, choices, type_name};
use super::*;
use crate::source;
use listpipe_api::AttributeType;
use toml::Spanned;
use toml::de::DeValue;

impl Parser<'_> {
    pub(super) fn attributes(
        &mut self,
        t: &Table,
        key: &str,
        src: Option<usize>,
    ) -> Vec<AttributeMapping> {
        let Some(attrs) = t.table(&mut self.ctx, key) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, v) in attrs.map.iter() {
            let name_str = name.get_ref().to_string();
            let mut chars = name_str.chars();
            let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
                && name_str.len() <= 64;
            if !valid {
                self.ctx.error(name.span(), format!("attribute name `{name_str}` must start with a letter and hold only letters, digits and _ (at most 64)"));
            }
            let kind = match v.get_ref() {
                DeValue::Table(map) => match map.get("type") {
                    None => AttributeType::Text,
                    Some(tv) => match tv.get_ref().as_str().and_then(AttributeType::parse) {
                        Some(k) => k,
                        None => {
                            let shown = tv.get_ref().as_str().map_or_else(
                                || type_name(tv.get_ref()).to_string(),
                                |s| format!("\"{s}\""),
                            );
                            self.ctx.error(tv.span(), format!("unknown attribute type {shown} for `{name_str}`; valid types: {}", choices(ATTRIBUTE_TYPES)));
                            AttributeType::Text
                        }
                    },
                },
                _ => AttributeType::Text,
            };
            if let Some(mut mapping) = self.mapping(
                v,
                &name_str,
                &attrs.name,
                src,
                ATTRIBUTE_KEYS,
                ValueKind::of_attribute(kind),
            ) {
                self.mapping_policy(v, &name_str, &attrs.name, None, &mut mapping);
                out.push(AttributeMapping {
                    name: name_str,
                    kind,
                    mapping,
                });
            }
        }
        out
    }

    pub(super) fn tags(&mut self, t: &Table, src: Option<usize>) -> Option<TagsSpec> {
        let tags = t.table(&mut self.ctx, "tags")?;
        tags.check_keys(&mut self.ctx, TAGS_KEYS);
        let ctx = &mut self.ctx;
        let columns = tags.strings(ctx, "columns").unwrap_or_default();
        for c in &columns {
            self.check_column(src, c);
        }
        let separators = self.tag_separators(&tags, columns.is_empty());
        let ctx = &mut self.ctx;
        let fixed = tags
            .strings(ctx, "fixed")
            .unwrap_or_default()
            .into_iter()
            .map(Spanned::into_inner)
            .collect();
        let origin = tags.str(ctx, "origin").map(Spanned::into_inner);
        let trim_start = tags.str(ctx, "trim_start");
        if let Some(t) = trim_start.as_ref().filter(|t| t.get_ref().is_empty()) {
            ctx.error(
                t.span(),
                "`trim_start` names the characters taken off the start of each tag, such as \"* \"; it is empty: name them or remove it",
            );
        }
        let trim_start = trim_start
            .map(Spanned::into_inner)
            .filter(|t| !t.is_empty());
        let map = self.tag_map(&tags);
        Some(TagsSpec {
            columns: columns.into_iter().map(Spanned::into_inner).collect(),
            separators,
            fixed,
            origin,
            trim_start,
            map,
        })
    }

    pub(super) fn orders(
        &mut self,
        t: &Table,
        src: Option<usize>,
        pipeline: &str,
        step: &str,
    ) -> Option<OrdersSpec> {
        let o = t.table(&mut self.ctx, "orders")?;
        o.check_keys(&mut self.ctx, super::keys::ORDERS_KEYS);
        let (source, own) = match o.get("source") {
            Some(v) => {
                let s = self.source(&o, "source");
                if s.as_ref()
                    .is_some_and(|(spec, _)| crate::remote::is_remote(spec))
                {
                    self.ctx.error(
                        v.span(),
                        "the `source` of `orders` must be local files; a URL is read as the step's own `source` only",
                    );
                }
                let i = s.as_ref().map(|(_, i)| *i);
                (s.map(|(spec, _)| spec), i)
            }
            None => (None, src),
        };
        let email = match (o.get("email"), o.get("source").is_some()) {
            (Some(v), true) => {
                self.mapping(v, "email", &o.name, own, MAPPING_KEYS, ValueKind::Email)
            }
            (None, true) => {
                o.missing(
                    &mut self.ctx,
                    "email",
                    ": the column of the orders source that holds the receiver's address",
                );
                None
            }
            (Some(v), false) => {
                self.ctx.error(v.span(), "`email` in the orders table is only for a second `source`; orders on the receiver rows use the receiver's email");
                None
            }
            (None, false) => None,
        };
        let mut fields = Vec::new();
        for field in OrderField::ALL {
            if let Some(v) = o.get(field.as_str())
                && let Some(m) =
                    self.mapping(v, field.as_str(), &o.name, own, MAPPING_KEYS, field.kind())
            {
                fields.push((field, m));
            }
        }
        if o.get("order_id").is_none() {
            o.missing(
                &mut self.ctx,
                "order_id",
                ": the column holding the order number",
            );
        }
        if let (Some(v), None) = (o.get("rejects"), o.get("source")) {
            self.ctx.error(v.span(), "`rejects` in the orders table is for orders from a second `source`; a bad order on a receiver row rejects that row, into the step's own rejects file; remove it");
        }
        let rejects = match o.str(&mut self.ctx, "rejects") {
            Some(p) => self.path(p.get_ref()),
            None => self
                .state_dir
                .join("rejects")
                .join(pipeline)
                .join(format!("{step}-orders.rejects.csv")),
        };
        let duplicate_lines = self.duplicate_lines(&o);
        Some(OrdersSpec {
            source,
            email,
            fields,
            rejects,
            duplicate_lines,
        })
    }

    /// A value mapping: `"Column"`, or a table with `column` (a name, or a list of names
    /// of which the first non-empty one is used) or `value`, and the cleaning keys.
    pub(super) fn mapping(
        &mut self,
        v: &Value,
        key: &str,
        parent: &str,
        src: Option<usize>,
        known: &[&str],
        kind: ValueKind,
    ) -> Option<Mapping> {
        let mut m = Mapping {
            trim: true,
            decimal: '.',
            ..Default::default()
        };
        match v.get_ref() {
            DeValue::String(col) => {
                m.from = ValueFrom::Column(col.to_string());
                if kind == ValueKind::Timestamp {
                    m.timezone = self.timezone;
                }
                self.check_column(src, &Spanned::new(v.span(), col.to_string()));
                return Some(m);
            }
            DeValue::Table(_) => {}
            other => {
                self.ctx.error(v.span(), format!("`{key}` in {parent} must be a column name or a table with `column` or `value`, not {}", type_name(other)));
                return None;
            }
        }
        let t = Table::new(v, format!("`{key}` of {parent}"))?;
        t.check_keys(&mut self.ctx, known);
        self.check_applies(v, key, kind);
        let ctx = &mut self.ctx;
        let columns = match t.get("column").map(Spanned::get_ref) {
            Some(DeValue::Array(_)) => t.strings(ctx, "column").filter(|c| !c.is_empty()),
            Some(_) => t.str(ctx, "column").map(|c| vec![c]),
            None => None,
        };
        let value = t.str(ctx, "value");
        match (columns, value) {
            (Some(cols), None) => {
                for c in &cols {
                    self.check_column(src, c);
                }
                let mut names: Vec<String> = cols.into_iter().map(Spanned::into_inner).collect();
                m.from = if names.len() == 1 {
                    ValueFrom::Column(names.remove(0))
                } else {
                    ValueFrom::FirstOf(names)
                };
            }
            (None, Some(value)) => m.from = ValueFrom::Constant(value.into_inner()),
            (Some(_), Some(value)) => ctx.error(
                value.span(),
                format!("{} has both `column` and `value`; give one", t.name),
            ),
            (None, None) => {
                t.missing(
                    ctx,
                    "column",
                    " (the source column, or a list of columns) or `value` (a constant)",
                );
                return None;
            }
        }
        let ctx = &mut self.ctx;
        m.trim = t.bool(ctx, "trim").unwrap_or(true);
        if let Some(c) = t.str(ctx, "case") {
            m.case = match c.get_ref().as_str() {
                "keep" => Case::Keep,
                "lower" => Case::Lower,
                "upper" => Case::Upper,
                "title" => Case::Title,
                other => {
                    ctx.error(
                        c.span(),
                        format!("unknown case \"{other}\"; valid values: {}", choices(CASES)),
                    );
                    Case::Keep
                }
            };
        }
        if let Some(map) = t.table(ctx, "map") {
            for (from, to) in map.map.iter() {
                match to.get_ref().as_str() {
                    Some(to) => m.map.push((from.get_ref().to_string(), to.to_string())),
                    None => ctx.error(
                        to.span(),
                        format!(
                            "values in `map` must be strings (\"{}\" = \"...\")",
                            from.get_ref()
                        ),
                    ),
                }
            }
        }
        m.default = t.str(ctx, "default").map(Spanned::into_inner);
        m.trim_chars = t
            .str(ctx, "trim_chars")
            .map(Spanned::into_inner)
            .filter(|c| !c.is_empty());
        m.missing_reason = t.str(ctx, "missing_reason").map(Spanned::into_inner);
        self.mapping_dates(&t, key, kind, &mut m);
        m.null_values = self.null_values(&t);
        let ctx = &mut self.ctx;
        if known.contains(&"allow") {
            for item in t.strings(ctx, "allow").unwrap_or_default() {
                match item.get_ref().as_str() {
                    "quoted_local" => m.email_rules.quoted_local = true,
                    "ip_literal" => m.email_rules.ip_literal = true,
                    "utf8_local" => m.email_rules.utf8_local = true,
                    other => ctx.error(
                        item.span(),
                        format!(
                            "unknown `allow` \"{other}\"; valid values: {}",
                            choices(EMAIL_ALLOW)
                        ),
                    ),
                }
            }
        }
        if let Some(d) = t.str(ctx, "decimal") {
            match d.get_ref().as_str() {
                "." => m.decimal = '.',
                "," => m.decimal = ',',
                other => ctx.error(
                    d.span(),
                    format!("`decimal` must be \".\" or \",\", not \"{other}\""),
                ),
            }
        }
        if let Some(cond) = t.get("only_if") {
            m.only_if = self.condition(cond, &t.name, src);
        }
        Some(m)
    }

    /// Every named column must exist in its source's header row.
    pub(super) fn check_columns(&mut self) {
        let mut headers: Vec<Option<source::Headers>> = Vec::new();
        for (spec, span) in self.sources.clone() {
            // A URL source is read at run time only: loading stays offline.
            if crate::remote::is_remote(&spec) {
                headers.push(None);
                continue;
            }
            match source::read_headers(&spec, &self.base_dir) {
                Ok(h) => headers.push(Some(h)),
                Err(e) => {
                    self.ctx.error(span, e.to_string());
                    headers.push(None);
                }
            }
        }
        let refs = std::mem::take(&mut self.columns);
        // Sources whose missing columns all sit on a lower row: one error, naming it.
        // A name the header writes more than once is not missing: it is refused below.
        let mut lower = vec![false; headers.len()];
        for (i, (spec, span)) in self.sources.clone().into_iter().enumerate() {
            let Some(Some(h)) = headers.get(i) else {
                continue;
            };
            let mut missing: Vec<&str> = Vec::new();
            for r in refs.iter().filter(|r| r.source == i) {
                let repeated = h.repeated.iter().any(|(_, rep)| rep.name == r.column);
                if !repeated
                    && !h.columns.contains(&r.column)
                    && !missing.contains(&r.column.as_str())
                {
                    missing.push(&r.column);
                }
            }
            if let Some(row) = super::header_row::lower_header(&spec, &self.base_dir, &missing) {
                let why = super::header_row::message(&spec, &missing, row);
                self.ctx.error(span, why);
                lower[i] = true;
            }
        }
        for r in refs {
            let Some(Some(source::Headers {
                columns: cols,
                repeated,
            })) = headers.get(r.source)
            else {
                continue;
            };
            if lower.get(r.source) == Some(&true) {
                continue;
            }
            if let Some(reason) = super::repeated_header::refusal(&r.column, cols, repeated) {
                self.ctx.error(r.span, reason);
                continue;
            }
            if !cols.iter().any(|c| c == &r.column) {
                let near = cols
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(&r.column) || c.trim() == r.column.trim());
                let hint = near
                    .map(|c| format!(" (did you mean \"{c}\"?)"))
                    .unwrap_or_default();
                self.ctx.error(
                    r.span,
                    format!(
                        "the source has no column \"{}\"{hint}; its columns: {}",
                        r.column,
                        column_list(cols)
                    ),
                );
            }
        }
    }
}

/// The most column names an error lists, and the longest name it shows in
/// full: a hostile header (10,000 columns, a 1 MB name) must not become a
/// message of megabytes.
const LISTED_COLUMNS: usize = 30;
const SHOWN_NAME_CHARS: usize = 60;

pub(super) fn column_list(cols: &[String]) -> String {
    let shown: Vec<String> = cols
        .iter()
        .take(LISTED_COLUMNS)
        .map(|c| {
            let n = c.chars().count();
            if n > SHOWN_NAME_CHARS {
                let head: String = c.chars().take(SHOWN_NAME_CHARS).collect();
                format!("{head}... ({n} characters)")
            } else {
                c.clone()
            }
        })
        .collect();
    if cols.len() <= LISTED_COLUMNS {
        let list: Vec<&str> = shown.iter().map(String::as_str).collect();
        return choices(&list);
    }
    let list: Vec<String> = shown.iter().map(|c| format!("`{c}`")).collect();
    format!(
        "{} and {} more",
        list.join(", "),
        cols.len() - LISTED_COLUMNS
    )
}

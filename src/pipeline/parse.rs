//! From the TOML text to a [`Pipeline`]: every section read with
//! [`reader`](super::reader), every column name checked against the header
//! of its source, every problem collected.

use super::reader::{Ctx, Table, Value, choices, type_name};
use super::*;
use crate::api::AttributeType;
use crate::source::{self, SheetRef, SourceFormat, TextEncoding};
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

const TOP_KEYS: &[&str] = &["target", "import", "blacklist"];
const TARGET_KEYS: &[&str] = &[
    "url",
    "token_env",
    "credentials",
    "database",
    "concurrency",
    "timeout_secs",
    "retries",
];
const SOURCE_KEYS: &[&str] = &[
    "path",
    "paths",
    "format",
    "delimiter",
    "encoding",
    "header_row",
    "sheet",
];
const IMPORT_KEYS: &[&str] = &[
    "name",
    "source",
    "group",
    "create_group",
    "dedupe",
    "rejects",
    "receiver",
    "global_attributes",
    "attributes",
    "tags",
    "orders",
];
const BLACKLIST_KEYS: &[&str] = &["name", "source", "email", "comment", "group", "rejects"];
const MAPPING_KEYS: &[&str] = &[
    "column", "value", "trim", "case", "map", "default", "format", "decimal", "only_if",
];
const ATTRIBUTE_KEYS: &[&str] = &[
    "column", "value", "type", "trim", "case", "map", "default", "format", "decimal", "only_if",
];
const TAGS_KEYS: &[&str] = &["columns", "separator", "fixed", "origin"];
const CONDITION_KEYS: &[&str] = &["column", "equals"];
const FORMATS: &[&str] = &["csv", "xlsx", "xls", "ods"];
const DEDUPE: &[&str] = &["first", "last", "merge"];
const CASES: &[&str] = &["keep", "lower", "upper", "title"];
const ATTRIBUTE_TYPES: &[&str] = &["text", "number", "gender", "date"];

/// A column named by the file, to check against its source's header.
struct ColumnRef {
    source: usize,
    column: String,
    span: Range<usize>,
}

struct Parser<'t> {
    ctx: Ctx<'t>,
    base_dir: PathBuf,
    /// Every source read so far, with the span to blame if it cannot be opened.
    sources: Vec<(SourceSpec, Range<usize>)>,
    columns: Vec<ColumnRef>,
}

pub fn parse(path: &Path, text: &str) -> Result<Pipeline, PipelineError> {
    let root = DeTable::parse(text).map_err(|e| {
        let mut ctx = Ctx::new(text);
        ctx.error(e.span().unwrap_or(0..0), e.message().trim().to_string());
        PipelineError(ctx.render(path))
    })?;
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "pipeline".into());
    let mut p = Parser {
        ctx: Ctx::new(text),
        base_dir: base_dir.clone(),
        sources: Vec::new(),
        columns: Vec::new(),
    };

    let top = Table {
        map: root.get_ref(),
        span: 0..0,
        name: "the pipeline file".into(),
    };
    top.check_keys(&mut p.ctx, TOP_KEYS);
    let target = p.target(&top);
    let mut steps: Vec<(usize, Step)> = Vec::new();
    for (key, kind) in [("import", "[[import]]"), ("blacklist", "[[blacklist]]")] {
        let Some(v) = top.get(key) else { continue };
        let DeValue::Array(items) = v.get_ref() else {
            p.ctx.error(
                v.span(),
                format!("`{key}` must be written as {kind} tables"),
            );
            continue;
        };
        for item in items.iter() {
            let n = steps.len() + 1;
            let Some(t) = Table::new(item, format!("{kind} step {n}")) else {
                p.ctx
                    .error(item.span(), format!("each {kind} must be a table"));
                continue;
            };
            let step = if key == "import" {
                p.import(&t, &name, n).map(Step::Import)
            } else {
                p.blacklist(&t, &name, n).map(Step::Blacklist)
            };
            if let Some(step) = step {
                steps.push((item.span().start, step));
            }
        }
    }
    if steps.is_empty() && p.ctx.diags.is_empty() {
        p.ctx.error(
            0..0,
            "the pipeline has no steps: add an [[import]] or a [[blacklist]] table",
        );
    }
    p.check_columns();
    if !p.ctx.diags.is_empty() {
        return Err(PipelineError(p.ctx.render(path)));
    }
    steps.sort_by_key(|(at, _)| *at);
    Ok(Pipeline {
        file: path.to_path_buf(),
        base_dir,
        name,
        target,
        steps: steps.into_iter().map(|(_, s)| s).collect(),
    })
}

impl Parser<'_> {
    fn path(&self, p: &str) -> PathBuf {
        self.base_dir.join(p)
    }

    fn target(&mut self, top: &Table) -> Target {
        let mut target = Target {
            url: TargetUrl::Builtin {
                database: PathBuf::from(DEFAULT_BUILTIN_DB),
            },
            token_env: None,
            credentials: None,
            concurrency: DEFAULT_CONCURRENCY,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            retries: DEFAULT_RETRIES,
        };
        let Some(t) = top.table(&mut self.ctx, "target") else {
            return target;
        };
        t.check_keys(&mut self.ctx, TARGET_KEYS);
        let ctx = &mut self.ctx;
        let database = t
            .str(ctx, "database")
            .map(|d| PathBuf::from(d.into_inner()));
        if let Some(url) = t.str(ctx, "url") {
            match url.get_ref().as_str() {
                "builtin" => {}
                u if u.starts_with("http://") || u.starts_with("https://") => {
                    target.url = TargetUrl::Url(u.trim_end_matches('/').to_string())
                }
                other => ctx.error(
                    url.span(),
                    format!("`url` must be \"builtin\" or an http:// or https:// address, not \"{other}\""),
                ),
            }
        }
        if let (TargetUrl::Builtin { database: db }, Some(d)) = (&mut target.url, database) {
            *db = d;
        }
        target.token_env = t.str(ctx, "token_env").map(Spanned::into_inner);
        target.credentials = t
            .str(ctx, "credentials")
            .map(|c| self.base_dir.join(c.into_inner()));
        let ctx = &mut self.ctx;
        target.concurrency = t
            .int(ctx, "concurrency", 1..1025)
            .map_or(DEFAULT_CONCURRENCY, |n| n as usize);
        target.timeout_secs = t
            .int(ctx, "timeout_secs", 1..3601)
            .map_or(DEFAULT_TIMEOUT_SECS, |n| n as u64);
        target.retries = t
            .int(ctx, "retries", 0..101)
            .map_or(DEFAULT_RETRIES, |n| n as u32);
        target
    }

    /// `source = "file.csv"` or `source = { path = ..., ... }`; returns the spec and its index.
    fn source(&mut self, parent: &Table, key: &str) -> Option<(SourceSpec, usize)> {
        let Some(v) = parent.get(key) else {
            parent.missing(&mut self.ctx, key, " (a file path, or a table with `path`)");
            return None;
        };
        let mut spec = SourceSpec {
            header_row: 1,
            ..Default::default()
        };
        match v.get_ref() {
            DeValue::String(s) => spec.paths.push(s.to_string()),
            DeValue::Table(_) => {
                let t = Table::new(v, format!("`{key}` of {}", parent.name))?;
                t.check_keys(&mut self.ctx, SOURCE_KEYS);
                let ctx = &mut self.ctx;
                spec.paths
                    .extend(t.str(ctx, "path").map(Spanned::into_inner));
                spec.paths.extend(
                    t.strings(ctx, "paths")
                        .unwrap_or_default()
                        .into_iter()
                        .map(Spanned::into_inner),
                );
                if spec.paths.is_empty() {
                    t.missing(ctx, "path", " (or `paths`)");
                }
                if let Some(f) = t.str(ctx, "format") {
                    match f.get_ref().to_ascii_lowercase().as_str() {
                        "csv" => spec.format = Some(SourceFormat::Csv),
                        "xlsx" | "xls" | "ods" => spec.format = Some(SourceFormat::Spreadsheet),
                        other => ctx.error(
                            f.span(),
                            format!(
                                "unknown format \"{other}\"; valid formats: {}",
                                choices(FORMATS)
                            ),
                        ),
                    }
                }
                if let Some(d) = t.str(ctx, "delimiter") {
                    match d.get_ref().as_str() {
                        "tab" | "\t" => spec.delimiter = Some(b'\t'),
                        s if s.len() == 1 && s.is_ascii() => spec.delimiter = Some(s.as_bytes()[0]),
                        other => ctx.error(d.span(), format!("`delimiter` must be one character (such as \",\", \";\", \"|\") or \"tab\", not \"{other}\"")),
                    }
                }
                if let Some(e) = t.str(ctx, "encoding") {
                    match TextEncoding::parse(e.get_ref()) {
                        Some(enc) => spec.encoding = Some(enc),
                        None => ctx.error(
                            e.span(),
                            format!(
                                "unknown encoding \"{}\"; valid encodings: {}",
                                e.get_ref(),
                                TextEncoding::CHOICES
                            ),
                        ),
                    }
                }
                spec.header_row = t
                    .int(ctx, "header_row", 1..1_000_001)
                    .map_or(1, |n| n as usize);
                if let Some(s) = t.get("sheet") {
                    match s.get_ref() {
                        DeValue::String(name) => spec.sheet = Some(SheetRef::Name(name.to_string())),
                        DeValue::Integer(_) => {
                            spec.sheet = t.int(ctx, "sheet", 1..10_001).map(|n| SheetRef::Index(n as usize))
                        }
                        other => ctx.error(s.span(), format!("`sheet` must be a sheet name or its number (1 is the first), not {}", type_name(other))),
                    }
                }
            }
            other => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be a file path or a table, not {}",
                        parent.name,
                        type_name(other)
                    ),
                );
                return None;
            }
        }
        self.sources.push((spec.clone(), v.span()));
        Some((spec, self.sources.len() - 1))
    }

    fn group(&mut self, t: &Table, required: bool) -> Option<GroupRef> {
        let Some(v) = t.get("group") else {
            if required {
                t.missing(
                    &mut self.ctx,
                    "group",
                    " (the group's name, or its id as a number)",
                );
            }
            return None;
        };
        match v.get_ref() {
            DeValue::String(s) if !s.trim().is_empty() => {
                Some(GroupRef::Name(s.trim().to_string()))
            }
            DeValue::Integer(_) => t.int(&mut self.ctx, "group", 1..i64::MAX).map(GroupRef::Id),
            other => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "`group` must be the group's name or its id as a number, not {}",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    fn rejects(&mut self, t: &Table, pipeline: &str, step: &str) -> PathBuf {
        match t.str(&mut self.ctx, "rejects") {
            Some(p) => self.path(p.get_ref()),
            None => PathBuf::from(STATE_DIR)
                .join("rejects")
                .join(pipeline)
                .join(format!("{step}.rejects.csv")),
        }
    }

    fn step_name(&mut self, t: &Table, kind: &str, n: usize) -> String {
        t.str(&mut self.ctx, "name")
            .map(Spanned::into_inner)
            .unwrap_or_else(|| format!("{kind}-{n}"))
    }

    fn import(&mut self, t: &Table, pipeline: &str, n: usize) -> Option<ImportStep> {
        t.check_keys(&mut self.ctx, IMPORT_KEYS);
        let name = self.step_name(t, "import", n);
        let source = self.source(t, "source");
        let group = self.group(t, true);
        let create_group = t.bool(&mut self.ctx, "create_group").unwrap_or(false);
        let dedupe = match t.str(&mut self.ctx, "dedupe") {
            None => Dedupe::First,
            Some(d) => match d.get_ref().as_str() {
                "first" => Dedupe::First,
                "last" => Dedupe::Last,
                "merge" => Dedupe::Merge,
                other => {
                    self.ctx.error(
                        d.span(),
                        format!(
                            "unknown dedupe \"{other}\"; valid values: {}",
                            choices(DEDUPE)
                        ),
                    );
                    Dedupe::First
                }
            },
        };
        let rejects = self.rejects(t, pipeline, &name);
        let src = source.as_ref().map(|(_, i)| *i);

        let mut fields = Vec::new();
        match t.table(&mut self.ctx, "receiver") {
            None => t.missing(
                &mut self.ctx,
                "receiver",
                ": a [import.receiver] table with at least `email`",
            ),
            Some(r) => {
                let known: Vec<&str> = ReceiverField::ALL.iter().map(|f| f.as_str()).collect();
                r.check_keys(&mut self.ctx, &known);
                for field in ReceiverField::ALL {
                    if let Some(v) = r.get(field.as_str())
                        && let Some(m) = self.mapping(v, field.as_str(), &r.name, src, MAPPING_KEYS)
                    {
                        fields.push((field, m));
                    }
                }
                if r.get("email").is_none() {
                    r.missing(&mut self.ctx, "email", ": the column holding the address");
                }
            }
        }
        let global_attributes = self.attributes(t, "global_attributes", src);
        let attributes = self.attributes(t, "attributes", src);
        let tags = self.tags(t, src);
        let orders = self.orders(t, src, pipeline, &name);
        Some(ImportStep {
            name,
            source: source?.0,
            group: group?,
            create_group,
            dedupe,
            rejects,
            fields,
            global_attributes,
            attributes,
            tags,
            orders,
        })
    }

    fn blacklist(&mut self, t: &Table, pipeline: &str, n: usize) -> Option<BlacklistStep> {
        t.check_keys(&mut self.ctx, BLACKLIST_KEYS);
        let name = self.step_name(t, "blacklist", n);
        let source = self.source(t, "source");
        let src = source.as_ref().map(|(_, i)| *i);
        let email = match t.get("email") {
            Some(v) => self.mapping(v, "email", &t.name, src, MAPPING_KEYS),
            None => {
                t.missing(&mut self.ctx, "email", ": the column holding the address");
                None
            }
        };
        let comment = t
            .get("comment")
            .and_then(|v| self.mapping(v, "comment", &t.name, src, MAPPING_KEYS));
        let group = self.group(t, false);
        let rejects = self.rejects(t, pipeline, &name);
        Some(BlacklistStep {
            name,
            source: source?.0,
            email: email?,
            comment,
            group,
            rejects,
        })
    }

    fn attributes(&mut self, t: &Table, key: &str, src: Option<usize>) -> Vec<AttributeMapping> {
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
            if let Some(mapping) = self.mapping(v, &name_str, &attrs.name, src, ATTRIBUTE_KEYS) {
                out.push(AttributeMapping {
                    name: name_str,
                    kind,
                    mapping,
                });
            }
        }
        out
    }

    fn tags(&mut self, t: &Table, src: Option<usize>) -> Option<TagsSpec> {
        let tags = t.table(&mut self.ctx, "tags")?;
        tags.check_keys(&mut self.ctx, TAGS_KEYS);
        let ctx = &mut self.ctx;
        let columns = tags.strings(ctx, "columns").unwrap_or_default();
        for c in &columns {
            if let Some(s) = src {
                self.columns.push(ColumnRef {
                    source: s,
                    column: c.get_ref().clone(),
                    span: c.span(),
                });
            }
        }
        let ctx = &mut self.ctx;
        let separator = tags
            .str(ctx, "separator")
            .map_or_else(|| ",".to_string(), Spanned::into_inner);
        if separator.is_empty() {
            ctx.error(
                tags.span.clone(),
                "`separator` in the tags table must not be empty",
            );
        }
        let fixed = tags
            .strings(ctx, "fixed")
            .unwrap_or_default()
            .into_iter()
            .map(Spanned::into_inner)
            .collect();
        let origin = tags.str(ctx, "origin").map(Spanned::into_inner);
        Some(TagsSpec {
            columns: columns.into_iter().map(Spanned::into_inner).collect(),
            separator,
            fixed,
            origin,
        })
    }

    fn orders(
        &mut self,
        t: &Table,
        src: Option<usize>,
        pipeline: &str,
        step: &str,
    ) -> Option<OrdersSpec> {
        let o = t.table(&mut self.ctx, "orders")?;
        let mut known: Vec<&str> = OrderField::ALL.iter().map(|f| f.as_str()).collect();
        known.extend(["source", "email", "rejects"]);
        o.check_keys(&mut self.ctx, &known);
        let (source, own) = match o.get("source") {
            Some(_) => {
                let s = self.source(&o, "source");
                let i = s.as_ref().map(|(_, i)| *i);
                (s.map(|(spec, _)| spec), i)
            }
            None => (None, src),
        };
        let email = match (o.get("email"), o.get("source").is_some()) {
            (Some(v), true) => self.mapping(v, "email", &o.name, own, MAPPING_KEYS),
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
                && let Some(m) = self.mapping(v, field.as_str(), &o.name, own, MAPPING_KEYS)
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
        let rejects = match o.str(&mut self.ctx, "rejects") {
            Some(p) => self.path(p.get_ref()),
            None => PathBuf::from(STATE_DIR)
                .join("rejects")
                .join(pipeline)
                .join(format!("{step}-orders.rejects.csv")),
        };
        Some(OrdersSpec {
            source,
            email,
            fields,
            rejects,
        })
    }

    /// A value mapping: `"Column"`, or a table with `column` or `value` and the cleaning keys.
    fn mapping(
        &mut self,
        v: &Value,
        key: &str,
        parent: &str,
        src: Option<usize>,
        known: &[&str],
    ) -> Option<Mapping> {
        let mut m = Mapping {
            trim: true,
            decimal: '.',
            ..Default::default()
        };
        match v.get_ref() {
            DeValue::String(col) => {
                m.from = ValueFrom::Column(col.to_string());
                if let Some(s) = src {
                    self.columns.push(ColumnRef {
                        source: s,
                        column: col.to_string(),
                        span: v.span(),
                    });
                }
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
        let ctx = &mut self.ctx;
        match (t.str(ctx, "column"), t.str(ctx, "value")) {
            (Some(c), None) => {
                if let Some(s) = src {
                    self.columns.push(ColumnRef {
                        source: s,
                        column: c.get_ref().clone(),
                        span: c.span(),
                    });
                }
                m.from = ValueFrom::Column(c.into_inner());
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
                    " (the source column) or `value` (a constant)",
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
        m.format = t.str(ctx, "format").map(Spanned::into_inner);
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
        if let Some(cond) = t.table(ctx, "only_if") {
            cond.check_keys(ctx, CONDITION_KEYS);
            let column = cond.str(ctx, "column");
            let equals = cond.strings(ctx, "equals");
            match (column, equals) {
                (Some(c), Some(eq)) => {
                    if let Some(s) = src {
                        self.columns.push(ColumnRef {
                            source: s,
                            column: c.get_ref().clone(),
                            span: c.span(),
                        });
                    }
                    m.only_if = Some(Condition {
                        column: c.into_inner(),
                        equals: eq.into_iter().map(Spanned::into_inner).collect(),
                    });
                }
                _ => cond.missing(&mut self.ctx, "column` and `equals", ""),
            }
        }
        Some(m)
    }

    /// Every named column must exist in its source's header row.
    fn check_columns(&mut self) {
        let mut headers: Vec<Option<Vec<String>>> = Vec::new();
        for (spec, span) in self.sources.clone() {
            match source::read_columns(&spec, &self.base_dir) {
                Ok(cols) => headers.push(Some(cols)),
                Err(e) => {
                    self.ctx.error(span, e.to_string());
                    headers.push(None);
                }
            }
        }
        for r in std::mem::take(&mut self.columns) {
            let Some(Some(cols)) = headers.get(r.source) else {
                continue;
            };
            if !cols.iter().any(|c| c == &r.column) {
                let near = cols
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(&r.column) || c.trim() == r.column.trim());
                let hint = near
                    .map(|c| format!(" (did you mean \"{c}\"?)"))
                    .unwrap_or_default();
                let list: Vec<&str> = cols.iter().map(String::as_str).collect();
                self.ctx.error(
                    r.span,
                    format!(
                        "the source has no column \"{}\"{hint}; its columns: {}",
                        r.column,
                        choices(&list)
                    ),
                );
            }
        }
    }
}

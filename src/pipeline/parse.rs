//! From the TOML text to a [`Pipeline`]: the file, its target, sources and
//! steps, read with [`reader`](super::reader) so every problem is collected.
//! The mapped parts of a step are in [`fields`](super::fields).

use super::reader::{Ctx, Table, choices, type_name};
use super::*;
use crate::load::mirror::{MirrorSpec, Removal};
use crate::source::{SheetRef, SourceFormat, TextEncoding};
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

const TOP_KEYS: &[&str] = &["target", "import", "blacklist", "export"];
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
    "mode",
    "removal",
    "max_removal",
];
const BLACKLIST_KEYS: &[&str] = &["name", "source", "email", "comment", "group", "rejects"];
pub(super) const MAPPING_KEYS: &[&str] = &[
    "column", "value", "trim", "case", "map", "default", "format", "decimal", "only_if",
];
pub(super) const ATTRIBUTE_KEYS: &[&str] = &[
    "column", "value", "type", "trim", "case", "map", "default", "format", "decimal", "only_if",
];
pub(super) const TAGS_KEYS: &[&str] = &["columns", "separator", "fixed", "origin"];
pub(super) const CONDITION_KEYS: &[&str] = &["column", "equals"];
const FORMATS: &[&str] = &["csv", "xlsx", "xls", "ods"];
const DEDUPE: &[&str] = &["first", "last", "merge"];
const MODES: &[&str] = &["import", "mirror"];
pub(super) const CASES: &[&str] = &["keep", "lower", "upper", "title"];
pub(super) const ATTRIBUTE_TYPES: &[&str] = &["text", "number", "gender", "date"];

/// A column named by the file, to check against its source's header.
pub(super) struct ColumnRef {
    pub source: usize,
    pub column: String,
    pub span: Range<usize>,
}

pub(super) struct Parser<'t> {
    pub ctx: Ctx<'t>,
    pub base_dir: PathBuf,
    /// Every source read so far, with the span to blame if it cannot be opened.
    pub sources: Vec<(SourceSpec, Range<usize>)>,
    pub columns: Vec<ColumnRef>,
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
    for (key, kind) in [
        ("import", "[[import]]"),
        ("blacklist", "[[blacklist]]"),
        ("export", "[[export]]"),
    ] {
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
            let step = match key {
                "import" => p.import(&t, &name, n).map(Step::Import),
                "blacklist" => p.blacklist(&t, &name, n).map(Step::Blacklist),
                _ => p.export(&t, n).map(Step::Export),
            };
            if let Some(step) = step {
                steps.push((item.span().start, step));
            }
        }
    }
    if steps.is_empty() && p.ctx.diags.is_empty() {
        p.ctx.error(
            0..0,
            "the pipeline has no steps: add an [[import]], a [[blacklist]] or an [[export]] table",
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
    pub(super) fn path(&self, p: &str) -> PathBuf {
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
        if t.get("url").is_none() && target.credentials.is_some() {
            target.url = TargetUrl::FromCredentials;
        }
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
    pub(super) fn source(&mut self, parent: &Table, key: &str) -> Option<(SourceSpec, usize)> {
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
        let mirror = self.mirror(t);
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
            mirror,
        })
    }

    /// `mode`, `removal` and `max_removal` of an import step.
    fn mirror(&mut self, t: &Table) -> Option<MirrorSpec> {
        let mode = t.str(&mut self.ctx, "mode");
        let removal = t.str(&mut self.ctx, "removal");
        let max = t.str(&mut self.ctx, "max_removal");
        let mirror = match &mode {
            None => false,
            Some(m) => match m.get_ref().as_str() {
                "mirror" => true,
                "import" => false,
                other => {
                    let msg = format!("unknown mode \"{other}\"; valid values: {}", choices(MODES));
                    self.ctx.error(m.span(), msg);
                    false
                }
            },
        };
        let mut spec = MirrorSpec::default();
        if let Some(r) = &removal {
            match Removal::parse(r.get_ref()) {
                Some(v) => spec.removal = v,
                None => {
                    let msg = format!(
                        "unknown removal \"{}\"; valid values: {}",
                        r.get_ref(),
                        Removal::CHOICES
                    );
                    self.ctx.error(r.span(), msg);
                }
            }
        }
        if let Some(m) = &max {
            let share = m
                .get_ref()
                .trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<f64>().ok())
                .filter(|p| (0.0..=100.0).contains(p));
            match share {
                Some(p) => spec.max_share = p / 100.0,
                None => {
                    let msg = format!(
                        "max_removal \"{}\" must be a percentage of the group from 0% to 100%, such as \"10%\"",
                        m.get_ref()
                    );
                    self.ctx.error(m.span(), msg);
                }
            }
        }
        if !mirror {
            for (key, given) in [("removal", &removal), ("max_removal", &max)] {
                if let Some(v) = given {
                    self.ctx.error(
                        v.span(),
                        format!("`{key}` applies to mode = \"mirror\" only; add mode = \"mirror\" or remove it"),
                    );
                }
            }
        }
        mirror.then_some(spec)
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
}

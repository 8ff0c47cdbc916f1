//! The `source` key of a step: a path (or glob, or zip, or URL, or object URL), or a table with the reading
//! options. Read here into a [`SourceSpec`]; the column check reads each source's header.

use super::keys::SOURCE_KEYS;
use super::parse::Parser;
use super::reader::{Ctx, Table, choices, type_name};
use super::*;
use crate::remote;
use crate::source::{PgSource, PgUrl, SheetRef, SourceFormat, TextEncoding};
use std::ops::Range;
use toml::Spanned;
use toml::de::DeValue;

const FORMATS: &[&str] = &["csv", "xlsx", "xls", "ods", "parquet", "jsonl"];

impl Parser<'_> {
    /// `source = "file.csv"` or `source = { path = ..., ... }`; returns the spec and its
    /// index, under which the column check reads its header.
    pub(super) fn source(&mut self, parent: &Table, key: &str) -> Option<(SourceSpec, usize)> {
        let spec = self.source_spec(parent, key)?;
        let span = parent.get(key).map_or(0..0, |v| v.span());
        self.sources.push((spec.clone(), span));
        Some((spec, self.sources.len() - 1))
    }

    /// The source a table names, without registering it.
    pub(super) fn source_spec(&mut self, parent: &Table, key: &str) -> Option<SourceSpec> {
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
                source_table(&t, &mut self.ctx, &mut spec, v.span())?;
            }
            other => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "`{key}` in {} must be a file path, a URL or a table, not {}",
                        parent.name,
                        type_name(other)
                    ),
                );
                return None;
            }
        }
        check_urls(&mut self.ctx, &spec, v.span());
        Some(spec)
    }
}

/// The source of `source = { ... }` (the table `t`, at `span`) into `spec`;
/// `None` when it names a database without a query (reported).
fn source_table(t: &Table, ctx: &mut Ctx, spec: &mut SourceSpec, span: Range<usize>) -> Option<()> {
    t.check_keys(ctx, SOURCE_KEYS);
    spec.paths
        .extend(t.str(ctx, "path").map(Spanned::into_inner));
    spec.paths.extend(
        t.strings(ctx, "paths")
            .unwrap_or_default()
            .into_iter()
            .map(Spanned::into_inner),
    );
    spec.postgres = postgres_source(t, ctx);
    if spec.postgres.is_some() && !spec.paths.is_empty() {
        ctx.error(
            span,
            format!("{} has both a query and `path`; give one", t.name),
        );
    }
    // A database named without a query was reported above.
    let names_database = t.get("postgres").is_some() || t.get("postgres_env").is_some();
    if spec.paths.is_empty() && !names_database {
        t.missing(ctx, "path", " (or `paths`, or `postgres` with `query`)");
    }
    text_options(t, ctx, spec);
    spec.header_row = t
        .int(ctx, "header_row", 1..1_000_001)
        .map_or(1, |n| n as usize);
    sheets(t, ctx, spec);
    if names_database && spec.postgres.is_none() {
        // Reported above; nothing to read.
        return None;
    }
    spec.pad_short_rows = t.bool(ctx, "pad_short_rows").unwrap_or(false);
    spec.no_header = !t.bool(ctx, "header").unwrap_or(true);
    if spec.no_header {
        no_header_readable(t, ctx, spec);
    }
    spec.max_quoted_lines = t
        .int(ctx, "max_quoted_lines", 1..100_000_001)
        .map_or(0, |n| n as u64);
    Some(())
}

/// `format`, `delimiter` and `encoding` of a source table.
fn text_options(t: &Table, ctx: &mut Ctx, spec: &mut SourceSpec) {
    if let Some(f) = t.str(ctx, "format") {
        match f.get_ref().to_ascii_lowercase().as_str() {
            "csv" => spec.format = Some(SourceFormat::Csv),
            "xlsx" | "xls" | "ods" => spec.format = Some(SourceFormat::Spreadsheet),
            "parquet" => spec.format = Some(SourceFormat::Parquet),
            "jsonl" | "ndjson" => spec.format = Some(SourceFormat::JsonLines),
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
}

/// `sheet` or `sheets` of a source table.
fn sheets(t: &Table, ctx: &mut Ctx, spec: &mut SourceSpec) {
    if let Some(s) = t.get("sheet") {
        match s.get_ref() {
            DeValue::String(name) if &**name == "*" => spec.sheets = vec![SheetRef::All],
            DeValue::String(name) => spec.sheets = vec![SheetRef::Name(name.to_string())],
            DeValue::Integer(_) => {
                spec.sheets = t.int(ctx, "sheet", 1..10_001).map(|n| SheetRef::Index(n as usize)).into_iter().collect()
            }
            other => ctx.error(s.span(), format!("`sheet` must be a sheet name, its number (1 is the first) or \"*\" (every sheet), not {}", type_name(other))),
        }
    }
    if let Some(s) = t.get("sheets") {
        if t.get("sheet").is_some() {
            ctx.error(
                s.span(),
                format!("{} has both `sheet` and `sheets`; give one", t.name),
            );
        }
        match s.get_ref() {
            DeValue::Array(items) if !items.is_empty() => {
                spec.sheets.clear();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(name) if &**name == "*" => spec.sheets.push(SheetRef::All),
                        DeValue::String(name) => spec.sheets.push(SheetRef::Name(name.to_string())),
                        DeValue::Integer(i) => match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
                            Ok(n) if (1..10_001).contains(&n) => spec.sheets.push(SheetRef::Index(n as usize)),
                            _ => ctx.error(item.span(), "sheet numbers in `sheets` go from 1 (the first sheet) to 10000"),
                        },
                        other => ctx.error(item.span(), format!("`sheets` must list sheet names or numbers (1 is the first), not {}", type_name(other))),
                    }
                }
            }
            other => ctx.error(s.span(), format!("`sheets` must be a non-empty list of sheet names or numbers, such as [\"2024\", \"2025\"], not {}", type_name(other))),
        }
    }
}

/// Each URL and object URL among the source's paths, checked.
fn check_urls(ctx: &mut Ctx, spec: &SourceSpec, span: Range<usize>) {
    for entry in spec.paths.iter().filter(|p| remote::is_url(p)) {
        if let Err(e) = reqwest::Url::parse(entry) {
            ctx.error(
                span.clone(),
                format!(
                    "{} is not a valid URL ({e}); write it as https://host/path/file.csv",
                    remote::url::shown_entry(entry)
                ),
            );
        }
    }
    for entry in spec
        .paths
        .iter()
        .filter(|p| remote::object::is_object_url(p))
    {
        if let Err(message) = remote::object::ObjectUrl::parse(entry) {
            ctx.error(span.clone(), message);
        }
    }
}

/// `header = false` on a source whose columns are named by the source itself (a query,
/// Parquet, JSON lines): refused at the key, as it would change nothing.
fn no_header_readable(t: &Table, ctx: &mut Ctx, spec: &SourceSpec) {
    let named_by_source = |format: Option<SourceFormat>| {
        matches!(
            format,
            Some(SourceFormat::Parquet | SourceFormat::JsonLines)
        )
    };
    let what = if spec.postgres.is_some() {
        "a query's result"
    } else if named_by_source(spec.format)
        || (spec.format.is_none()
            && !spec.paths.is_empty()
            && spec
                .paths
                .iter()
                .all(|p| named_by_source(SourceFormat::from_path(Path::new(p)))))
    {
        "a Parquet or JSON lines file"
    } else {
        return;
    };
    let span = t.get("header").map_or(0..0, |v| v.span());
    ctx.error(
        span,
        format!(
            "`header = false` is for CSV files and spreadsheets without a header row; {what} names its own columns; remove it"
        ),
    );
}

/// `postgres = "URL"` or `postgres_env = "VAR"`, with `query`: a query source, or `None`
/// when the table names none (problems reported).
fn postgres_source(t: &Table, ctx: &mut Ctx) -> Option<PgSource> {
    let given = t.str(ctx, "postgres").map(Spanned::into_inner);
    let env = t.str(ctx, "postgres_env").map(Spanned::into_inner);
    let query = t.str(ctx, "query");
    let url = match (given, env) {
        (Some(_), Some(_)) => {
            let span = t.get("postgres_env").map_or(0..0, |v| v.span());
            ctx.error(
                span,
                format!(
                    "{} has both `postgres` and `postgres_env`; give one",
                    t.name
                ),
            );
            return None;
        }
        (Some(url), None) => PgUrl::Given(url),
        (None, Some(var)) => PgUrl::Env(var),
        (None, None) => {
            if let Some(q) = query {
                ctx.error(
                    q.span(),
                    format!(
                        "{} has a `query` but no database; add postgres = \"postgres://user:password@host:port/database\" or postgres_env = \"VARIABLE\"",
                        t.name
                    ),
                );
            }
            return None;
        }
    };
    let Some(query) = query.filter(|q| !q.get_ref().trim().is_empty()) else {
        t.missing(
            ctx,
            "query",
            " (the SQL whose rows are the source, such as \"select * from subscribers\")",
        );
        return None;
    };
    Some(PgSource {
        url,
        query: query.into_inner(),
    })
}

//! Reading `[[export]]` tables into [`ExportStep`]s, with the same
//! positioned errors as the rest of the pipeline parser.

use super::export::*;
use super::parse::Parser;
use super::reader::{Table, choices, type_name};
use super::*;
use listpipe_api::ReceiverType;
use listpipe_api::filter::Rule;
use toml::Spanned;
use toml::de::DeValue;

impl Parser<'_> {
    pub(super) fn export(&mut self, t: &Table, n: usize) -> Option<ExportStep> {
        t.check_keys(&mut self.ctx, EXPORT_KEYS);
        let name = self.step_name(t, "export", n);
        let groups = self.export_groups(t);
        let what = self.export_what(t, groups)?;

        let ctx = &mut self.ctx;
        let out = match t.str(ctx, "out") {
            // Outputs go where listpipe runs (like `.listpipe/`), not beside
            // the pipeline file: running a shipped example writes nothing into the repository.
            Some(o) => {
                let path = PathBuf::from(o.get_ref());
                if let Err(e) = super::out::check_out(&path) {
                    ctx.error(o.span(), e);
                }
                Some((self.run_path(path), o.span()))
            }
            None => {
                t.missing(
                    ctx,
                    "out",
                    ": the file to write (its extension picks the format)",
                );
                None
            }
        };
        let ctx = &mut self.ctx;
        let format = match t.str(ctx, "format") {
            Some(f) => match ExportFormat::parse(f.get_ref()) {
                Some(f) => Some(f),
                None => {
                    ctx.error(
                        f.span(),
                        format!(
                            "unknown format \"{}\"; valid formats: {}",
                            f.get_ref(),
                            choices(FORMAT_CHOICES)
                        ),
                    );
                    None
                }
            },
            None => match &out {
                // Standard output has no extension: CSV unless `format` says otherwise.
                Some((path, _)) if super::out::is_stdout(path) => Some(ExportFormat::Csv),
                Some((path, span)) => {
                    let f = ExportFormat::from_path(path);
                    if f.is_none() {
                        ctx.error(span.clone(), format!("cannot tell the format of \"{}\" from its extension; set `format` to {}", path.display(), choices(FORMAT_CHOICES)));
                    }
                    f
                }
                None => None,
            },
        };
        if let (Some((path, span)), Some(f @ (ExportFormat::Xlsx | ExportFormat::Parquet))) =
            (&out, format)
            && super::out::is_stdout(path)
        {
            ctx.error(
                span.clone(),
                format!(
                    "`out = \"-\"` writes to standard output, which takes csv or jsonl; {} is not a stream (it needs a file): give `out` a file name",
                    f.extension()
                ),
            );
        }
        let columns = self.export_columns(t);
        let ctx = &mut self.ctx;
        let tags_separator = t
            .str(ctx, "tags_separator")
            .map(Spanned::into_inner)
            .unwrap_or_else(|| DEFAULT_TAGS_SEPARATOR.to_string());
        let timestamps =
            pick(ctx, t, "timestamps", TIMESTAMPS, Timestamps::parse).unwrap_or_default();
        let mut csv = CsvOptions::default();
        if let Some(d) = t.str(ctx, "delimiter") {
            match parse_delimiter(d.get_ref()) {
                Some(b) => csv.delimiter = b,
                None => ctx.error(d.span(), format!("`delimiter` must be one character (such as \",\", \";\", \"|\") or \"tab\", not \"{}\"", d.get_ref())),
            }
        } else if out
            .as_ref()
            .is_some_and(|(p, _)| p.extension().is_some_and(|e| e == "tsv"))
        {
            csv.delimiter = b'\t';
        }
        csv.encoding = pick(ctx, t, "encoding", ENCODINGS, CsvEncoding::parse).unwrap_or_default();
        csv.quoting = pick(ctx, t, "quoting", QUOTINGS, Quoting::parse).unwrap_or_default();
        csv.bom = t.bool(ctx, "bom").unwrap_or(false);
        if csv.bom
            && csv.encoding == CsvEncoding::Windows1252
            && let Some(v) = t.get("bom")
        {
            ctx.error(
                v.span(),
                "`bom` is a UTF-8 byte order mark: it cannot go with `encoding = \"windows-1252\"`",
            );
        }
        // Keys of one file format are refused for the others: accepted, they
        // would do nothing.
        if let Some(f) = format.filter(|f| *f != ExportFormat::Csv) {
            for key in ["delimiter", "encoding", "quoting", "bom"] {
                if let Some(v) = t.get(key) {
                    ctx.error(v.span(), format!("`{key}` shapes CSV files, and this export writes {}; remove it, or write a .csv", f.extension()));
                }
            }
            if let (ExportFormat::Parquet, Some(v)) = (f, t.get("timestamps")) {
                ctx.error(v.span(), "`timestamps` has no effect on Parquet, which always writes a time as a TIMESTAMP column (milliseconds, UTC); remove it");
            }
        }
        let orders_out = t.str(ctx, "orders_out").map(|o| {
            let path = PathBuf::from(o.get_ref());
            if let Err(e) = super::out::check_out(&path) {
                ctx.error(o.span(), e);
            }
            path
        });
        let orders_out = orders_out.map(|p| self.run_path(p));
        if matches!(what, ExportWhat::Blacklist | ExportWhat::Blocklist { .. })
            && let Some(v) = t.get("orders_out")
        {
            self.ctx.error(
                v.span(),
                "`orders_out` needs receivers: a blacklist has no orders",
            );
        }
        let incremental = t.bool(&mut self.ctx, "incremental").unwrap_or(false);
        if incremental
            && matches!(what, ExportWhat::Blacklist | ExportWhat::Blocklist { .. })
            && let Some(v) = t.get("incremental")
        {
            self.ctx.error(
                v.span(),
                "`incremental` needs receivers: a blacklist has no change times to follow",
            );
        }
        Some(ExportStep {
            name,
            what,
            out: out?.0,
            format: format?,
            columns,
            tags_separator,
            timestamps,
            csv,
            orders_out,
            incremental,
        })
    }

    /// `group`: a name, an id, or (runtime filters only) a list of them.
    fn export_groups(&mut self, t: &Table) -> Option<(Vec<GroupRef>, Range)> {
        let v = t.get("group")?;
        let one = |v: &DeValue| match v {
            DeValue::String(s) if !s.trim().is_empty() => {
                Some(GroupRef::Name(s.trim().to_string()))
            }
            DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
                .ok()
                .filter(|n| *n > 0)
                .map(GroupRef::Id),
            _ => None,
        };
        let groups = match v.get_ref() {
            DeValue::Array(items) => items
                .iter()
                .map(|i| one(i.get_ref()))
                .collect::<Option<Vec<_>>>(),
            other => one(other).map(|g| vec![g]),
        };
        match groups {
            Some(g) => Some((g, v.span())),
            None => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "`group` in {} must be a group's name or its id as a positive number (a list of them for a runtime filter), not {}",
                        t.name,
                        type_name(v.get_ref())
                    ),
                );
                None
            }
        }
    }

    fn export_what(
        &mut self,
        t: &Table,
        groups: Option<(Vec<GroupRef>, Range)>,
    ) -> Option<ExportWhat> {
        let ctx = &mut self.ctx;
        let blacklist = t.bool(ctx, "blacklist").unwrap_or(false);
        let filter = t.get("filter").and_then(|v| match v.get_ref() {
            DeValue::String(s) if !s.trim().is_empty() => {
                Some(FilterRef::Name(s.trim().to_string()))
            }
            DeValue::Integer(_) => t.int(ctx, "filter", 1..i64::MAX).map(FilterRef::Id),
            other => {
                ctx.error(
                    v.span(),
                    format!(
                        "`filter` must be a saved filter's name or its id as a number, not {}",
                        type_name(other)
                    ),
                );
                None
            }
        });
        let rules = self.rules(t);
        let ctx = &mut self.ctx;
        let operator = t.str(ctx, "operator").and_then(|o| {
            let up = o.get_ref().trim().to_ascii_uppercase();
            if OPERATORS.contains(&up.as_str()) {
                Some(up)
            } else {
                ctx.error(
                    o.span(),
                    format!(
                        "unknown operator \"{}\"; valid operators: {}",
                        o.get_ref(),
                        choices(OPERATORS)
                    ),
                );
                None
            }
        });
        let activeonly = t.bool(ctx, "activeonly");
        let kind = pick(
            ctx,
            t,
            "type",
            &["all", "active", "inactive", "bounce"],
            ReceiverType::parse,
        );
        // Keys that only make sense for one kind of export are errors elsewhere,
        // so a misplaced key never silently widens what is exported.
        let misplaced = |ctx: &mut super::reader::Ctx, key: &str, why: &str| {
            if let Some(v) = t.get(key) {
                ctx.error(v.span(), format!("`{key}` {why}"));
            }
        };
        let one_group = |ctx: &mut super::reader::Ctx,
                         groups: Option<(Vec<GroupRef>, Range)>,
                         what: &str| match groups {
            Some((mut g, span)) => {
                if g.len() != 1 {
                    ctx.error(span, format!("{what} needs exactly one `group`"));
                    return None;
                }
                g.pop()
            }
            None => {
                t.missing(
                    ctx,
                    "group",
                    &format!(" for {what} (the group's name, or its id as a number)"),
                );
                None
            }
        };
        if blacklist {
            for key in ["filter", "rules", "operator", "activeonly", "type"] {
                misplaced(ctx, key, "cannot go with `blacklist = true`");
            }
            return match groups {
                None => Some(ExportWhat::Blacklist),
                Some(_) => one_group(ctx, groups, "a group blocklist")
                    .map(|group| ExportWhat::Blocklist { group }),
            };
        }
        if let Some(rules) = rules {
            for key in ["filter", "type"] {
                misplaced(
                    ctx,
                    key,
                    "cannot go with `rules` (a runtime filter); use `activeonly = true` for active receivers only",
                );
            }
            return Some(ExportWhat::Runtime {
                groups: groups.map(|(g, _)| g).unwrap_or_default(),
                rules,
                operator: operator.unwrap_or_else(|| "AND".into()),
                activeonly: activeonly.unwrap_or(false),
            });
        }
        for key in ["operator", "activeonly"] {
            misplaced(ctx, key, "belongs to a runtime filter: add `rules`");
        }
        if let Some(v) = t.get("filter") {
            misplaced(
                ctx,
                "type",
                "cannot go with a saved `filter` (its rules decide)",
            );
            let group = one_group(ctx, groups, "a saved filter");
            let _ = v;
            return Some(ExportWhat::Filter {
                group: group?,
                filter: filter?,
            });
        }
        let group = one_group(ctx, groups, "a group export");
        Some(ExportWhat::Group {
            group: group?,
            kind: kind.unwrap_or_default(),
        })
    }

    /// `rules = [{ field, logic, condition }, ...]`.
    fn rules(&mut self, t: &Table) -> Option<Vec<Rule>> {
        let v = t.get("rules")?;
        let DeValue::Array(items) = v.get_ref() else {
            self.ctx.error(
                v.span(),
                format!(
                    "`rules` must be an array of tables {{ field, logic, condition }}, not {}",
                    type_name(v.get_ref())
                ),
            );
            return None;
        };
        let mut rules = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(r) = Table::new(item, format!("rule {} of {}", i + 1, t.name)) else {
                self.ctx.error(
                    item.span(),
                    "each rule must be a table { field, logic, condition }",
                );
                continue;
            };
            r.check_keys(&mut self.ctx, RULE_KEYS);
            let field = r.str(&mut self.ctx, "field");
            let logic = r.str(&mut self.ctx, "logic");
            let condition = r
                .str(&mut self.ctx, "condition")
                .map(Spanned::into_inner)
                .unwrap_or_default();
            if field.is_none() {
                r.missing(
                    &mut self.ctx,
                    "field",
                    ": a receiver field, an attribute or `tags`",
                );
            }
            if logic.is_none() {
                r.missing(&mut self.ctx, "logic", ": eq, neq, sm, bg, isnull, notisnull, contains, begins, ends, ismale or isfemale");
            }
            if let (Some(field), Some(logic)) = (field, logic) {
                rules.push(Rule {
                    field: field.into_inner(),
                    logic: logic.into_inner(),
                    condition,
                });
            }
        }
        if rules.is_empty() && items.is_empty() {
            self.ctx.error(
                v.span(),
                "`rules` is empty: give at least one { field, logic, condition }",
            );
        }
        Some(rules)
    }

    /// `columns = ["email", "firstname"]` or `columns = { email = "E-Mail" }`.
    fn export_columns(&mut self, t: &Table) -> Option<Vec<(String, String)>> {
        let v = t.get("columns")?;
        let mut out = Vec::new();
        match v.get_ref() {
            DeValue::Array(_) => {
                for s in t.strings(&mut self.ctx, "columns").unwrap_or_default() {
                    let s = s.into_inner();
                    out.push((s.clone(), s));
                }
            }
            DeValue::Table(map) => {
                // The map is ordered by key; the file's order is the columns' order.
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by_key(|(k, _)| k.span().start);
                for (k, val) in entries {
                    match val.get_ref() {
                        DeValue::String(s) => out.push((k.get_ref().to_string(), s.to_string())),
                        other => self.ctx.error(
                            val.span(),
                            format!(
                                "`columns.{}` must be the column's new name (a string), not {}",
                                k.get_ref(),
                                type_name(other)
                            ),
                        ),
                    }
                }
            }
            other => {
                self.ctx.error(v.span(), format!("`columns` must be an array of column names, or a table old = \"new name\", not {}", type_name(other)));
                return None;
            }
        }
        if out.is_empty() {
            self.ctx.error(
                v.span(),
                "`columns` is empty: name at least one column, or leave it out for all",
            );
            return None;
        }
        Some(out)
    }
}

type Range = std::ops::Range<usize>;

/// A string key that must be one of `valid`.
fn pick<T>(
    ctx: &mut super::reader::Ctx,
    t: &Table,
    key: &str,
    valid: &[&str],
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let s = t.str(ctx, key)?;
    let parsed = parse(s.get_ref());
    if parsed.is_none() {
        ctx.error(
            s.span(),
            format!(
                "unknown {key} \"{}\"; valid values: {}",
                s.get_ref(),
                choices(valid)
            ),
        );
    }
    parsed
}

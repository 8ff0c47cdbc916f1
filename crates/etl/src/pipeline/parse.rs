//! From the TOML text to a [`Pipeline`]: the file, its target, sources and
//! steps, read with [`reader`](super::reader) so every problem is collected.
//! The mapped parts of a step are in [`fields`](super::fields).

use super::keys::{
    BLACKLIST_KEYS, EMAIL_KEYS, FIELD_KEYS, IMPORT_KEYS, MAPPING_KEYS, METRICS_KEYS, REPORT_KEYS,
    TARGET_KEYS, TOP_KEYS,
};
use super::reader::{Ctx, Table, choices, type_name};
use super::*;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

const DEDUPE: &[&str] = &["first", "last", "merge"];
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
    /// The run's state folder (see [`Pipeline::state_dir`]): where rejects
    /// go when a step names no file.
    pub state_dir: PathBuf,
    /// Every source read so far, with the span to blame if it cannot be opened.
    pub sources: Vec<(SourceSpec, Range<usize>)>,
    pub columns: Vec<ColumnRef>,
    /// The file's `timezone`, for the times of every step.
    pub timezone: Option<chrono_tz::Tz>,
    /// How many formats the step being read lists in `date_format`.
    pub step_formats: usize,
}

pub(super) fn parse(path: &Path, text: &str, state_dir: &Path) -> Result<Pipeline, PipelineError> {
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
    // Rejects are kept by what the pipeline is, not its file's bare name:
    // its path from the folder holding the state folder (the working
    // directory's `.listpipe`: from the working directory).
    let home = std::env::current_dir().unwrap_or_default().join(state_dir);
    let state = super::state_name_in(home.parent().unwrap_or(&home), path, &name);
    let mut p = Parser {
        ctx: Ctx::new(text),
        base_dir: base_dir.clone(),
        state_dir: state_dir.to_path_buf(),
        sources: Vec::new(),
        columns: Vec::new(),
        timezone: None,
        step_formats: 0,
    };

    let top = Table {
        map: root.get_ref(),
        span: 0..0,
        name: "the pipeline file".into(),
    };
    top.check_keys(&mut p.ctx, TOP_KEYS);
    p.file_timezone(&top);
    let target = p.target(&top);
    let metrics = p.metrics(&top);
    let report = p.report(&top);
    let mut steps: Vec<(usize, Step)> = Vec::new();
    let mut tables = 0;
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
            tables += 1;
            let n = tables;
            let Some(t) = Table::new(item, format!("{kind} step {n}")) else {
                p.ctx
                    .error(item.span(), format!("each {kind} must be a table"));
                continue;
            };
            // A preset's import may bring blacklist steps that run before it.
            let made: Vec<Step> = match key {
                "import" => p.import_steps(&t, &state, n),
                "blacklist" => p
                    .blacklist(&t, &state, n)
                    .map(Step::Blacklist)
                    .into_iter()
                    .collect(),
                _ => p.export(&t, n).map(Step::Export).into_iter().collect(),
            };
            for step in made {
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
        state_dir: state_dir.to_path_buf(),
        name,
        state,
        target,
        metrics,
        report,
        steps: steps.into_iter().map(|(_, s)| s).collect(),
    })
}

impl Parser<'_> {
    /// A path the run writes where it runs (an export's `out`, the
    /// built-in target's database): relative to the folder holding the
    /// state folder, which for `.listpipe` is the working directory (the
    /// path is then kept as written). Standard output (`-`) and object
    /// URLs are no paths and are kept.
    pub(super) fn run_path(&self, p: PathBuf) -> PathBuf {
        let plain = p.to_str().is_none_or(|s| s != "-" && !s.contains("://"));
        match self.state_dir.parent() {
            Some(home) if plain && !home.as_os_str().is_empty() => home.join(p),
            _ => p,
        }
    }

    pub(super) fn path(&self, p: &str) -> PathBuf {
        self.base_dir.join(p)
    }

    /// `[report]`: `html` relative to the pipeline's folder.
    fn report(&mut self, top: &Table) -> super::Report {
        let Some(t) = top.table(&mut self.ctx, "report") else {
            return super::Report::default();
        };
        t.check_keys(&mut self.ctx, REPORT_KEYS);
        let html = t
            .str(&mut self.ctx, "html")
            .map(|f| self.base_dir.join(f.into_inner()));
        super::Report { html }
    }

    /// `[metrics]`: `file` relative to the pipeline's folder, `pushgateway` an HTTP URL.
    fn metrics(&mut self, top: &Table) -> super::Metrics {
        let Some(t) = top.table(&mut self.ctx, "metrics") else {
            return super::Metrics::default();
        };
        t.check_keys(&mut self.ctx, METRICS_KEYS);
        let ctx = &mut self.ctx;
        let file = t
            .str(ctx, "file")
            .map(|f| self.base_dir.join(f.into_inner()));
        let pushgateway = t.str(ctx, "pushgateway").and_then(|u| {
            if u.get_ref().starts_with("http://") || u.get_ref().starts_with("https://") {
                Some(u.into_inner())
            } else {
                ctx.error(
                    u.span(),
                    format!(
                        "`pushgateway` in [metrics] must be an http:// or https:// address, not \"{}\"",
                        u.get_ref()
                    ),
                );
                None
            }
        });
        super::Metrics { file, pushgateway }
    }

    fn target(&mut self, top: &Table) -> Target {
        let mut target = Target {
            url: TargetUrl::Builtin {
                database: self.state_dir.join("server.db"),
            },
            token_env: None,
            credentials: None,
            concurrency: Concurrency::Adaptive,
            max_requests_per_second: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            retries: DEFAULT_RETRIES,
            max_outage_secs: super::DEFAULT_MAX_OUTAGE_SECS,
        };
        let Some(t) = top.table(&mut self.ctx, "target") else {
            return target;
        };
        t.check_keys(&mut self.ctx, TARGET_KEYS);
        let ctx = &mut self.ctx;
        let database = t
            .str(ctx, "database")
            .map(|d| PathBuf::from(d.into_inner()));
        let database = database.map(|d| self.run_path(d));
        let ctx = &mut self.ctx;
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
        match (&mut target.url, database) {
            (TargetUrl::Builtin { database: db }, Some(d)) => *db = d,
            (TargetUrl::Url(_), Some(_)) => {
                if let Some(v) = t.get("database") {
                    ctx.error(
                        v.span(),
                        "`database` is the built-in target's file, and `url` names another target; remove it, or set url = \"builtin\"",
                    );
                }
            }
            _ => {}
        }
        target.token_env = t.str(ctx, "token_env").map(Spanned::into_inner);
        target.credentials = t
            .str(ctx, "credentials")
            .map(|c| self.base_dir.join(c.into_inner()));
        if t.get("url").is_none() && target.credentials.is_some() {
            target.url = TargetUrl::FromCredentials;
        }
        let ctx = &mut self.ctx;
        target.concurrency = super::concurrency::parse(&t, ctx);
        target.max_requests_per_second = super::concurrency::max_rate(&t, ctx);
        target.timeout_secs = t
            .int(ctx, "timeout_secs", 1..3601)
            .map_or(DEFAULT_TIMEOUT_SECS, |n| n as u64);
        target.retries = t
            .int(ctx, "retries", 0..101)
            .map_or(DEFAULT_RETRIES, |n| n as u32);
        target.max_outage_secs = t
            .int(ctx, "max_outage_secs", 1..86_401)
            .map_or(super::DEFAULT_MAX_OUTAGE_SECS, |n| n as u64);
        target
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
            None => self
                .state_dir
                .join("rejects")
                .join(pipeline)
                .join(format!("{step}.rejects.csv")),
        }
    }

    /// `null_values`: cell values read as empty (`"0.0.00"`, `"N/A"`), of a step or a mapping.
    pub(super) fn null_values(&mut self, t: &Table) -> Vec<String> {
        t.strings(&mut self.ctx, "null_values")
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.into_inner().trim().to_string())
            .filter(|v| !v.is_empty())
            .collect()
    }

    /// The step's name, checked as a file name ([`super::step_name`]).
    pub(super) fn step_name(&mut self, t: &Table, kind: &str, n: usize) -> String {
        match t.str(&mut self.ctx, "name") {
            Some(name) => {
                if let Some(why) = super::step_name::problem(name.get_ref()) {
                    self.ctx.error(name.span(), why);
                }
                name.into_inner()
            }
            None => format!("{kind}-{n}"),
        }
    }

    /// An `[[import]]` table: one import step, or with `preset` the preset's expansion
    /// (see [`presets`](super::presets)).
    fn import_steps(&mut self, t: &Table, pipeline: &str, n: usize) -> Vec<Step> {
        if t.get("preset").is_some() {
            return self.preset_steps(t, pipeline, n);
        }
        self.import(t, pipeline, n, &[])
            .map(Step::Import)
            .into_iter()
            .collect()
    }

    /// One import step. `extra_keys` are keys a preset allows beyond [`IMPORT_KEYS`]
    /// (its options), named in the unknown-key message.
    pub(super) fn import(
        &mut self,
        t: &Table,
        pipeline: &str,
        n: usize,
        extra_keys: &[&str],
    ) -> Option<ImportStep> {
        let mut known = IMPORT_KEYS.to_vec();
        known.extend_from_slice(extra_keys);
        t.check_keys(&mut self.ctx, &known);
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
        let dates = self.step_dates(t);

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
                    let email = field == ReceiverField::Email;
                    let keys = if email { EMAIL_KEYS } else { FIELD_KEYS };
                    if let Some(v) = r.get(field.as_str())
                        && let Some(mut m) =
                            self.mapping(v, field.as_str(), &r.name, src, keys, field.kind())
                    {
                        // The address is the receiver's key: no policy.
                        if !email {
                            self.mapping_policy(v, field.as_str(), &r.name, Some(field), &mut m);
                        }
                        fields.push((field, m));
                    }
                }
                if r.get("email").is_none() {
                    r.missing(&mut self.ctx, "email", ": the column holding the address");
                }
            }
        }
        let mut global_attributes = self.attributes(t, "global_attributes", src);
        let mut attributes = self.attributes(t, "attributes", src);
        let tags = self.tags(t, src);
        let mirror = self.mirror(t);
        let policy = self.step_policy(t);
        let limit = self.limit(t, mirror.is_some());
        let mut orders = self.orders(t, src, pipeline, &name);
        self.step_formats = 0;
        dates.fill_in(
            &mut fields,
            [&mut global_attributes, &mut attributes],
            orders.as_mut(),
        );
        let fill_down = self.fill_down(t, src);
        let json_attributes = self.json_attributes(t, src, &mut global_attributes);
        self.other_columns(t, src, &mut global_attributes, &mut attributes);
        let nulls = self.null_values(t);
        let rejects_bom = t.bool(&mut self.ctx, "rejects_bom");
        add_null_values(
            &nulls,
            fields
                .iter_mut()
                .map(|(_, m)| m)
                .chain(global_attributes.iter_mut().map(|a| &mut a.mapping))
                .chain(attributes.iter_mut().map(|a| &mut a.mapping))
                .chain(
                    orders
                        .iter_mut()
                        .flat_map(|o| o.fields.iter_mut().map(|(_, m)| m).chain(o.email.as_mut())),
                ),
        );
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
            fill_down,
            rejects_bom,
            json_attributes,
            policy,
            limit,
        })
    }

    pub(super) fn blacklist(
        &mut self,
        t: &Table,
        pipeline: &str,
        n: usize,
    ) -> Option<BlacklistStep> {
        t.check_keys(&mut self.ctx, BLACKLIST_KEYS);
        let name = self.step_name(t, "blacklist", n);
        let source = self.source(t, "source");
        let src = source.as_ref().map(|(_, i)| *i);
        let email = match t.get("email") {
            Some(v) => self.mapping(v, "email", &t.name, src, EMAIL_KEYS, ValueKind::Email),
            None => {
                t.missing(&mut self.ctx, "email", ": the column holding the address");
                None
            }
        };
        let comment = t
            .get("comment")
            .and_then(|v| self.mapping(v, "comment", &t.name, src, MAPPING_KEYS, ValueKind::Text));
        let group = self.group(t, false);
        let rejects = self.rejects(t, pipeline, &name);
        let only_if = t
            .get("only_if")
            .and_then(|v| self.condition(v, &t.name, src));
        let nulls = self.null_values(t);
        let rejects_bom = t.bool(&mut self.ctx, "rejects_bom");
        let mut email = email?;
        let mut comment = comment;
        add_null_values(&nulls, std::iter::once(&mut email).chain(comment.as_mut()));
        Some(BlacklistStep {
            name,
            source: source?.0,
            email,
            comment,
            rejects_bom,
            group,
            rejects,
            only_if,
        })
    }
}

/// A step's `null_values` hold for each of its mappings, beside the mapping's own.
fn add_null_values<'m>(nulls: &[String], mappings: impl Iterator<Item = &'m mut Mapping>) {
    if nulls.is_empty() {
        return;
    }
    for m in mappings {
        m.null_values.extend(nulls.iter().cloned());
    }
}

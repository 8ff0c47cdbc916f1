//! `listpipe export`: one export without a pipeline file. The flags build
//! the same [`ExportStep`] an `[[export]]` table does, then `export::run`.

use super::exit;
use crate::api::ReceiverType;
use crate::export::{self, ExportOptions};
use crate::load::LoadError;
use crate::pipeline::export::{
    self as model, CsvEncoding, CsvOptions, ExportStep, ExportWhat, FilterRef, Quoting, Timestamps,
};
use crate::pipeline::{ExportFormat, GroupRef, Target, TargetUrl};
use crate::transport::target::{self, TargetOverrides};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The target's base URL, or "builtin" (the built-in server on .listpipe/server.db).
    #[arg(long, env = "LISTPIPE_URL", default_value = "builtin")]
    pub target_url: String,
    /// An access token (the built-in target needs none).
    #[arg(long, env = "LISTPIPE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The group, by name or id; repeat it for a runtime filter over several groups.
    #[arg(long, value_name = "NAME|ID")]
    pub group: Vec<String>,
    /// A saved filter of the group, by name or id.
    #[arg(long, value_name = "NAME|ID")]
    pub filter: Option<String>,
    /// A runtime filter rule, e.g. `email:contains:@example.com`; repeatable.
    #[arg(long, value_name = "FIELD:LOGIC:CONDITION")]
    pub rule: Vec<String>,
    /// How runtime filter rules combine.
    #[arg(long, value_name = "AND|OR")]
    pub operator: Option<String>,
    /// Runtime filter: active receivers only.
    #[arg(long)]
    pub activeonly: bool,
    /// The account blacklist (with --group: that group's blocklist).
    #[arg(long)]
    pub blacklist: bool,
    /// Which receivers of the group: active, inactive, bounce or all.
    #[arg(long = "type", value_name = "TYPE", default_value = "all")]
    pub kind: String,
    /// The file to write (default `export.<format>`); its extension picks the format.
    /// `-`: standard output (csv or jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// csv, xlsx, parquet or jsonl (default: from --out, else csv).
    #[arg(long)]
    pub format: Option<String>,
    /// Orders to this second file, one row per order with the receiver's email.
    #[arg(long)]
    pub orders_out: Option<PathBuf>,
    /// Only these columns, in this order; `old=new` renames (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Joins a receiver's tags.
    #[arg(long, default_value = model::DEFAULT_TAGS_SEPARATOR)]
    pub tags_separator: String,
    /// Timestamps as `iso` (2024-02-01T14:22:00Z) or `unix` seconds.
    #[arg(long, default_value = "iso")]
    pub timestamps: String,
    /// CSV: one character, or `tab`.
    #[arg(long, default_value = ",")]
    pub delimiter: String,
    /// CSV: utf-8 or windows-1252.
    #[arg(long, default_value = "utf-8")]
    pub encoding: String,
    /// CSV: start with a UTF-8 byte order mark (Excel then reads UTF-8).
    #[arg(long)]
    pub bom: bool,
    /// CSV: quote `necessary` fields only, or `always`.
    #[arg(long, default_value = "necessary")]
    pub quoting: String,
    /// Pages read at once.
    #[arg(long, default_value_t = export::reader::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// Retries of a page that failed with 408, 429, 5xx or a dropped connection.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_RETRIES)]
    pub retries: u32,
    /// Receivers per page (tests use small pages; the API allows at most 5000).
    #[arg(long, default_value_t = export::reader::MAX_PAGESIZE, hide = true)]
    pub page_size: i64,
    /// Write only the receivers that appeared or changed (registered,
    /// activated, deactivated, bounced) since the last successful run of
    /// the same selection; the first run writes everything.
    #[arg(long)]
    pub incremental: bool,
    /// With --incremental: forget the cursor, write everything, record a new one.
    #[arg(long, requires = "incremental")]
    pub full: bool,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

fn group_ref(s: &str) -> GroupRef {
    match s.trim().parse::<i64>() {
        Ok(id) if id > 0 => GroupRef::Id(id),
        _ => GroupRef::Name(s.trim().to_string()),
    }
}

fn bad(msg: impl Into<String>) -> (u8, anyhow::Error) {
    (exit::USAGE, anyhow::anyhow!(msg.into()))
}

/// The valid choices of a flag, as a usage error lists them.
fn choices(v: &[&str]) -> String {
    v.join(", ")
}

/// The flags as a step; a usage error names the valid choices.
pub fn step(a: &ExportArgs) -> Result<ExportStep, (u8, anyhow::Error)> {
    let what = what(a)?;
    let format = chosen_format(a)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("export.{}", format.extension())));
    export::check_out(&out).map_err(|e| bad(format!("--out: {e}")))?;
    if let Some(orders) = &a.orders_out {
        export::check_out(orders).map_err(|e| bad(format!("--orders-out: {e}")))?;
    }
    let csv = csv_options(a)?;
    let timestamps = Timestamps::parse(&a.timestamps).ok_or_else(|| {
        bad(format!(
            "unknown --timestamps \"{}\"; valid: {}",
            a.timestamps,
            choices(model::TIMESTAMPS)
        ))
    })?;
    let columns = (!a.columns.is_empty()).then(|| {
        a.columns
            .iter()
            .map(|c| match c.split_once('=') {
                Some((from, to)) => (from.trim().to_string(), to.trim().to_string()),
                None => (c.trim().to_string(), c.trim().to_string()),
            })
            .collect()
    });
    if a.orders_out.is_some()
        && matches!(what, ExportWhat::Blacklist | ExportWhat::Blocklist { .. })
    {
        return Err(bad(
            "--orders-out needs receivers: a blacklist has no orders",
        ));
    }
    if a.incremental && matches!(what, ExportWhat::Blacklist | ExportWhat::Blocklist { .. }) {
        return Err(bad(
            "--incremental needs receivers: a blacklist has no change times to follow",
        ));
    }
    if !(1..=export::reader::MAX_PAGESIZE).contains(&a.page_size) {
        return Err(bad("--page-size must be from 1 to 5000"));
    }
    Ok(ExportStep {
        name: "export".into(),
        what,
        out,
        format,
        columns,
        tags_separator: a.tags_separator.clone(),
        timestamps,
        csv,
        orders_out: a.orders_out.clone(),
        incremental: a.incremental,
    })
}

/// What the flags export: the blacklist, a group's blocklist, a runtime
/// filter, a saved filter or a group.
fn what(a: &ExportArgs) -> Result<ExportWhat, (u8, anyhow::Error)> {
    let kind = ReceiverType::parse(&a.kind).ok_or_else(|| {
        bad(format!(
            "unknown --type \"{}\"; valid: {}",
            a.kind,
            ReceiverType::CHOICES
        ))
    })?;
    let mut groups: Vec<GroupRef> = a.group.iter().map(|g| group_ref(g)).collect();
    let one_group = |groups: &mut Vec<GroupRef>, what: &str| {
        if groups.len() == 1 {
            Ok(groups.remove(0))
        } else {
            Err(bad(format!("{what} needs exactly one --group NAME|ID")))
        }
    };
    Ok(if a.blacklist {
        if a.filter.is_some() || !a.rule.is_empty() {
            return Err(bad("--blacklist cannot go with --filter or --rule"));
        }
        match groups.len() {
            0 => ExportWhat::Blacklist,
            _ => ExportWhat::Blocklist {
                group: one_group(&mut groups, "a group blocklist")?,
            },
        }
    } else if !a.rule.is_empty() {
        runtime(a, groups)?
    } else if let Some(f) = &a.filter {
        let filter = match f.trim().parse::<i64>() {
            Ok(id) if id > 0 => FilterRef::Id(id),
            _ => FilterRef::Name(f.trim().to_string()),
        };
        ExportWhat::Filter {
            group: one_group(&mut groups, "--filter")?,
            filter,
        }
    } else {
        if groups.is_empty() {
            return Err(bad(
                "what to export? give --group NAME|ID (with --filter or --rule for a segment), or --blacklist",
            ));
        }
        ExportWhat::Group {
            group: one_group(&mut groups, "a group export")?,
            kind,
        }
    })
}

/// A runtime filter: the `--rule`s over `groups`.
fn runtime(a: &ExportArgs, groups: Vec<GroupRef>) -> Result<ExportWhat, (u8, anyhow::Error)> {
    if a.filter.is_some() {
        return Err(bad(
            "--rule (a runtime filter) cannot go with --filter (a saved one)",
        ));
    }
    let rules = a
        .rule
        .iter()
        .map(|r| {
            model::parse_rule(r).ok_or_else(|| {
                bad(format!(
                    "--rule \"{r}\" must be FIELD:LOGIC:CONDITION, e.g. email:contains:@example.com"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let operator = a
        .operator
        .as_deref()
        .unwrap_or("AND")
        .trim()
        .to_ascii_uppercase();
    if !model::OPERATORS.contains(&operator.as_str()) {
        return Err(bad(format!(
            "unknown --operator \"{operator}\"; valid: AND, OR"
        )));
    }
    Ok(ExportWhat::Runtime {
        groups,
        rules,
        operator,
        activeonly: a.activeonly,
    })
}

/// The format: `--format`, else `--out`'s extension, else CSV; standard
/// output takes a stream's only.
fn chosen_format(a: &ExportArgs) -> Result<ExportFormat, (u8, anyhow::Error)> {
    let format = match &a.format {
        Some(f) => Some(ExportFormat::parse(f).ok_or_else(|| {
            bad(format!(
                "unknown --format \"{f}\"; valid: {}",
                choices(model::FORMAT_CHOICES)
            ))
        })?),
        None => None,
    };
    let format = format
        .or_else(|| a.out.as_deref().and_then(ExportFormat::from_path))
        .unwrap_or(ExportFormat::Csv);
    if a.out.as_deref().is_some_and(export::is_stdout)
        && matches!(format, ExportFormat::Xlsx | ExportFormat::Parquet)
    {
        return Err(bad(format!(
            "--out - writes to standard output, which takes csv or jsonl; {} needs a file: give --out a file name",
            format.extension()
        )));
    }
    Ok(format)
}

/// The CSV flags.
fn csv_options(a: &ExportArgs) -> Result<CsvOptions, (u8, anyhow::Error)> {
    let csv = CsvOptions {
        delimiter: model::parse_delimiter(&a.delimiter).ok_or_else(|| {
            bad(format!(
                "--delimiter must be one character or \"tab\", not \"{}\"",
                a.delimiter
            ))
        })?,
        encoding: CsvEncoding::parse(&a.encoding).ok_or_else(|| {
            bad(format!(
                "unknown --encoding \"{}\"; valid: {}",
                a.encoding,
                choices(model::ENCODINGS)
            ))
        })?,
        bom: a.bom,
        quoting: Quoting::parse(&a.quoting).ok_or_else(|| {
            bad(format!(
                "unknown --quoting \"{}\"; valid: {}",
                a.quoting,
                choices(model::QUOTINGS)
            ))
        })?,
    };
    if csv.bom && csv.encoding == CsvEncoding::Windows1252 {
        return Err(bad(
            "--bom is a UTF-8 byte order mark: it cannot go with --encoding windows-1252",
        ));
    }
    Ok(csv)
}

/// Runs the export; the exit code says how it went (see `cli::exit`).
pub async fn run(args: ExportArgs) -> super::Outcome {
    let step = step(&args)?;
    let target = Target {
        url: TargetUrl::Builtin {
            database: PathBuf::from(crate::pipeline::DEFAULT_BUILTIN_DB),
        },
        token_env: None,
        credentials: None,
        // The pages in flight are bounded by `--concurrency` (memory: a
        // page is up to 5,000 receivers); the controller may hold fewer.
        concurrency: crate::pipeline::Concurrency::Adaptive,
        max_requests_per_second: None,
        timeout_secs: crate::pipeline::DEFAULT_TIMEOUT_SECS,
        retries: args.retries,
        max_outage_secs: crate::pipeline::DEFAULT_MAX_OUTAGE_SECS,
    };
    let overrides = TargetOverrides {
        url: Some(args.target_url.clone()),
        token: args.token.clone(),
        concurrency: None,
    };
    let conn = target::connect(&target, &overrides, &super::builtin::InProcess)
        .await
        .map_err(super::fail(exit::TARGET))?;
    let opts = ExportOptions {
        pagesize: args.page_size,
        concurrency: args.concurrency.max(1),
        retries: args.retries,
        progress: super::progress::on_terminal(args.quiet),
        full: args.full,
        ..Default::default()
    };
    let result = export::run(&conn, &step, &opts).await;
    conn.close().await;
    match result {
        Ok(o) => {
            if !args.quiet {
                crate::errln!(
                    "export: {} rows written to {} ({}, {} ms)",
                    o.rows,
                    export::shown(&o.file),
                    o.format,
                    o.ms
                );
                if o.values_not_typed > 0 {
                    crate::errln!(
                        "export: {} values of number or date attributes are not a number or a YYYY-MM-DD date; Parquet has them as null (CSV and JSON lines keep the text)",
                        o.values_not_typed
                    );
                }
                if let Some(i) = &o.incremental {
                    match &i.since {
                        Some(since) => crate::errln!(
                            "export: incremental, the changes since {since}; next run from {}",
                            i.cursor
                        ),
                        None => crate::errln!(
                            "export: incremental, everything (first run); next run from {}",
                            i.cursor
                        ),
                    }
                }
                if let (Some(n), Some(p)) = (o.orders, &o.orders_file) {
                    crate::errln!("export: {n} orders written to {}", p.display());
                }
            }
            Ok(exit::OK)
        }
        Err(e) => {
            // (An export writes no rows to the target: nothing to report.)
            let (e, _) = e.split();
            let code = match &e {
                e if e.stops_run() => exit::TARGET,
                LoadError::Step { .. } | LoadError::Api(_) => exit::USAGE,
                LoadError::Guard(_) => exit::GUARD,
                LoadError::Output { .. } | LoadError::State { .. } => exit::IO,
                LoadError::Target { .. } | LoadError::Unfinished { .. } => exit::TARGET,
            };
            Err((code, e.into()))
        }
    }
}

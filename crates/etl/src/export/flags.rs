//! `listpipe export`'s flags as an [`ExportStep`], the same step an
//! `[[export]]` table builds, with the same checks; a flag that makes no
//! sense is a [`FlagError`] naming it and its valid choices. The command
//! line parses the flags into [`ExportFlags`] and runs the step with
//! [`super::run`] against [`command_line_target`].

use super::{check_out, is_stdout, reader};
use crate::pipeline::export::{
    self as model, CsvEncoding, CsvOptions, ExportStep, ExportWhat, FilterRef, Quoting, Timestamps,
};
use crate::pipeline::{ExportFormat, GroupRef, Target, TargetUrl};
use listpipe_api::ReceiverType;
use std::path::PathBuf;

/// The flags of `listpipe export` that say what is exported and how it
/// is written, as given (each is the flag of the same name).
#[derive(Debug, Clone, Default)]
pub struct ExportFlags {
    pub group: Vec<String>,
    pub filter: Option<String>,
    pub rule: Vec<String>,
    pub operator: Option<String>,
    pub activeonly: bool,
    pub blacklist: bool,
    /// `--type`.
    pub kind: String,
    pub out: Option<PathBuf>,
    pub format: Option<String>,
    pub orders_out: Option<PathBuf>,
    pub columns: Vec<String>,
    pub tags_separator: String,
    pub timestamps: String,
    pub delimiter: String,
    pub encoding: String,
    pub bom: bool,
    pub quoting: String,
    pub page_size: i64,
    pub incremental: bool,
}

/// Flags that make no export: the message names the flag and, for a
/// choice, the valid ones.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(pub String);

/// The target of `listpipe export` before its `--target-url` and
/// `--token`: the built-in server on its default database, the pipeline's
/// default timeouts, and `retries` retries of a failed page.
pub fn command_line_target(retries: u32) -> Target {
    Target {
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
        retries,
        max_outage_secs: crate::pipeline::DEFAULT_MAX_OUTAGE_SECS,
    }
}

fn group_ref(s: &str) -> GroupRef {
    match s.trim().parse::<i64>() {
        Ok(id) if id > 0 => GroupRef::Id(id),
        _ => GroupRef::Name(s.trim().to_string()),
    }
}

fn bad(msg: impl Into<String>) -> FlagError {
    FlagError(msg.into())
}

/// The valid choices of a flag, as a usage error lists them.
fn choices(v: &[&str]) -> String {
    v.join(", ")
}

/// The flags as a step; a usage error names the valid choices.
pub fn step(a: &ExportFlags) -> Result<ExportStep, FlagError> {
    let what = what(a)?;
    let format = chosen_format(a)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("export.{}", format.extension())));
    check_out(&out).map_err(|e| bad(format!("--out: {e}")))?;
    if let Some(orders) = &a.orders_out {
        check_out(orders).map_err(|e| bad(format!("--orders-out: {e}")))?;
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
    if !(1..=reader::MAX_PAGESIZE).contains(&a.page_size) {
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
fn what(a: &ExportFlags) -> Result<ExportWhat, FlagError> {
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
fn runtime(a: &ExportFlags, groups: Vec<GroupRef>) -> Result<ExportWhat, FlagError> {
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
fn chosen_format(a: &ExportFlags) -> Result<ExportFormat, FlagError> {
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
    if a.out.as_deref().is_some_and(is_stdout)
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
fn csv_options(a: &ExportFlags) -> Result<CsvOptions, FlagError> {
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

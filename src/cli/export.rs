//! `listpipe export`: one export without a pipeline file. The flags build
//! the same [`ExportStep`] an `[[export]]` table does ([`crate::export::flags`]),
//! then `export::run`.

use super::{Failure, exit};
use crate::export::flags::{self, ExportFlags};
use crate::export::{self, ExportOptions};
use crate::load::LoadError;
use crate::pipeline::export::{self as model, ExportStep};
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

/// The flags as a step; a usage error names the valid choices.
pub fn step(a: &ExportArgs) -> Result<ExportStep, Failure> {
    let flags = ExportFlags {
        group: a.group.clone(),
        filter: a.filter.clone(),
        rule: a.rule.clone(),
        operator: a.operator.clone(),
        activeonly: a.activeonly,
        blacklist: a.blacklist,
        kind: a.kind.clone(),
        out: a.out.clone(),
        format: a.format.clone(),
        orders_out: a.orders_out.clone(),
        columns: a.columns.clone(),
        tags_separator: a.tags_separator.clone(),
        timestamps: a.timestamps.clone(),
        delimiter: a.delimiter.clone(),
        encoding: a.encoding.clone(),
        bom: a.bom,
        quoting: a.quoting.clone(),
        page_size: a.page_size,
        incremental: a.incremental,
    };
    flags::step(&flags).map_err(super::fail(exit::USAGE))
}

/// Runs the export; the exit code says how it went (see `cli::exit`).
pub async fn run(args: ExportArgs) -> super::Outcome {
    let step = step(&args)?;
    let target = flags::command_line_target(args.retries);
    let overrides = TargetOverrides {
        url: Some(args.target_url.clone()),
        token: args.token.clone(),
        concurrency: None,
        state_dir: None,
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

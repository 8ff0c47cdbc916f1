//! `listpipe check PIPELINE.toml`: the command line of
//! [`crate::run::check()`], which does everything `run` does before it
//! touches the network: parse the file, read every source, map, validate
//! and dedupe, keep the first rows as they will be sent, count, and write
//! the rejects files. This file prints what it found. No network.

use super::exit;
use crate::html_report::{self, Command};
use crate::pipeline::{self, ImportStep, Step};
use crate::run::check::{ReadStep, Rows};
use crate::run::{CheckEvents, CheckOptions, StepCheck};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The pipeline file.
    pub pipeline: PathBuf,
    /// How many prepared rows to show per step.
    #[arg(long, default_value_t = 3)]
    pub preview: usize,
    /// Also write what the check found as one self-contained HTML page to
    /// this file: the counts as charts, the reject reasons, a profile of
    /// every mapped column (no script, nothing fetched; see README).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn run(args: CheckArgs, settings: super::Settings) -> super::Outcome {
    let pipeline = pipeline::load(&args.pipeline).map_err(super::fail(exit::USAGE))?;
    // `--html`, else the pipeline file's `[report] html`.
    let html = args.html.clone().or_else(|| pipeline.report.html.clone());
    // The file's verdict first; the rows' comes last, with its counts.
    let steps = pipeline.steps.len();
    crate::outln!(
        "{}: the pipeline file is valid ({steps} step{}); its rows are checked below",
        pipeline.file.display(),
        if steps == 1 { "" } else { "s" }
    );
    let opts = CheckOptions {
        preview: args.preview,
        budget: settings.budget,
        profile: html.is_some(),
    };
    let outcome = crate::run::check(&pipeline, &opts, &mut Printer);
    if let Some(line) = outcome.verdict.line() {
        crate::outln!("\n{line}");
    }
    let mut code = outcome.status.code();
    if let Some(path) = &html
        && let Err(e) = html_report::write(path, Command::Check, &outcome.report, &outcome.extra)
    {
        crate::cause::report_in("the HTML report", &e);
        code = exit::IO;
    }
    Ok(code)
}

/// Prints each step as it is checked.
struct Printer;

impl CheckEvents for Printer {
    fn checked(&mut self, step: &Step, check: &StepCheck) {
        match (step, check) {
            (Step::Export(s), _) => crate::outln!(
                "\n[{}] export to {} ({}): needs the target, checked when run",
                s.name,
                s.out.display(),
                s.format.extension()
            ),
            // Checking stays offline: a URL or an object is downloaded by `run`.
            (_, StepCheck::Remote) => crate::outln!(
                "\n[{}] source is a URL or an object in a store: downloaded and checked when run",
                step.name()
            ),
            (_, StepCheck::Failed(e)) => crate::cause::report_in(step.name(), e),
            (_, StepCheck::Read(read)) => {
                read_step(step, read);
                counts(step, read);
            }
            (_, StepCheck::Export) => {}
        }
    }
}

/// What a read step would send: its header, notes and first rows.
fn read_step(step: &Step, read: &ReadStep) {
    let notes = || {
        for line in crate::report::workbook_lines(&read.workbooks) {
            crate::outln!("  {line}");
        }
        if let Some(line) = &read.encoding {
            crate::outln!("  {line}");
        }
    };
    match (step, &read.rows) {
        (
            Step::Import(s),
            Rows::Import {
                preview,
                unreadable,
                receivers,
            },
        ) => {
            crate::outln!("\n[{}] import into {}", s.name, s.group);
            notes();
            if let Some(e) = unreadable {
                crate::errln!("listpipe: {}: {e}", s.name);
            } else if !preview.is_empty() {
                crate::outln!(
                    "  first rows as create bodies (a receiver the group already holds gets only what differs):"
                );
            }
            for row in preview {
                crate::outln!("  row {}: {}", row.row, row.body);
            }
            let orders = read.stats.orders_accepted;
            crate::outln!("  {receivers} receivers to send, {orders} orders");
            policy_lines(s, *receivers);
        }
        (Step::Blacklist(s), Rows::Blacklist { preview, entries }) => {
            let of = s.group.as_ref().map(|g| format!(" of {g}"));
            crate::outln!("\n[{}] blacklist{}", s.name, of.unwrap_or_default());
            notes();
            for (email, comment) in preview {
                crate::outln!(
                    "  {email} {}",
                    if comment.is_empty() {
                        String::new()
                    } else {
                        format!("({comment})")
                    }
                );
            }
            crate::outln!("  {entries} entries to send");
        }
        _ => {}
    }
}

/// A read step's counts, reasons and rejects files.
fn counts(step: &Step, read: &ReadStep) {
    let stats = &read.stats;
    crate::outln!(
        "  {} rows read, {} rejected, {} duplicates, {} tags normalised",
        stats.rows_read,
        stats.rejected_total(),
        stats.duplicates,
        stats.tags_changed
    );
    for line in crate::report::reason_lines(stats) {
        crate::outln!("    {line}");
    }
    for line in crate::report::left_out_lines(stats) {
        crate::outln!("  {line}");
    }
    for line in crate::report::source_notes(stats) {
        crate::outln!("  {line}");
    }
    if stats.orders_read > 0 {
        crate::outln!(
            "  orders: {} read, {} accepted, {} rejected{}",
            stats.orders_read,
            stats.orders_accepted,
            stats.orders_rejected,
            crate::report::orders_merged(stats)
        );
    }
    for file in &read.rejects {
        match file {
            Ok(Some(path)) => crate::outln!("  rejects written to {}", path.display()),
            Ok(None) => {}
            Err(e) => crate::cause::report_in(step.name(), e),
        }
    }
}

/// An import step's write policies and limit (issue 62). What a policy
/// keeps is decided against what the target holds, so `check` names the
/// policies and `run --dry-run` counts what they keep.
fn policy_lines(s: &ImportStep, receivers: usize) {
    let shown = s.policies_shown();
    if !shown.is_empty() {
        crate::outln!(
            "  write policies: {} (what they keep is counted by run --dry-run)",
            shown.join(", ")
        );
    }
    if let Some(n) = s.limit {
        let of = receivers as u64;
        crate::outln!("  limited to {} of {of} receivers (limit)", n.min(of));
    }
}

//! What `listpipe check` says of each step, as lines: the binary prints
//! them, a program or a test reads them ([`said`]).

use super::{ReadStep, Rows, StepCheck};
use crate::pipeline::{ImportStep, Pipeline, Step};
use crate::report;
use listpipe_base::cause;

/// A line `check` says: on standard output, or on standard error (what
/// could not be read or written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Out(String),
    Err(String),
}

/// What `check` says first: the file is valid, and how many steps it has.
pub fn valid(pipeline: &Pipeline) -> String {
    let steps = pipeline.steps.len();
    format!(
        "{}: the pipeline file is valid ({steps} step{}); its rows are checked below",
        pipeline.file.display(),
        if steps == 1 { "" } else { "s" }
    )
}

/// The lines `check` says of `step`, checked as `check` found it.
pub fn said(step: &Step, check: &StepCheck) -> Vec<Line> {
    let mut lines = Said(Vec::new());
    match (step, check) {
        (Step::Export(s), _) => lines.out(format!(
            "\n[{}] export to {} ({}): needs the target, checked when run",
            s.name,
            s.out.display(),
            s.format.extension()
        )),
        // Checking stays offline: a URL or an object is downloaded by `run`.
        (_, StepCheck::Remote) => lines.out(format!(
            "\n[{}] source is a URL or an object in a store: downloaded and checked when run",
            step.name()
        )),
        (_, StepCheck::Failed(e)) => lines.err(cause::in_place(step.name(), e)),
        (_, StepCheck::Read(read)) => {
            lines.read_step(step, read);
            lines.counts(step, read);
        }
        (_, StepCheck::Export) => {}
    }
    lines.0
}

struct Said(Vec<Line>);

impl Said {
    fn out(&mut self, line: String) {
        self.0.push(Line::Out(line));
    }

    fn err(&mut self, line: String) {
        self.0.push(Line::Err(line));
    }

    /// What a read step would send: its header, notes and first rows.
    fn read_step(&mut self, step: &Step, read: &ReadStep) {
        let notes = |said: &mut Said| {
            for line in report::workbook_lines(&read.workbooks) {
                said.out(format!("  {line}"));
            }
            if let Some(line) = &read.encoding {
                said.out(format!("  {line}"));
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
                self.out(format!("\n[{}] import into {}", s.name, s.group));
                notes(self);
                if let Some(e) = unreadable {
                    self.err(format!("listpipe: {}: {e}", s.name));
                } else if !preview.is_empty() {
                    self.out(
                        "  first rows as create bodies (a receiver the group already holds gets only what differs):"
                            .into(),
                    );
                }
                for row in preview {
                    self.out(format!("  row {}: {}", row.row, row.body));
                }
                let orders = read.stats.orders_accepted;
                self.out(format!("  {receivers} receivers to send, {orders} orders"));
                self.policies(s, *receivers);
            }
            (Step::Blacklist(s), Rows::Blacklist { preview, entries }) => {
                let of = s.group.as_ref().map(|g| format!(" of {g}"));
                self.out(format!(
                    "\n[{}] blacklist{}",
                    s.name,
                    of.unwrap_or_default()
                ));
                notes(self);
                for (email, comment) in preview {
                    let comment = if comment.is_empty() {
                        String::new()
                    } else {
                        format!("({comment})")
                    };
                    self.out(format!("  {email} {comment}"));
                }
                self.out(format!("  {entries} entries to send"));
            }
            _ => {}
        }
    }

    /// A read step's counts, reasons and rejects files.
    fn counts(&mut self, step: &Step, read: &ReadStep) {
        let stats = &read.stats;
        self.out(format!(
            "  {} rows read, {} rejected, {} duplicates, {} tags normalised",
            stats.rows_read,
            stats.rejected_total(),
            stats.duplicates,
            stats.tags_changed
        ));
        for line in report::reason_lines(stats) {
            self.out(format!("    {line}"));
        }
        for line in report::left_out_lines(stats)
            .into_iter()
            .chain(report::source_notes(stats))
        {
            self.out(format!("  {line}"));
        }
        if stats.orders_read > 0 {
            self.out(format!(
                "  orders: {} read, {} accepted, {} rejected{}",
                stats.orders_read,
                stats.orders_accepted,
                stats.orders_rejected,
                report::orders_merged(stats)
            ));
        }
        for file in &read.rejects {
            match file {
                Ok(Some(path)) => self.out(format!("  rejects written to {}", path.display())),
                Ok(None) => {}
                Err(e) => self.err(cause::in_place(step.name(), e)),
            }
        }
    }

    /// An import step's write policies and limit (issue 62). What a policy
    /// keeps is decided against what the target holds, so `check` names
    /// the policies and `run --dry-run` counts what they keep.
    fn policies(&mut self, s: &ImportStep, receivers: usize) {
        let shown = s.policies_shown();
        if !shown.is_empty() {
            self.out(format!(
                "  write policies: {} (what they keep is counted by run --dry-run)",
                shown.join(", ")
            ));
        }
        if let Some(n) = s.limit {
            let of = receivers as u64;
            self.out(format!(
                "  limited to {} of {of} receivers (limit)",
                n.min(of)
            ));
        }
    }
}

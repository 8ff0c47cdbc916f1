//! `listpipe check`: everything a run does before it touches the network,
//! for every step: read the source, map, validate and dedupe, keep the
//! first rows as they will be sent, count, and write the rejects files. No
//! network. The caller prints each step's [`StepCheck`] as it is told it
//! ([`CheckEvents`]) and the verdict from the [`CheckOutcome`].

mod said;

pub use said::{Line, said, valid};

use super::ExitStatus;
use super::rejects::{StepRejects, write_order_rejects};
use crate::html_report::{self, StepExtra};
use crate::load::LoadError;
use crate::pipeline::{self, ImportStep, Pipeline, Step};
use crate::prepare::{self, Budget, PrepareError, PrepareStats, PreparedRows};
use crate::profile::StepProfile;
use crate::report::{RunReport, StepReport};
use crate::source::{RejectSpool, Workbook};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How a check goes.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// How many prepared rows (or blacklist entries) to keep per step.
    pub preview: usize,
    pub budget: Budget,
    /// Import steps profile every mapped column for the HTML page.
    pub profile: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            preview: 3,
            budget: Budget::default(),
            profile: false,
        }
    }
}

/// What the check found of one step.
#[derive(Debug)]
pub enum StepCheck {
    /// An export reads only the target: nothing to check offline.
    Export,
    /// The source is a URL or an object in a store: downloaded and checked
    /// when run.
    Remote,
    /// The source could not be read or prepared.
    Failed(PrepareError),
    /// The source read and prepared.
    Read(Box<ReadStep>),
}

/// An import or blacklist step whose source was read.
#[derive(Debug)]
pub struct ReadStep {
    /// The source's workbooks (sheets read, skipped).
    pub workbooks: Vec<Workbook>,
    /// `warning: FILE: the encoding was guessed as ...` when its bytes did
    /// not settle the (first) file's encoding.
    pub encoding: Option<String>,
    pub rows: Rows,
    pub stats: PrepareStats,
    /// The rejects files: written (their path), none needed, or failed.
    pub rejects: Vec<Result<Option<PathBuf>, LoadError>>,
}

/// What a read step would send, and its first rows.
#[derive(Debug)]
pub enum Rows {
    Import {
        /// The first prepared rows as create bodies (JSON).
        preview: Vec<PreviewRow>,
        /// The prepared rows could not be read for the preview.
        unreadable: Option<polars::error::PolarsError>,
        receivers: usize,
    },
    Blacklist {
        /// The first entries: address (or `*@domain`) and comment.
        preview: Vec<(String, String)>,
        entries: usize,
    },
}

/// One prepared row, as it will be sent.
#[derive(Debug)]
pub struct PreviewRow {
    /// Its row number in the source.
    pub row: u64,
    /// The create body, as JSON (or why it cannot be written as JSON).
    pub body: String,
}

/// What a check tells while it goes.
pub trait CheckEvents {
    /// `step` was checked: `check` says what was found.
    fn checked(&mut self, step: &Step, check: &StepCheck) {
        let _ = (step, check);
    }
}

impl CheckEvents for () {}

/// How a check went.
#[derive(Debug)]
pub struct CheckOutcome {
    pub status: ExitStatus,
    /// The rows' verdict over every step checked.
    pub verdict: Verdict,
    /// The steps as a run report's, for the HTML page.
    pub report: RunReport,
    /// What the page adds to each step (sources, profile, to send).
    pub extra: BTreeMap<String, StepExtra>,
}

/// Checks every step of `pipeline` offline, in order.
pub fn check(
    pipeline: &Pipeline,
    opts: &CheckOptions,
    events: &mut dyn CheckEvents,
) -> CheckOutcome {
    let mut status = ExitStatus::OK;
    let mut verdict = Verdict::default();
    let started = chrono::Utc::now().to_rfc3339();
    let mut page_steps: Vec<StepReport> = Vec::new();
    let mut page_extra: BTreeMap<String, StepExtra> = BTreeMap::new();
    for step in &pipeline.steps {
        let mut extra = StepExtra {
            profile: opts.profile.then(StepProfile::default),
            consent: match step {
                Step::Import(s) => html_report::consent_sources(s),
                _ => Vec::new(),
            },
            ..Default::default()
        };
        let source = match step {
            Step::Import(s) => &s.source,
            Step::Blacklist(s) => &s.source,
            Step::Export(_) => {
                page_steps.push(step_report(step, "export"));
                events.checked(step, &StepCheck::Export);
                continue;
            }
        };
        if crate::remote::is_remote(source) {
            page_steps.push(StepReport {
                skipped: Some("the source is downloaded and checked when run".into()),
                ..step_report(step, "")
            });
            events.checked(step, &StepCheck::Remote);
            continue;
        }
        let read = match step {
            Step::Import(s) => check_import(pipeline, s, opts, &mut extra),
            Step::Blacklist(s) => check_blacklist(pipeline, s, opts, &mut extra),
            Step::Export(_) => continue,
        };
        let kind = if matches!(step, Step::Blacklist(_)) {
            "blacklist"
        } else {
            "import"
        };
        let mut page_step = step_report(step, kind);
        let checked = match read {
            Ok(read) => {
                verdict.add(read.stats.rows_read, read.stats.rejected_total());
                for file in &read.rejects {
                    match file {
                        Ok(Some(path)) => {
                            status = ExitStatus::PARTIAL;
                            page_step.rejects_file.get_or_insert(path.clone());
                        }
                        Ok(None) => {}
                        Err(_) => status = ExitStatus::IO,
                    }
                }
                page_step.prepare = read.stats.clone();
                StepCheck::Read(Box::new(read))
            }
            Err(e) => {
                status = ExitStatus::PARTIAL;
                verdict.unread += 1;
                page_step.error = Some(listpipe_base::cause::flat(&e));
                StepCheck::Failed(e)
            }
        };
        events.checked(step, &checked);
        page_steps.push(page_step);
        page_extra.insert(step.name().to_string(), extra);
    }
    let report = RunReport {
        pipeline: pipeline.file.display().to_string(),
        target: match &pipeline.target.url {
            pipeline::TargetUrl::Url(u) => u.clone(),
            pipeline::TargetUrl::Builtin { .. } => "builtin".to_string(),
            pipeline::TargetUrl::FromCredentials => "the credentials file's".to_string(),
        },
        started,
        finished: chrono::Utc::now().to_rfc3339(),
        steps: page_steps,
        exit_code: status.code(),
        ..Default::default()
    };
    CheckOutcome {
        status,
        verdict,
        report,
        extra: page_extra,
    }
}

/// An import step, chunk by chunk as `run` reads it: the first rows are
/// kept for the preview, the rest only counted.
fn check_import(
    pipeline: &Pipeline,
    s: &ImportStep,
    opts: &CheckOptions,
    extra: &mut StepExtra,
) -> Result<ReadStep, PrepareError> {
    let mut preview: Vec<PreviewRow> = Vec::new();
    let mut receivers = 0usize;
    let mut unreadable = None;
    // The run's time is the check's: a row without consent of its own
    // shows the `registered` it will be sent with.
    let now = chrono::Utc::now().timestamp();
    let mut rejects = StepRejects::new(&s.rejects, s.rejects_bom);
    let mut encoding = None;
    // Mirror mode's first read of every address plans removals, which a
    // check does not: its rows come out the same without.
    let s = &ImportStep {
        mirror: None,
        ..s.clone()
    };
    let summary = prepare::import_chunks(s, &pipeline.base_dir, opts.budget, &mut |c| {
        rejects.chunk(&c.table, &c.rejects);
        if let Some(p) = extra.profile.as_mut() {
            p.add_chunk(&c);
        }
        if extra.sources.is_empty() {
            extra.sources = html_report::files(&c.table.files);
        }
        if encoding.is_none() {
            encoding = guessed_encoding(&c.table);
        }
        receivers += c.frame.height();
        if preview.len() < opts.preview {
            match PreparedRows::new(s, &c.frame) {
                Ok(rows) => {
                    let more = rows.len().min(opts.preview - preview.len());
                    preview.extend((0..more).map(|i| {
                        let input = rows.input(i, c.orders.of(&rows.email(i)));
                        let body = prepare::consent::create_body(input, now);
                        PreviewRow {
                            row: rows.row_number(i),
                            body: serde_json::to_string(&body)
                                .unwrap_or_else(|e| format!("(cannot be written as JSON: {e})")),
                        }
                    }));
                }
                Err(e) => unreadable = Some(e),
            }
        }
        true
    })?;
    extra.to_send = Some(receivers as u64);
    let mut written = vec![rejects.finish(RejectSpool::new())];
    if let (Some(o), Some(spec)) = (summary.order_rejects, &s.orders) {
        written.push(write_order_rejects(&spec.rejects, o));
    }
    Ok(ReadStep {
        workbooks: summary.workbooks,
        encoding,
        rows: Rows::Import {
            preview,
            unreadable,
            receivers,
        },
        stats: summary.stats,
        rejects: written,
    })
}

/// A blacklist step: its first entries kept, the rest counted.
fn check_blacklist(
    pipeline: &Pipeline,
    s: &pipeline::BlacklistStep,
    opts: &CheckOptions,
    extra: &mut StepExtra,
) -> Result<ReadStep, PrepareError> {
    let mut entries = 0;
    let mut preview = Vec::new();
    let mut rejects = StepRejects::new(&s.rejects, s.rejects_bom);
    let mut encoding = None;
    let summary = prepare::blacklist_chunks(s, &pipeline.base_dir, opts.budget, &mut |chunk| {
        rejects.chunk(&chunk.table, &chunk.rejects);
        if extra.sources.is_empty() {
            extra.sources = html_report::files(&chunk.table.files);
        }
        if encoding.is_none() {
            encoding = guessed_encoding(&chunk.table);
        }
        entries += chunk.entries.len();
        let room = opts.preview.saturating_sub(preview.len());
        preview.extend(chunk.entries.into_iter().take(room));
        true
    })?;
    extra.to_send = Some(entries as u64);
    Ok(ReadStep {
        workbooks: summary.workbooks,
        encoding,
        rows: Rows::Blacklist { preview, entries },
        stats: summary.stats,
        rejects: vec![rejects.finish(RejectSpool::new())],
    })
}

/// A step's report for the page, before its counts.
fn step_report(step: &Step, kind: &'static str) -> StepReport {
    StepReport {
        name: step.name().to_string(),
        kind,
        ..Default::default()
    }
}

/// `warning: FILE: the encoding was guessed as ...` when the source's (first) file's
/// encoding is the detector's guess, which its bytes did not settle.
fn guessed_encoding(table: &crate::source::Table) -> Option<String> {
    let note = table.dialect.encoding_note()?;
    Some(match table.files.first() {
        Some(file) => format!("warning: {}: {note}", file.display()),
        None => format!("warning: {note}"),
    })
}

/// The rows' verdict over every step checked: how many were read and rejected.
#[derive(Debug, Default, Clone, Copy)]
pub struct Verdict {
    /// Steps whose rows were checked.
    pub steps: usize,
    pub read: u64,
    pub rejected: u64,
    /// Steps whose source could not be read.
    pub unread: usize,
}

impl Verdict {
    fn add(&mut self, read: u64, rejected: u64) {
        self.steps += 1;
        self.read += read;
        self.rejected += rejected;
    }

    /// `rows: all 4 rejected: ...`; none when no step's rows were checked.
    pub fn line(&self) -> Option<String> {
        let (read, rejected) = (self.read, self.rejected);
        let unread = match self.unread {
            0 => String::new(),
            1 => "; 1 step's source could not be read".to_string(),
            n => format!("; {n} steps' sources could not be read"),
        };
        if self.steps == 0 {
            return (self.unread > 0).then(|| format!("rows: none checked{unread}"));
        }
        let rows = if read == 1 { "row" } else { "rows" };
        Some(match rejected {
            0 => format!("rows: all {read} {rows} ready to send{unread}"),
            r if r >= read => format!(
                "rows: all {read} {rows} rejected, none would be sent; the reasons above name what to change{unread}"
            ),
            r => format!(
                "rows: {r} of {read} rejected (see the reasons above), {} ready to send{unread}",
                read - r
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn the_verdict_counts_the_rows_of_every_step() {
        let mut v = Verdict::default();
        assert_eq!(v.line(), None);
        v.unread = 1;
        assert_eq!(
            v.line().as_deref(),
            Some("rows: none checked; 1 step's source could not be read")
        );
        v.unread = 0;
        v.add(1, 0);
        assert_eq!(v.line().as_deref(), Some("rows: all 1 row ready to send"));
        v.add(3, 2);
        assert_eq!(
            v.line().as_deref(),
            Some("rows: 2 of 4 rejected (see the reasons above), 2 ready to send")
        );
        v.add(0, 2);
        assert_eq!(
            v.line().as_deref(),
            Some(
                "rows: all 4 rows rejected, none would be sent; the reasons above name what to change"
            )
        );
    }
}

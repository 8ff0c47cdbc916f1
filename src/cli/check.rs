//! `listpipe check PIPELINE.toml`: everything `run` does before it touches
//! the network: parse the file, read every source, map, validate and
//! dedupe, show the first rows as they will be sent, count, and write the
//! rejects files. No network.

use super::exit;
use crate::html_report::{self, Command, StepExtra};
use crate::pipeline::{self, ImportStep, Step};
use crate::prepare::{self, PreparedRows};
use crate::profile::StepProfile;
use crate::report::{RunReport, StepReport};
use crate::run::rejects::{StepRejects, write_order_rejects};
use crate::source::RejectSpool;
use clap::Args;
use std::collections::BTreeMap;
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
    let mut code = exit::OK;
    let mut verdict = Verdict::default();
    // `--html`: the steps as a report's, and what the page adds to each.
    let started = chrono::Utc::now().to_rfc3339();
    let mut page_steps: Vec<StepReport> = Vec::new();
    let mut page_extra: BTreeMap<String, StepExtra> = BTreeMap::new();
    for step in &pipeline.steps {
        let mut extra = StepExtra {
            profile: html.is_some().then(StepProfile::default),
            consent: match step {
                Step::Import(s) => html_report::consent_sources(s),
                _ => Vec::new(),
            },
            ..Default::default()
        };
        if let Step::Export(s) = step {
            page_steps.push(step_report(step, "export"));
            // An export reads only the target: nothing to check offline.
            crate::outln!(
                "\n[{}] export to {} ({}): needs the target, checked when run",
                s.name,
                s.out.display(),
                s.format.extension()
            );
            continue;
        }
        let source = match step {
            Step::Import(s) => &s.source,
            Step::Blacklist(s) => &s.source,
            Step::Export(_) => continue,
        };
        if crate::remote::is_remote(source) {
            page_steps.push(StepReport {
                skipped: Some("the source is downloaded and checked when run".into()),
                ..step_report(step, "")
            });
            // Checking stays offline: a URL or an object is downloaded by `run`.
            crate::outln!(
                "\n[{}] source is a URL or an object in a store: downloaded and checked when run",
                step.name()
            );
            continue;
        }
        let outcome = match step {
            Step::Import(s) => {
                // Chunk by chunk, as `run` reads it: the first rows are
                // kept for the preview, the rest only counted.
                let mut preview: Vec<String> = Vec::new();
                let mut receivers = 0usize;
                let mut unreadable = None;
                // The run's time is the check's: a row without consent of
                // its own shows the `registered` it will be sent with.
                let now = chrono::Utc::now().timestamp();
                let mut rejects = StepRejects::new(&s.rejects, s.rejects_bom);
                let mut encoding = None;
                // Mirror mode's first read of every address plans removals,
                // which a check does not: its rows come out the same without.
                let s = &ImportStep {
                    mirror: None,
                    ..s.clone()
                };
                let summary =
                    prepare::import_chunks(s, &pipeline.base_dir, settings.budget, &mut |c| {
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
                        if preview.len() < args.preview {
                            match PreparedRows::new(s, &c.frame) {
                                Ok(rows) => {
                                    let more = rows.len().min(args.preview - preview.len());
                                    preview.extend((0..more).map(|i| {
                                        let input = rows.input(i, c.orders.of(&rows.email(i)));
                                        let body = prepare::consent::create_body(input, now);
                                        format!(
                                            "  row {}: {}",
                                            rows.row_number(i),
                                            serde_json::to_string(&body).unwrap_or_else(|e| {
                                                format!("(cannot be written as JSON: {e})")
                                            })
                                        )
                                    }));
                                }
                                Err(e) => unreadable = Some(e),
                            }
                        }
                        true
                    });
                summary.map(|p| {
                    crate::outln!("\n[{}] import into {}", s.name, s.group);
                    for line in crate::report::workbook_lines(&p.workbooks) {
                        crate::outln!("  {line}");
                    }
                    if let Some(line) = &encoding {
                        crate::outln!("  {line}");
                    }
                    if let Some(e) = unreadable {
                        crate::errln!("listpipe: {}: {e}", s.name);
                    } else if !preview.is_empty() {
                        crate::outln!("  first rows as create bodies (a receiver the group already holds gets only what differs):");
                    }
                    preview.iter().for_each(|line| crate::outln!("{line}"));
                    extra.to_send = Some(receivers as u64);
                    let orders = p.stats.orders_accepted;
                    crate::outln!("  {receivers} receivers to send, {orders} orders");
                    policy_lines(s, receivers);
                    let mut written = vec![rejects.finish(RejectSpool::new())];
                    if let (Some(o), Some(spec)) = (p.order_rejects, &s.orders) {
                        written.push(write_order_rejects(&spec.rejects, o));
                    }
                    (p.stats, written)
                })
            }
            Step::Blacklist(s) => {
                let mut entries = 0;
                let mut preview = Vec::new();
                let mut rejects = StepRejects::new(&s.rejects, s.rejects_bom);
                let mut encoding = None;
                let summary = prepare::blacklist_chunks(
                    s,
                    &pipeline.base_dir,
                    settings.budget,
                    &mut |chunk| {
                        rejects.chunk(&chunk.table, &chunk.rejects);
                        if extra.sources.is_empty() {
                            extra.sources = html_report::files(&chunk.table.files);
                        }
                        if encoding.is_none() {
                            encoding = guessed_encoding(&chunk.table);
                        }
                        entries += chunk.entries.len();
                        let room = args.preview.saturating_sub(preview.len());
                        preview.extend(chunk.entries.into_iter().take(room));
                        true
                    },
                );
                summary.map(|p| {
                    crate::outln!(
                        "\n[{}] blacklist{}",
                        s.name,
                        s.group
                            .as_ref()
                            .map(|g| format!(" of {g}"))
                            .unwrap_or_default()
                    );
                    for line in crate::report::workbook_lines(&p.workbooks) {
                        crate::outln!("  {line}");
                    }
                    if let Some(line) = &encoding {
                        crate::outln!("  {line}");
                    }
                    for (email, comment) in &preview {
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
                    extra.to_send = Some(entries as u64);
                    (p.stats, vec![rejects.finish(RejectSpool::new())])
                })
            }
            Step::Export(_) => continue,
        };
        let kind = if matches!(step, Step::Blacklist(_)) {
            "blacklist"
        } else {
            "import"
        };
        let mut page_step = step_report(step, kind);
        match outcome {
            Ok((stats, written)) => {
                verdict.add(stats.rows_read, stats.rejected_total());
                crate::outln!(
                    "  {} rows read, {} rejected, {} duplicates, {} tags normalised",
                    stats.rows_read,
                    stats.rejected_total(),
                    stats.duplicates,
                    stats.tags_changed
                );
                for line in crate::report::reason_lines(&stats) {
                    crate::outln!("    {line}");
                }
                for line in crate::report::left_out_lines(&stats) {
                    crate::outln!("  {line}");
                }
                for line in crate::report::source_notes(&stats) {
                    crate::outln!("  {line}");
                }
                if stats.orders_read > 0 {
                    crate::outln!(
                        "  orders: {} read, {} accepted, {} rejected{}",
                        stats.orders_read,
                        stats.orders_accepted,
                        stats.orders_rejected,
                        crate::report::orders_merged(&stats)
                    );
                }
                for file in written {
                    match file {
                        Ok(Some(path)) => {
                            code = exit::PARTIAL;
                            crate::outln!("  rejects written to {}", path.display());
                            page_step.rejects_file.get_or_insert(path);
                        }
                        Ok(None) => {}
                        Err(e) => {
                            code = exit::IO;
                            crate::cause::report_in(step.name(), &e);
                        }
                    }
                }
                page_step.prepare = stats;
            }
            Err(e) => {
                crate::cause::report_in(step.name(), &e);
                code = exit::PARTIAL;
                verdict.unread += 1;
                page_step.error = Some(crate::cause::flat(&e));
            }
        }
        page_steps.push(page_step);
        page_extra.insert(step.name().to_string(), extra);
    }
    if let Some(line) = verdict.line() {
        crate::outln!("\n{line}");
    }
    if let Some(path) = &html {
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
            exit_code: code,
            ..Default::default()
        };
        if let Err(e) = super::html::write(path, Command::Check, &report, &page_extra) {
            crate::cause::report_in("the HTML report", &e);
            code = exit::IO;
        }
    }
    Ok(code)
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
#[derive(Default)]
struct Verdict {
    steps: usize,
    read: u64,
    rejected: u64,
    /// Steps whose source could not be read.
    unread: usize,
}

impl Verdict {
    fn add(&mut self, read: u64, rejected: u64) {
        self.steps += 1;
        self.read += read;
        self.rejected += rejected;
    }

    /// `rows: all 4 rejected: ...`; none when no step's rows were checked.
    fn line(&self) -> Option<String> {
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

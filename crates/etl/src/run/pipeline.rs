//! A whole run of a pipeline against a connected target: every step in
//! file order (each in [`super::step`]), what the run's journals become,
//! the report and the exit status. The caller connects the target, takes
//! the run lock, handles signals (they set [`WriteOptions::stop`]) and
//! prints, from the report and the [`RunEvents`] it is told while the run goes.

use super::ExitStatus;
use super::journals::{journal_steps, step_keys};
use super::step::{StepError, run_step};
use crate::load::journal::{self, JournalOptions};
use crate::load::{LoadError, WriteMode, WriteOptions};
use crate::pipeline::{self, Pipeline, Step};
use crate::prepare::{Budget, PrepareError};
use crate::report::{RunReport, StepReport};
use crate::transport::target::Connected;
use futures::future::LocalBoxFuture;

/// How a run goes: how it writes (a dry run, the journal, the stop
/// signal...), the prepare stage's budget, and what it adds.
#[derive(Clone)]
pub struct RunOptions {
    pub write: WriteOptions,
    pub budget: Budget,
    /// Export steps with `incremental = true` forget their cursors.
    pub full_exports: bool,
    /// Import steps profile their prepared columns for the HTML report.
    pub profile: bool,
    /// When the run started (RFC 3339), as the report says it.
    pub started: String,
}

impl RunOptions {
    /// A run of `pipeline` against `conn` as `listpipe run` makes it
    /// without options: the target's concurrency and retries, the batch
    /// upsert when the target has it, a journal, no progress shown.
    pub fn new(pipeline: &Pipeline, conn: &Connected) -> RunOptions {
        let stop = conn.controller.stop_signal();
        let budget = Budget::default();
        RunOptions {
            write: WriteOptions {
                concurrency: conn.controller.max(),
                writes: WriteMode::Auto,
                state_dir: pipeline.state_dir.clone(),
                pipeline: pipeline.state.clone(),
                pipeline_name: pipeline.name.clone(),
                target: conn.resolved.clone(),
                allow_mass_removal: false,
                retries: pipeline.target.retries,
                dry_run: false,
                progress: None,
                journal: Some(JournalOptions {
                    state_dir: pipeline.state_dir.clone(),
                    pipeline: pipeline.state.clone(),
                    resume: false,
                    target: conn.resolved.clone(),
                    stop: stop.clone(),
                    spill_after: budget.spill_after,
                }),
                stop,
                spill_after: crate::spill::TARGET_SPILL_AFTER,
            },
            budget,
            full_exports: false,
            profile: false,
            started: chrono::Utc::now().to_rfc3339(),
        }
    }

    /// `dry_run`: read the target and write a plan, change nothing, keep
    /// no journal.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.write.dry_run = dry_run;
        if dry_run {
            self.write.journal = None;
        }
        self
    }

    /// `resume`: continue from the journal an unfinished run left.
    pub fn resume(mut self, resume: bool) -> Self {
        if let Some(j) = self.write.journal.as_mut() {
            j.resume = resume;
        }
        self
    }

    /// The prepare stage's budget (the journal's too).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        if let Some(j) = self.write.journal.as_mut() {
            j.spill_after = budget.spill_after;
        }
        self
    }
}

/// One step of the run, going (not `Send`: a run goes on one task).
pub type StepFuture<'a> = LocalBoxFuture<'a, Result<StepReport, StepError>>;

/// What a run tells while it goes (the binary prints it); every method
/// does nothing unless implemented (`()` is the run that tells nothing).
pub trait RunEvents {
    /// Awaits `work`, `step` of the run, with `report` the steps before
    /// it: a caller may wrap it (a log span, a file rewritten while it goes).
    fn during<'a>(
        &'a mut self,
        step: &'a Step,
        report: &'a RunReport,
        work: StepFuture<'a>,
    ) -> StepFuture<'a> {
        let _ = (step, report);
        work
    }

    /// A step finished (rows may have been rejected or failed).
    fn finished(&mut self, step: &StepReport) {
        let _ = step;
    }

    /// `step` stopped with `error` (the report lists it with the error).
    fn failed(&mut self, step: &Step, error: &StepError) {
        let _ = (step, error);
    }
}

impl RunEvents for () {}

/// How a run went: its report (steps, requests, exit code), its exit
/// status and what became of its journals.
#[derive(Debug)]
pub struct RunOutcome {
    pub report: RunReport,
    pub status: ExitStatus,
    pub journals: Journals,
}

/// What became of the run's journals at its end.
#[derive(Debug)]
pub enum Journals {
    /// A dry run keeps none.
    None,
    /// Every step finished: the run's journals were removed.
    Removed,
    /// They could not be removed.
    NotRemoved(std::io::Error),
    /// Rows may still need sending (a stop, the target lost, rows failed
    /// with transient errors through every retry): the journals stay;
    /// `found` says whether one of this run's is there to resume.
    Kept { found: bool },
}

/// Runs `pipeline`'s steps in order against `conn`; a step that fails
/// fails alone unless no later step can do better (the target gone, the
/// run's own state unwritable), and [`WriteOptions::stop`] set stops the
/// run between rows. The report lists every step, run or not.
pub async fn run(
    pipeline: &Pipeline,
    conn: &Connected,
    opts: &RunOptions,
    events: &mut dyn RunEvents,
) -> RunOutcome {
    let write = &opts.write;
    let mut report = RunReport {
        pipeline: pipeline.file.display().to_string(),
        target: conn.base_url.clone(),
        dry_run: write.dry_run,
        started: opts.started.clone(),
        ..Default::default()
    };
    let mut status = ExitStatus::OK;
    // The journal stays when rows may still need sending: a stop, the
    // target lost, or rows failed with transient errors through every retry.
    let mut unfinished = false;
    for step in &pipeline.steps {
        if write.stop.is_set() {
            unfinished = true;
            break;
        }
        let work = Box::pin(run_step(
            pipeline,
            step,
            conn,
            write,
            opts.budget,
            opts.full_exports,
            opts.profile,
        ));
        match events.during(step, &report, work).await {
            Ok(step_report) => {
                events.finished(&step_report);
                if step_report.problems() > 0 {
                    status = status.at_least(ExitStatus::PARTIAL);
                }
                if let Some(i) = &step_report.import {
                    unfinished |= i.stopped || i.failed_transient > 0;
                }
                report.steps.push(step_report);
            }
            // The step stopped: the report lists it with what it wrote
            // and why it stopped, whatever the exit code.
            Err(e) => {
                let (e, partial) = e.split();
                report
                    .steps
                    .push(failed_step(step, &e, partial, write.dry_run));
                events.failed(step, &e);
                match e {
                    // A URL source that could not be had: a wrong address or
                    // credentials (exit 2); nothing of it was read.
                    // ... or a column the step maps is not in what was
                    // downloaded: the pipeline file's error, found only now.
                    StepError::Remote(_) | StepError::Prepare(PrepareError::MissingColumn(_)) => {
                        status = status.at_least(ExitStatus::USAGE);
                    }
                    StepError::Load(LoadError::Guard(_)) => {
                        status = status.at_least(ExitStatus::GUARD);
                    }
                    // The run's own state could not be written: stop here,
                    // keep the journal (the target holds what it confirmed).
                    StepError::Load(LoadError::Output { .. } | LoadError::State { .. }) => {
                        status = ExitStatus::IO;
                        unfinished = true;
                        break;
                    }
                    // The target unreachable, refusing the credentials or
                    // stopped answering: no later step can do better.
                    StepError::Load(e) if e.stops_run() => {
                        status = ExitStatus::TARGET;
                        unfinished = true;
                        break;
                    }
                    // Anything else (the target refused this step's set-up
                    // with a 4xx, a rejects file unwritable...) fails this
                    // step alone.
                    _ => status = status.at_least(ExitStatus::PARTIAL),
                }
            }
        }
    }
    // Every step that ran is in the report (done or with its error); the
    // ones a stop left are listed as not run.
    not_run(
        &mut report,
        pipeline,
        "not run: the run stopped before this step",
        write.dry_run,
    );
    report.requests = Some(conn.controller.report());
    // A failed journal write also stops the rows; it keeps its own code.
    if write.stop.is_set() && status != ExitStatus::IO {
        status = ExitStatus::STOPPED;
        unfinished = true;
    }
    let journals = if write.dry_run {
        Journals::None
    } else {
        let steps = journal_steps(pipeline);
        let keys = step_keys(&steps);
        if unfinished {
            let found = !journal::found(&pipeline.state_dir, &pipeline.state, &write.target, &keys)
                .own
                .is_empty();
            Journals::Kept { found }
        } else {
            match journal::discard(&pipeline.state_dir, &pipeline.state, &write.target, &keys) {
                Ok(()) => Journals::Removed,
                Err(e) => Journals::NotRemoved(e),
            }
        }
    };
    report.finished = chrono::Utc::now().to_rfc3339();
    report.exit_code = status.code();
    RunOutcome {
        report,
        status,
        journals,
    }
}

/// The report of a run that never reached its target (unreachable, or the
/// token refused), with every step not run: a scheduler reads it like any
/// other night's. `target`: the URL it was given.
pub fn unreached(pipeline: &Pipeline, target: String, dry_run: bool, started: String) -> RunReport {
    let mut report = RunReport {
        pipeline: pipeline.file.display().to_string(),
        target,
        dry_run,
        started,
        finished: chrono::Utc::now().to_rfc3339(),
        exit_code: ExitStatus::TARGET.code(),
        ..Default::default()
    };
    not_run(
        &mut report,
        pipeline,
        "not run: the target could not be reached",
        dry_run,
    );
    report
}

/// Lists the steps of `pipeline` past those in `report` as not run, `why`.
pub fn not_run(report: &mut RunReport, pipeline: &Pipeline, why: &str, dry_run: bool) {
    for step in &pipeline.steps[report.steps.len().min(pipeline.steps.len())..] {
        report.steps.push(StepReport {
            name: step.name().to_string(),
            kind: step_kind(step),
            skipped: Some(why.to_string()),
            dry_run,
            ..Default::default()
        });
    }
}

fn step_kind(step: &Step) -> &'static str {
    match step {
        Step::Import(_) => "import",
        Step::Blacklist(_) => "blacklist",
        Step::Export(_) => "export",
    }
}

/// The report of a step that stopped with `e`: its name, kind and error,
/// and what it read and wrote before, as far as the step got (`partial`).
fn failed_step(
    step: &Step,
    e: &StepError,
    partial: Option<StepReport>,
    dry_run: bool,
) -> StepReport {
    StepReport {
        name: step.name().to_string(),
        kind: step_kind(step),
        error: Some(listpipe_base::cause::flat(e)),
        dry_run,
        ..partial.unwrap_or_default()
    }
}

/// `--limit N`: every import step writes its first `n` receivers only.
/// Refused, before anything is touched, when a step is in mirror mode (see
/// [`pipeline::MIRROR_LIMIT`]).
pub fn limit_steps(pipeline: &mut Pipeline, n: u64) -> Result<(), String> {
    for step in &mut pipeline.steps {
        if let Step::Import(s) = step {
            if s.mirror.is_some() {
                return Err(format!(
                    "--limit {n}: step {} is in mirror mode: {}",
                    s.name,
                    pipeline::MIRROR_LIMIT
                ));
            }
            s.limit = Some(n);
        }
    }
    Ok(())
}

/// The groups the pipeline's steps write, as the run lock names them.
pub fn written_groups(pipeline: &Pipeline) -> Vec<String> {
    pipeline
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Import(i) => Some(i.group.to_string()),
            Step::Blacklist(b) => Some(
                b.group
                    .as_ref()
                    .map_or("the account blacklist".to_string(), |g| {
                        format!("the blocklist of {g}")
                    }),
            ),
            Step::Export(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` as the pipeline file of a folder holding its sources.
    fn pipeline(text: &str) -> Pipeline {
        let dir = tempfile::tempdir().expect("temp dir");
        for source in ["a.csv", "b.csv"] {
            std::fs::write(dir.path().join(source), "email\na@example.com\n").expect("written");
        }
        crate::pipeline::parse_text(&dir.path().join("p.toml"), text).expect("parses")
    }

    const TWO_STEPS: &str = "[target]\nurl = \"https://api.example.com\"\n\n\
        [[import]]\nname = \"a\"\nsource = \"a.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n\n\
        [[blacklist]]\nname = \"b\"\nsource = \"b.csv\"\nemail = \"email\"\n";

    #[test]
    fn the_steps_not_run_are_listed_after_those_that_ran() {
        let p = pipeline(TWO_STEPS);
        let mut report = RunReport {
            steps: vec![StepReport {
                name: "a".into(),
                kind: "import",
                ..Default::default()
            }],
            ..Default::default()
        };
        not_run(&mut report, &p, "not run: why", true);
        assert_eq!(report.steps.len(), 2);
        assert_eq!(report.steps[1].name, "b");
        assert_eq!(report.steps[1].kind, "blacklist");
        assert_eq!(report.steps[1].skipped.as_deref(), Some("not run: why"));
        assert!(report.steps[1].dry_run);
        let unreached = unreached(&p, "u".into(), false, "then".into());
        assert_eq!(unreached.exit_code, 3);
        assert_eq!(unreached.steps.len(), 2);
    }

    #[test]
    fn a_limit_applies_to_import_steps_and_the_lock_names_every_written_group() {
        let mut p = pipeline(TWO_STEPS);
        limit_steps(&mut p, 10).expect("no mirror step");
        assert!(matches!(&p.steps[0], Step::Import(s) if s.limit == Some(10)));
        assert_eq!(
            written_groups(&p),
            vec![
                "group \"News\"".to_string(),
                "the account blacklist".to_string()
            ]
        );
    }
}

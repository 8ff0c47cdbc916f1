//! `listpipe run PIPELINE.toml`: every step in file order (each in
//! [`step`](super::step): source, prepare, load), then the report. Reading
//! this file top to bottom is reading a run; which journals a run finds,
//! resumes or refuses is in [`journals`].

mod journals;
mod metrics;

use super::{exit, fail, logs};
use crate::cause;
use crate::load::journal::{self, JournalOptions};
use crate::load::lock::LockError;
use crate::load::{self, LoadError, Stop, WriteMode, WriteOptions};
use crate::pipeline::{self, Pipeline, Step};
use crate::prepare::PrepareError;
use crate::report::{RunReport, StepReport};
use crate::run::step::{StepError, run_step};
use crate::state_file;
use crate::transport::target::{self, TargetOverrides};
use clap::Args;
use journals::{again, journal_steps, leftover_journals, step_keys};
use std::path::PathBuf;
use tracing::Instrument;

/// `--writes`: [`WriteMode`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Writes {
    /// The batch upsert extension when the target has it, else single requests.
    Auto,
    /// One request per receiver, through the spec's endpoints only.
    Single,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline file.
    pub pipeline: PathBuf,
    /// The target's base URL (or "builtin"), instead of the file's `[target] url`.
    #[arg(long, env = "LISTPIPE_URL")]
    pub target_url: Option<String>,
    /// An access token, instead of the file's `token_env` or `credentials`.
    #[arg(long, env = "LISTPIPE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Read the target and write a plan of what would happen, but change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the run report as JSON to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page to this file:
    /// the counts as charts, the reject reasons, the requests (see README).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress bars and no summary (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// Continue a run that did not finish (crash, kill, Ctrl-C) from its
    /// journal: rows the target confirmed are not sent again.
    #[arg(long, conflicts_with = "discard_journal")]
    pub resume: bool,
    /// Delete the journal an unfinished run left, then run from the start.
    #[arg(long)]
    pub discard_journal: bool,
    /// How receivers are written: `auto` uses the target's batch upsert
    /// (up to 1,000 per request) when it has it, `single` one request per
    /// receiver through the spec's endpoints.
    #[arg(long, value_enum, default_value_t = Writes::Auto)]
    pub writes: Writes,
    /// Let mirror mode remove more receivers than its guard allows (default
    /// 10% of the group).
    #[arg(long)]
    pub allow_mass_removal: bool,
    /// Requests in flight, pinned, instead of the file's `[target]
    /// concurrency` (adaptive unless the file pins it).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: Option<u16>,
    /// Export steps with `incremental = true` forget their cursors: they
    /// write everything and record new ones (`export --full` for one step).
    #[arg(long)]
    pub full: bool,
    /// Write only the first N receivers of each import step, in the
    /// source's order (a canary run); a later run without it writes the
    /// rest. Overrides a step's `limit`; refused with mirror mode.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Write the run's figures in the Prometheus text format to this file
    /// at the end of the run, atomically (for node exporter's textfile
    /// collector: name it `*.prom`; see docs/scheduled.md).
    #[arg(long, value_name = "FILE")]
    pub metrics_file: Option<PathBuf>,
    /// Push the same figures to this Prometheus Pushgateway at the end of
    /// the run (PUT URL/metrics/job/listpipe/pipeline/NAME); a failed push
    /// is a warning, never a failed run.
    #[arg(long, value_name = "URL")]
    pub pushgateway: Option<String>,
}

/// Runs the pipeline; the exit code says how it went (see `cli::exit`).
pub async fn run(args: RunArgs, settings: super::Settings) -> super::Outcome {
    let mut pipeline = pipeline::load(&args.pipeline).map_err(fail(exit::USAGE))?;
    if let Some(n) = args.limit {
        limit_steps(&mut pipeline, n).map_err(fail(exit::USAGE))?;
    }
    let overrides = TargetOverrides {
        url: args.target_url.clone(),
        token: args.token.clone(),
        concurrency: args.concurrency.map(usize::from),
    };
    let started = chrono::Utc::now().to_rfc3339();
    let conn = match target::connect(&pipeline.target, &overrides, &super::builtin::InProcess).await
    {
        Ok(conn) => conn,
        // Unreachable, or the token refused: the report still says so, with
        // every step not run (a scheduler reads it like any other night's).
        Err(e) => {
            let mut report = RunReport {
                pipeline: pipeline.file.display().to_string(),
                target: args
                    .target_url
                    .clone()
                    .unwrap_or_else(|| match &pipeline.target.url {
                        pipeline::TargetUrl::Url(u) => u.clone(),
                        _ => String::new(),
                    }),
                dry_run: args.dry_run,
                started,
                finished: chrono::Utc::now().to_rfc3339(),
                exit_code: exit::TARGET,
                ..Default::default()
            };
            not_run(
                &mut report,
                &pipeline,
                "not run: the target could not be reached",
                args.dry_run,
            );
            if let Some(path) = &args.report
                && let Err(w) = write_report(path, &report)
            {
                cause::report_in("the run report", w.as_ref());
            }
            write_html(&args, &pipeline, &report);
            // A failed run is what the metrics are for: they say so too.
            let to = sinks(&args, &pipeline);
            if let Err(w) = metrics::emit(&to, &report, &pipeline.name).await {
                cause::report_in("the metrics file", w.as_ref());
            }
            return Err((exit::TARGET, e.into()));
        }
    };
    // One run writing a group of a target at a time (a dry run writes
    // nothing and takes no lock); then the journals, which belong to one
    // target and group each. Neither is touched when the lock is refused.
    let _lock = if args.dry_run {
        None
    } else {
        let groups = written_groups(&pipeline);
        match load::lock::acquire(&args.pipeline, &conn.resolved, &groups) {
            Ok(l) => Some(l),
            Err(e) => {
                crate::errln!("listpipe: {}", cause::Chain(&e));
                let code = match e {
                    LockError::Held { .. } => exit::LOCKED,
                    LockError::Io { .. } => exit::IO,
                };
                let why = "not run: the run lock could not be taken";
                metrics::before_any_step(&args, &pipeline, &conn.base_url, &started, code, why)
                    .await;
                conn.close().await;
                return Ok(code);
            }
        }
    };
    if !args.dry_run
        && let Err((code, message)) = leftover_journals(&args, &pipeline, &conn.resolved)
    {
        crate::errln!("{message}");
        let why = "not run: a journal of an unfinished run was found";
        metrics::before_any_step(&args, &pipeline, &conn.base_url, &started, code, why).await;
        conn.close().await;
        return Ok(code);
    }
    // One stop for the run: the rows' loops and the requests' waits see it.
    let stop = conn.controller.stop_signal();
    let opts = WriteOptions {
        concurrency: conn.controller.max(),
        writes: match args.writes {
            Writes::Auto => WriteMode::Auto,
            Writes::Single => WriteMode::Single,
        },
        pipeline: pipeline.state.clone(),
        pipeline_name: pipeline.name.clone(),
        target: conn.resolved.clone(),
        allow_mass_removal: args.allow_mass_removal,
        retries: pipeline.target.retries,
        dry_run: args.dry_run,
        progress: super::progress::on_terminal(args.quiet),
        journal: (!args.dry_run).then(|| JournalOptions {
            pipeline: pipeline.state.clone(),
            resume: args.resume,
            target: conn.resolved.clone(),
            stop: stop.clone(),
            spill_after: settings.budget.spill_after,
        }),
        stop,
        spill_after: settings.target_spill_after,
    };
    let signals = tokio::spawn(stop_on_signal(opts.stop.clone()));
    let mut report = RunReport {
        pipeline: pipeline.file.display().to_string(),
        target: conn.base_url.clone(),
        dry_run: args.dry_run,
        started,
        ..Default::default()
    };
    let mut code = exit::OK;
    // The journal stays when rows may still need sending: a stop, the
    // target lost, or rows failed with transient errors through every retry.
    let mut unfinished = false;
    // The metrics file rewritten while the steps go (none without one).
    let mut live = metrics::Live::new(&sinks(&args, &pipeline), &pipeline.name, &conn.controller);
    for step in &pipeline.steps {
        if opts.stop.is_set() {
            unfinished = true;
            break;
        }
        let span = tracing::info_span!("step", step = step.name());
        let profile = args.html.is_some() || pipeline.report.html.is_some();
        let stepped = run_step(
            &pipeline,
            step,
            &conn,
            &opts,
            settings.budget,
            args.full,
            profile,
        )
        .instrument(span);
        match live.during(&report, stepped).await {
            Ok(step_report) => {
                if logs::json() {
                    step_report.log_finished();
                }
                if step_report.problems() > 0 {
                    code = code.max(exit::PARTIAL);
                }
                if let Some(i) = &step_report.import {
                    unfinished |= i.stopped || i.failed_transient > 0;
                    if i.journal_unreadable_lines > 0 {
                        crate::errln!(
                            "{}: warning: {} line(s) of the journal could not be read (a line torn by a kill, or damage); their rows were checked against the target",
                            step_report.name,
                            i.journal_unreadable_lines
                        );
                    }
                    if !args.quiet && (i.resumed > 0 || i.in_flight_checked > 0 || i.stopped) {
                        crate::errln!(
                            "{}: journal: {} confirmed earlier and skipped, {} in flight checked, {} not started",
                            step_report.name,
                            i.resumed,
                            i.in_flight_checked,
                            i.not_started
                        );
                    }
                }
                if !args.quiet {
                    step_report
                        .summary()
                        .iter()
                        .for_each(|l| crate::errln!("{l}"));
                }
                report.steps.push(step_report);
            }
            // The step stopped: the report lists it with what it wrote
            // and why it stopped, whatever the exit code.
            Err(e) => {
                let (e, partial) = e.split();
                report
                    .steps
                    .push(failed_step(step, &e, partial, args.dry_run));
                if logs::json() {
                    tracing::error!(step = step.name(), cause = %cause::flat(&e), "step stopped");
                }
                cause::report_in(step.name(), &e);
                match e {
                    // A URL source that could not be had: a wrong address or
                    // credentials (exit 2); nothing of it was read.
                    // ... or a column the step maps is not in what was
                    // downloaded: the pipeline file's error, found only now.
                    StepError::Remote(_) | StepError::Prepare(PrepareError::MissingColumn(_)) => {
                        code = code.max(exit::USAGE);
                    }
                    StepError::Load(LoadError::Guard(_)) => code = code.max(exit::GUARD),
                    // The run's own state could not be written: stop here,
                    // keep the journal (the target holds what it confirmed).
                    StepError::Load(LoadError::Output { .. } | LoadError::State { .. }) => {
                        code = exit::IO;
                        unfinished = true;
                        break;
                    }
                    // The target unreachable, refusing the credentials or
                    // stopped answering: no later step can do better.
                    StepError::Load(e) if e.stops_run() => {
                        code = exit::TARGET;
                        unfinished = true;
                        break;
                    }
                    // Anything else (the target refused this step's set-up
                    // with a 4xx, a rejects file unwritable...) fails this
                    // step alone.
                    _ => code = code.max(exit::PARTIAL),
                }
            }
        }
    }
    signals.abort();
    // Every step that ran is in the report (done or with its error); the
    // ones a stop left are listed as not run.
    not_run(
        &mut report,
        &pipeline,
        "not run: the run stopped before this step",
        args.dry_run,
    );
    let requests = conn.controller.report();
    if !args.quiet
        && let Some(line) = requests.rate_summary()
    {
        crate::errln!("{line}");
    }
    report.requests = Some(requests);
    conn.close().await;
    // A failed journal write also stops the rows; it keeps its own code.
    if opts.stop.is_set() && code != exit::IO {
        code = exit::STOPPED;
        unfinished = true;
    }
    if !args.dry_run {
        let steps = journal_steps(&pipeline);
        let keys = step_keys(&steps);
        if unfinished {
            // The journals are this target's: the resume names it.
            let again = again(&args);
            if code == exit::STOPPED {
                crate::errln!("listpipe: stopped; resume with: {}", again.with("--resume"));
            } else if !journal::found(&pipeline.state, &opts.target, &keys)
                .own
                .is_empty()
            {
                crate::errln!(
                    "listpipe: the run did not finish; resume with: {}",
                    again.with("--resume")
                );
            }
        } else if let Err(e) = journal::discard(&pipeline.state, &opts.target, &keys) {
            cause::report(
                anyhow::Error::from(e)
                    .context("cannot remove the journal")
                    .as_ref(),
            );
        }
    }
    report.finished = chrono::Utc::now().to_rfc3339();
    report.exit_code = code;
    if let Some(path) = &args.report
        && let Err(e) = write_report(path, &report)
    {
        cause::report_in("the run report", e.as_ref());
        code = exit::IO;
    }
    if !write_html(&args, &pipeline, &report) {
        code = exit::IO;
    }
    if let Err(e) = metrics::emit(&sinks(&args, &pipeline), &report, &pipeline.name).await {
        cause::report_in("the metrics file", e.as_ref());
        code = exit::IO;
    }
    Ok(code)
}

/// Where the run's metrics go: `--metrics-file` and `--pushgateway`, else
/// the pipeline file's `[metrics]`.
fn sinks<'a>(args: &'a RunArgs, pipeline: &'a Pipeline) -> metrics::Sinks<'a> {
    metrics::Sinks {
        file: args
            .metrics_file
            .as_deref()
            .or(pipeline.metrics.file.as_deref()),
        pushgateway: args
            .pushgateway
            .as_deref()
            .or(pipeline.metrics.pushgateway.as_deref()),
    }
}

/// `--html FILE`: the report as a page (issue 60); false when it could not
/// be written (said on stderr).
fn write_html(args: &RunArgs, pipeline: &Pipeline, report: &RunReport) -> bool {
    // `--html`, else the pipeline file's `[report] html`.
    let Some(path) = args.html.as_ref().or(pipeline.report.html.as_ref()) else {
        return true;
    };
    let extra = super::html::sources(pipeline);
    let written = super::html::write(path, crate::html_report::Command::Run, report, &extra);
    if let Err(e) = &written {
        cause::report_in("the HTML report", e);
    }
    written.is_ok()
}

/// Writes the run report as JSON; a report that cannot be made is an
/// error like one that cannot be written (before, an empty file).
fn write_report(
    path: &std::path::Path,
    report: &RunReport,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let json = serde_json::to_vec_pretty(report)?;
    state_file::write(path, &json, state_file::Access::Shared)?;
    Ok(())
}

/// Lists the steps of `pipeline` past those in `report` as not run, `why`.
fn not_run(report: &mut RunReport, pipeline: &Pipeline, why: &str, dry_run: bool) {
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
        error: Some(cause::flat(e)),
        dry_run,
        ..partial.unwrap_or_default()
    }
}

/// `--limit N`: every import step writes its first `n` receivers only.
/// Refused, before anything is touched, when a step is in mirror mode (see
/// [`pipeline::MIRROR_LIMIT`]).
fn limit_steps(pipeline: &mut Pipeline, n: u64) -> anyhow::Result<()> {
    for step in &mut pipeline.steps {
        if let Step::Import(s) = step {
            if s.mirror.is_some() {
                anyhow::bail!(
                    "--limit {n}: step {} is in mirror mode: {}",
                    s.name,
                    pipeline::MIRROR_LIMIT
                );
            }
            s.limit = Some(n);
        }
    }
    Ok(())
}

/// The groups the pipeline's steps write, as the run lock names them.
fn written_groups(pipeline: &Pipeline) -> Vec<String> {
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

/// Ctrl-C or SIGTERM sets `stop`: the write loops take no new rows, rows
/// in flight finish, the journal and the report are written. A second
/// signal exits at once (code 130); the journal then shows the rows in
/// flight as started, and `--resume` checks them against the target.
async fn stop_on_signal(stop: Stop) {
    #[cfg(unix)]
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(t) => Some(t),
        Err(e) => {
            // Ctrl-C still stops gracefully; SIGTERM then ends at once.
            tracing::warn!(cause = %e, "SIGTERM cannot be caught: it will end the run at once");
            None
        }
    };
    loop {
        #[cfg(unix)]
        let term_recv = async {
            match term.as_mut() {
                Some(t) => t.recv().await,
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let term_recv = std::future::pending::<Option<()>>();
        tokio::select! {
            r = tokio::signal::ctrl_c() => if r.is_err() { return },
            _ = term_recv => {}
        }
        if stop.is_set() {
            crate::errln!("listpipe: stopped at once; resume with --resume");
            std::process::exit(i32::from(exit::STOPPED));
        }
        // No new rows, and requests still waiting for their turn (a rate, a
        // pause, a backoff) are not sent: the stop takes one request timeout at most.
        stop.set();
        crate::errln!(
            "listpipe: stopping: no new rows; finishing the requests in flight (again to quit at once)"
        );
    }
}

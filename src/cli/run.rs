//! `listpipe run PIPELINE.toml`: the command line of
//! [`crate::run::run()`], which runs the steps: this file connects the
//! target, takes the run lock, decides on the journals an earlier run left
//! ([`crate::run::journals`]), handles signals, prints, and writes the
//! report, the HTML page and the metrics.

use super::{exit, fail, logs};
use crate::load::journal;
use crate::load::{Stop, WriteMode};
use crate::pipeline::{self, Pipeline, Step};
use crate::report::{RunReport, StepReport};
use crate::run::guard;
use crate::run::journals::Leftover;
use crate::run::pipeline::{StepFuture, limit_steps, unreached};
use crate::run::step::StepError;
use crate::run::{Journals, RunEvents, RunOptions, RunOutcome};
use crate::state_file;
use crate::transport::target::{self, TargetOverrides};
use crate::{cause, html_report, metrics};
use clap::Args;
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
        limit_steps(&mut pipeline, n).map_err(|m| (exit::USAGE, anyhow::anyhow!(m)))?;
    }
    let overrides = TargetOverrides {
        url: args.target_url.clone(),
        token: args.token.clone(),
        concurrency: args.concurrency.map(usize::from),
        state_dir: Some(pipeline.state_dir.clone()),
    };
    let started = chrono::Utc::now().to_rfc3339();
    let conn = match target::connect(&pipeline.target, &overrides, &super::builtin::InProcess).await
    {
        Ok(conn) => conn,
        // Unreachable, or the token refused: the report still says so, with
        // every step not run (a scheduler reads it like any other night's).
        Err(e) => {
            let url = args
                .target_url
                .clone()
                .unwrap_or_else(|| match &pipeline.target.url {
                    pipeline::TargetUrl::Url(u) => u.clone(),
                    _ => String::new(),
                });
            let report = unreached(&pipeline, url, args.dry_run, started);
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
    let leftover = Leftover::asked(args.resume, args.discard_journal);
    let _cleared = match guard::clear(
        &pipeline,
        &conn.resolved,
        &again(&args),
        leftover,
        args.dry_run,
    ) {
        Ok(cleared) => {
            cleared
                .notes
                .iter()
                .for_each(|line| crate::errln!("{line}"));
            cleared
        }
        Err(not) => {
            crate::errln!("{}", not.message);
            let code = not.status.code();
            refused(&args, &pipeline, &conn.base_url, &started, code, not.why).await;
            conn.close().await;
            return Ok(code);
        }
    };
    let mut opts = RunOptions::new(&pipeline, &conn)
        .budget(settings.budget)
        .dry_run(args.dry_run)
        .resume(args.resume);
    opts.write.writes = match args.writes {
        Writes::Auto => WriteMode::Auto,
        Writes::Single => WriteMode::Single,
    };
    opts.write.allow_mass_removal = args.allow_mass_removal;
    opts.write.progress = super::progress::on_terminal(args.quiet);
    opts.write.spill_after = settings.target_spill_after;
    opts.full_exports = args.full;
    opts.profile = args.html.is_some() || pipeline.report.html.is_some();
    opts.started = started;
    let signals = tokio::spawn(stop_on_signal(opts.write.stop.clone()));
    // The metrics file rewritten while the steps go (none without one).
    let live = metrics::Live::new(&sinks(&args, &pipeline), &pipeline.name, &conn.controller);
    let mut events = Printer {
        quiet: args.quiet,
        live,
    };
    let RunOutcome {
        report,
        status,
        journals,
    } = crate::run::run(&pipeline, &conn, &opts, &mut events).await;
    signals.abort();
    if !args.quiet
        && let Some(line) = report.requests.as_ref().and_then(|r| r.rate_summary())
    {
        crate::errln!("{line}");
    }
    conn.close().await;
    let mut code = status.code();
    match journals {
        // The journals are this target's: the resume names it.
        Journals::Kept { .. } if code == exit::STOPPED => {
            let again = again(&args);
            crate::errln!("listpipe: stopped; resume with: {}", again.with("--resume"));
        }
        Journals::Kept { found: true } => crate::errln!(
            "listpipe: the run did not finish; resume with: {}",
            again(&args).with("--resume")
        ),
        Journals::NotRemoved(e) => cause::report(
            anyhow::Error::from(e)
                .context("cannot remove the journal")
                .as_ref(),
        ),
        Journals::Kept { found: false } | Journals::Removed | Journals::None => {}
    }
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

/// What the run prints while it goes, and its metrics file rewritten.
struct Printer<'a> {
    quiet: bool,
    live: metrics::Live<'a>,
}

impl RunEvents for Printer<'_> {
    fn during<'a>(
        &'a mut self,
        step: &'a Step,
        report: &'a RunReport,
        work: StepFuture<'a>,
    ) -> StepFuture<'a> {
        let span = tracing::info_span!("step", step = step.name());
        Box::pin(self.live.during(report, work.instrument(span)))
    }

    fn finished(&mut self, step_report: &StepReport) {
        if logs::json() {
            step_report.log_finished();
        }
        if let Some(i) = &step_report.import {
            if i.journal_unreadable_lines > 0 {
                crate::errln!(
                    "{}: warning: {} line(s) of the journal could not be read (a line torn by a kill, or damage); their rows were checked against the target",
                    step_report.name,
                    i.journal_unreadable_lines
                );
            }
            if !self.quiet && (i.resumed > 0 || i.in_flight_checked > 0 || i.stopped) {
                crate::errln!(
                    "{}: journal: {} confirmed earlier and skipped, {} in flight checked, {} not started",
                    step_report.name,
                    i.resumed,
                    i.in_flight_checked,
                    i.not_started
                );
            }
        }
        if !self.quiet {
            step_report
                .summary()
                .iter()
                .for_each(|l| crate::errln!("{l}"));
        }
    }

    fn failed(&mut self, step: &Step, e: &StepError) {
        if logs::json() {
            tracing::error!(step = step.name(), cause = %cause::flat(e), "step stopped");
        }
        cause::report_in(step.name(), e);
    }
}

/// How messages name this run again: its file, and the `--target-url` it
/// was given (a journal belongs to one target).
fn again(args: &RunArgs) -> journal::Again<'_> {
    journal::Again {
        pipeline_file: &args.pipeline,
        target_url: args.target_url.as_deref(),
    }
}

/// Where the run's metrics go: `--metrics-file` and `--pushgateway`, else
/// the pipeline file's `[metrics]`.
fn sinks<'a>(args: &'a RunArgs, pipeline: &'a Pipeline) -> metrics::Sinks<'a> {
    metrics::Sinks::of(
        pipeline,
        args.metrics_file.as_deref(),
        args.pushgateway.as_deref(),
    )
}

/// The metrics of a run refused before its first step with exit `code`
/// (`why`, what its steps say).
async fn refused(
    args: &RunArgs,
    pipeline: &Pipeline,
    target: &str,
    started: &str,
    code: u8,
    why: &str,
) {
    let refused = metrics::Refused {
        target,
        started,
        dry_run: args.dry_run,
        code,
        why,
    };
    metrics::before_any_step(&sinks(args, pipeline), pipeline, refused).await;
}

/// `--html FILE`: the report as a page (issue 60); false when it could not
/// be written (said on stderr).
fn write_html(args: &RunArgs, pipeline: &Pipeline, report: &RunReport) -> bool {
    // `--html`, else the pipeline file's `[report] html`.
    let Some(path) = args.html.as_ref().or(pipeline.report.html.as_ref()) else {
        return true;
    };
    let extra = html_report::sources(pipeline);
    let written = html_report::write(path, html_report::Command::Run, report, &extra);
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

//! Where the metrics of a run go ([`Sinks`]): the `*.prom` file, rewritten
//! while the run goes ([`Live`]) and at its end, and the Pushgateway
//! ([`emit`]); the last success carried over from the file or the gateway.
//! The text itself is [`super::render`]'s.

use super::{LAST_SUCCESS, LIVE_EVERY, Phase, render, render_at, succeeded};
use crate::pipeline::Pipeline;
use crate::report::RunReport;
use crate::transport::controller::Controller;
use listpipe_base::{cause, errln, state_file};
use prometheus_client::encoding::prometheus_text;
use std::path::Path;
use std::time::Duration;

/// Where the metrics go: the run's `--metrics-file` and `--pushgateway`.
/// None of either: no metrics.
#[derive(Debug, Default, Clone)]
pub struct Sinks<'a> {
    /// The `*.prom` file, rewritten while the run goes and at its end.
    pub file: Option<&'a Path>,
    /// The Pushgateway's base URL, pushed to at the end of the run.
    pub pushgateway: Option<&'a str>,
}

impl<'a> Sinks<'a> {
    /// The sinks of a run of `pipeline`: `file` and `pushgateway` (the
    /// command line's), each else the pipeline file's `[metrics]`.
    pub fn of(
        pipeline: &'a Pipeline,
        file: Option<&'a Path>,
        pushgateway: Option<&'a str>,
    ) -> Self {
        Sinks {
            file: file.or(pipeline.metrics.file.as_deref()),
            pushgateway: pushgateway.or(pipeline.metrics.pushgateway.as_deref()),
        }
    }

    fn is_empty(&self) -> bool {
        self.file.is_none() && self.pushgateway.is_none()
    }
}

/// The last success recorded in an earlier metrics file of `pipeline`, so a
/// failed run does not lose it (the file is the only memory a textfile
/// collector has). A missing or unreadable file: none.
pub(super) fn previous_success(path: &Path, pipeline: &str) -> Option<f64> {
    last_success_in(&std::fs::read_to_string(path).ok()?, pipeline, &[])
}

/// The value of [`LAST_SUCCESS`] of `pipeline` in a text exposition, in a
/// series that also has every label of `also`.
fn last_success_in(text: &str, pipeline: &str, also: &[&str]) -> Option<f64> {
    let label = format!("pipeline=\"{}\"", escape(pipeline));
    text.lines()
        .filter(|l| {
            l.starts_with(LAST_SUCCESS) && l.contains(&label) && also.iter().all(|a| l.contains(a))
        })
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The last success the Pushgateway holds for this pipeline (its own
/// `/metrics`), for a failed run pushed without a metrics file: the PUT
/// replaces the group whole, and would drop it otherwise. Any failure:
/// none (the push that follows says what is wrong).
async fn pushed_success(base: &str, pipeline: &str) -> Option<f64> {
    let url = format!("{}/metrics", base.trim_end_matches('/'));
    let text = client()
        .ok()?
        .get(url)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    last_success_in(&text, pipeline, &["job=\"listpipe\""])
}

fn client() -> reqwest::Result<reqwest::Client> {
    listpipe_client::init_tls();
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
}

/// A label value as the text format escapes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes the metrics of `report` to the sinks asked for. The file failing
/// to be written is an error (the run's own output, like `--report`); the
/// Pushgateway failing is a warning on stderr, never a failed run (a
/// monitoring outage must not fail the night's import).
pub async fn emit(
    sinks: &Sinks<'_>,
    report: &RunReport,
    pipeline: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if sinks.is_empty() {
        return Ok(());
    }
    let mut last = sinks.file.and_then(|f| previous_success(f, pipeline));
    if let Some(url) = sinks.pushgateway
        && last.is_none()
        && !succeeded(report)
    {
        last = pushed_success(url, pipeline).await;
    }
    let text = render(report, pipeline, last)?;
    if let Some(url) = sinks.pushgateway
        && let Err(e) = push(url, pipeline, &text).await
    {
        errln!(
            "listpipe: warning: the metrics could not be pushed to {url}: {}",
            cause::flat(e.as_ref())
        );
    }
    if let Some(path) = sinks.file {
        state_file::write(path, text.as_bytes(), state_file::Access::Shared)?;
    }
    Ok(())
}

/// The metrics file rewritten while the run goes, every [`LIVE_EVERY`]:
/// the steps finished so far and the controller's requests. It runs only
/// while [`Live::during`] awaits a step (nothing is spawned: the
/// controller belongs to the run's connection), so it has stopped when the
/// run writes its final figures, and those always win.
pub struct Live<'a> {
    file: Option<&'a Path>,
    pipeline: &'a str,
    controller: &'a Controller,
    /// The last success of the file before this run, kept while it goes.
    last_success: Option<f64>,
    tick: tokio::time::Interval,
    /// A write failed once: said once on stderr, not every few seconds.
    warned: bool,
}

impl<'a> Live<'a> {
    /// The live file of `sinks` (none without a metrics file: then
    /// [`Live::during`] only awaits the step).
    pub fn new(sinks: &Sinks<'a>, pipeline: &'a str, controller: &'a Controller) -> Self {
        Self::every(sinks, pipeline, controller, LIVE_EVERY)
    }

    fn every(
        sinks: &Sinks<'a>,
        pipeline: &'a str,
        controller: &'a Controller,
        period: Duration,
    ) -> Self {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        // A tick missed between steps is written once at the next step's
        // start, not made up for.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Live {
            file: sinks.file,
            pipeline,
            controller,
            last_success: sinks.file.and_then(|f| previous_success(f, pipeline)),
            tick,
            warned: false,
        }
    }

    /// Awaits `work` (a step), rewriting the file with `report` (the
    /// steps before it) and the controller's figures at each tick.
    pub async fn during<F: Future>(&mut self, report: &RunReport, work: F) -> F::Output {
        let Some(path) = self.file else {
            return work.await;
        };
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                _ = self.tick.tick() => self.write(path, report),
            }
        }
    }

    fn write(&mut self, path: &Path, report: &RunReport) {
        let so_far = RunReport {
            requests: Some(self.controller.report()),
            ..report.clone()
        };
        let written = render_at(&so_far, self.pipeline, self.last_success, Phase::Running)
            .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })
            .and_then(|text| {
                state_file::write(path, text.as_bytes(), state_file::Access::Shared)
                    .map_err(Into::into)
            });
        if let Err(e) = written
            && !std::mem::replace(&mut self.warned, true)
        {
            errln!(
                "listpipe: warning: the metrics file {} could not be written during the run (it is again at the end): {}",
                path.display(),
                cause::flat(e.as_ref())
            );
        }
    }
}

/// A run refused before its first step, as [`before_any_step`] reports it.
#[derive(Debug, Clone, Copy)]
pub struct Refused<'a> {
    /// The target's base URL.
    pub target: &'a str,
    /// When the run started (RFC 3339).
    pub started: &'a str,
    /// Whether it was a dry run.
    pub dry_run: bool,
    /// The exit code the run ends with.
    pub code: u8,
    /// Why its steps did not run, as they say it (`not run: ...`).
    pub why: &'a str,
}

/// A run of `pipeline` that stopped before its first step (`refused`):
/// another run holds the lock, or a journal an unfinished run left needs
/// `--resume` or `--discard-journal`. Its metrics go to `sinks` as any
/// failed run's: the exit code, when it finished, the last success of the
/// file kept; its steps not run. A metrics file that cannot be written is
/// said on stderr (the run's exit code is already its refusal's).
pub async fn before_any_step(sinks: &Sinks<'_>, pipeline: &Pipeline, refused: Refused<'_>) {
    if sinks.is_empty() {
        return;
    }
    let mut report = RunReport {
        pipeline: pipeline.file.display().to_string(),
        target: refused.target.to_string(),
        dry_run: refused.dry_run,
        started: refused.started.to_string(),
        finished: chrono::Utc::now().to_rfc3339(),
        exit_code: refused.code,
        ..Default::default()
    };
    crate::run::not_run(&mut report, pipeline, refused.why, refused.dry_run);
    if let Err(e) = emit(sinks, &report, &pipeline.name).await {
        cause::report_in("the metrics file", e.as_ref());
    }
}

/// The Pushgateway URL of this pipeline's group: `URL/metrics/job/listpipe/pipeline/<name>`.
/// A name that is not plain (`/`, spaces, non-ASCII) goes base64url-encoded
/// (`pipeline@base64/...`), the Pushgateway's own way for such values.
pub(super) fn push_url(base: &str, pipeline: &str) -> String {
    use base64::Engine;
    let base = base.trim_end_matches('/');
    let plain = !pipeline.is_empty()
        && pipeline
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        format!("{base}/metrics/job/listpipe/pipeline/{pipeline}")
    } else {
        let b64 = base64::engine::general_purpose::URL_SAFE.encode(pipeline);
        // An empty value is `=` in this encoding.
        let b64 = if b64.is_empty() { "=".to_string() } else { b64 };
        format!("{base}/metrics/job/listpipe/pipeline@base64/{b64}")
    }
}

/// PUT replaces every series of the group (a run's figures, not a sum
/// with earlier pushes); ten seconds at most, so a Pushgateway that hangs
/// does not hold a scheduled run.
async fn push(
    base: &str,
    pipeline: &str,
    text: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let answer = client()?
        .put(push_url(base, pipeline))
        .header(reqwest::header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)
        .body(text.to_string())
        .send()
        .await?;
    let status = answer.status();
    if !status.is_success() {
        let body = answer.text().await.unwrap_or_default();
        return Err(format!("the Pushgateway answered {status}: {}", body.trim()).into());
    }
    Ok(())
}

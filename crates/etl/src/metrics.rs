//! The metrics of a run (issue 61): its figures in the Prometheus text
//! format (version 0.0.4), built from the run report (the JSON of
//! `--report` and these are the same numbers, from the same structs). They
//! go to a file and to a Pushgateway ([`Sinks`]), what `listpipe run
//! --metrics-file FILE` and `--pushgateway URL` (or the pipeline file's
//! `[metrics]`) ask for.
//!
//! The file follows node exporter's textfile-collector convention: one
//! `*.prom` file per pipeline, replaced whole (through
//! [`listpipe_base::state_file::write`], so the collector never reads half
//! a file) every [`LIVE_EVERY`] while the run goes ([`Live`]) and once more
//! at its end ([`emit`]). Per-step series carry the labels `pipeline` and
//! `step`, run-wide ones `pipeline` only.
//!
//! While the run goes the file holds what is known so far: the figures of
//! the steps that have finished, the requests, retries (by cause, 429s
//! among them) and rate of the run's controller, `listpipe_run_in_progress
//! 1`, and the last success of the file before. The series of the end
//! (`listpipe_run_exit_code`, `_finished_timestamp_seconds`,
//! `_duration_seconds`) are absent until then: an exit code of a run that
//! has none yet would read as a success (0) or a failure; while a run goes
//! an alert on them finds no series rather than a wrong one (promtool
//! accepts either file).
//! The step that is running has no series yet: its counts live inside the
//! load stage ([`crate::load`]) until the step ends. The Pushgateway gets
//! the final figures only (a push every few seconds would be a push per
//! scrape, for a job that ends).
//!
//! A run refused before its first step (another run holds the lock, a
//! journal left by an unfinished run needs `--resume` or
//! `--discard-journal`) writes its metrics too, as any failed run
//! ([`before_any_step`]).
//!
//! Types: a run's counts (`listpipe_rows_read`, `listpipe_receivers_created`...)
//! are gauges, "the last run's count": each run replaces the file, so they
//! go up and down between runs, and an alert compares them (rejects over rows
//! read) rather than taking a `rate()`. The two series named `_total` by the
//! issue (`listpipe_requests_total`, `listpipe_retries_total`) are counters,
//! as the name promises (promtool's lint insists on it), reset by each run.

use crate::report::{RunReport, StepReport};
use listpipe_base::exit;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

mod sinks;

pub use sinks::{Live, Refused, Sinks, before_any_step, emit};
#[cfg(test)]
use sinks::{previous_success, push_url};

/// Labels of one series, in order.
type Labels = Vec<(String, String)>;
type Gauges = Family<Labels, Gauge>;
type FloatGauges = Family<Labels, Gauge<f64, AtomicU64>>;

/// The series that carry when the pipeline last succeeded; a failed run
/// keeps the value the file had (see [`previous_success`]).
const LAST_SUCCESS: &str = "listpipe_run_last_success_timestamp_seconds";

/// How often the metrics file is rewritten while a run goes.
pub const LIVE_EVERY: Duration = Duration::from_secs(5);

/// Whether a run counts as a success for `listpipe_run_last_success_timestamp_seconds`:
/// exit 0, or exit 1 (some rows rejected or refused) with every step run
/// to its end. Rejected rows have their own alert (the reject ratio); a
/// step that stopped, a target that could not be reached, a stop, do not
/// count.
pub fn succeeded(report: &RunReport) -> bool {
    match report.exit_code {
        exit::OK => true,
        exit::PARTIAL => report.steps.iter().all(|s| {
            s.error.is_none()
                && s.skipped
                    .as_deref()
                    .is_none_or(|w| !w.starts_with("not run"))
        }),
        _ => false,
    }
}

fn seconds(rfc3339: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .ok()
        .map(|t| t.timestamp_millis() as f64 / 1000.0)
}

/// Whether the figures are a finished run's or those so far of a run
/// that goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    Finished,
}

/// The text of the metrics of `report`, a finished run of pipeline
/// `pipeline`; `last_success` is the previous success's time, kept when
/// this run failed.
pub fn render(
    report: &RunReport,
    pipeline: &str,
    last_success: Option<f64>,
) -> Result<String, std::fmt::Error> {
    render_at(report, pipeline, last_success, Phase::Finished)
}

/// [`render`], or while the run goes ([`Phase::Running`]): no exit code,
/// finish or duration, and the last success as `last_success` says.
fn render_at(
    report: &RunReport,
    pipeline: &str,
    last_success: Option<f64>,
    phase: Phase,
) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    let steps = StepSeries::register(&mut registry);
    for step in &report.steps {
        steps.set(step, step_labels(pipeline, &step.name));
    }
    request_series(&mut registry, report, pipeline);
    let last = run_series(&mut registry, report, pipeline, last_success, phase);
    finish(registry, pipeline, last)
}

/// A family of integer gauges, registered in `registry`.
fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauges {
    let family = Gauges::default();
    registry.register(name, help, family.clone());
    family
}

/// A family of float gauges, registered in `registry`.
fn float(registry: &mut Registry, name: &str, help: &str) -> FloatGauges {
    let family = FloatGauges::default();
    registry.register(name, help, family.clone());
    family
}

/// The labels of a run-wide series.
fn run_labels(pipeline: &str) -> Labels {
    vec![("pipeline".to_string(), pipeline.to_string())]
}

/// The labels of a series of step `step`.
fn step_labels(pipeline: &str, step: &str) -> Labels {
    vec![
        ("pipeline".to_string(), pipeline.to_string()),
        ("step".to_string(), step.to_string()),
    ]
}

/// The per-step series.
struct StepSeries {
    rows_read: Gauges,
    rejected: Gauges,
    duplicates: Gauges,
    blocked: Gauges,
    /// `listpipe_receivers_created`, `_updated`, `_unchanged`, `_failed`.
    receivers: Vec<(&'static str, Gauges)>,
    exported: Gauges,
}

impl StepSeries {
    fn register(registry: &mut Registry) -> Self {
        let rows_read = gauge(
            registry,
            "listpipe_rows_read",
            "Rows read from the step's source in the last run",
        );
        let rejected = gauge(
            registry,
            "listpipe_rows_rejected",
            "Rows rejected while preparing in the last run, by reason",
        );
        let duplicates = gauge(
            registry,
            "listpipe_duplicates",
            "Duplicate rows merged in the last run",
        );
        let blocked = gauge(
            registry,
            "listpipe_blocked",
            "Receivers on a blacklist, not written, in the last run",
        );
        let receivers: Vec<(&str, Gauges)> = [
            ("created", "Receivers created in the last run"),
            ("updated", "Receivers updated in the last run"),
            (
                "unchanged",
                "Receivers already as the source has them in the last run",
            ),
            (
                "failed",
                "Receivers the target refused or that failed through every retry in the last run",
            ),
        ]
        .into_iter()
        .map(|(what, help)| {
            (
                what,
                gauge(registry, &format!("listpipe_receivers_{what}"), help),
            )
        })
        .collect();
        let exported = gauge(
            registry,
            "listpipe_rows_exported",
            "Rows written by the export step in the last run",
        );
        StepSeries {
            rows_read,
            rejected,
            duplicates,
            blocked,
            receivers,
            exported,
        }
    }

    /// The figures of `step`, whose series carry `labels`.
    fn set(&self, step: &StepReport, labels: Labels) {
        if step.kind == "export" {
            if let Some(e) = &step.export {
                self.exported.get_or_create(&labels).set(to_i64(e.rows));
            }
            return;
        }
        let p = &step.prepare;
        self.rows_read
            .get_or_create(&labels)
            .set(to_i64(p.rows_read));
        for (reason, n) in &p.rejected {
            let mut l = labels.clone();
            l.push(("reason".to_string(), reason.clone()));
            self.rejected.get_or_create(&l).set(to_i64(*n));
        }
        self.duplicates
            .get_or_create(&labels)
            .set(to_i64(p.duplicates));
        if let Some(i) = &step.import {
            self.blocked.get_or_create(&labels).set(to_i64(i.blocked));
            for (what, family) in &self.receivers {
                let n = match *what {
                    "created" => i.created,
                    "updated" => i.updated,
                    "unchanged" => i.unchanged,
                    _ => i.failed,
                };
                family.get_or_create(&labels).set(to_i64(n));
            }
        }
    }
}

/// The run's requests, retries (by cause) and rate limit.
fn request_series(registry: &mut Registry, report: &RunReport, pipeline: &str) {
    let run = || run_labels(pipeline);
    let requests = Family::<Labels, Counter>::default();
    // Registered without the suffix: the encoder adds `_total` to a counter.
    registry.register(
        "listpipe_requests",
        "Requests the run sent to the target, retries included",
        requests.clone(),
    );
    let retries = Family::<Labels, Counter>::default();
    registry.register(
        "listpipe_retries",
        "Requests the run sent again, by cause",
        retries.clone(),
    );
    let rate = float(
        registry,
        "listpipe_rate_limit_requests_per_second",
        "The client-side rate limit at the end of the run (configured or learned from 429s); absent when none was needed",
    );
    if let Some(r) = &report.requests {
        requests.get_or_create(&run()).inc_by(r.sent);
        for (cause, n) in &r.retries {
            let mut l = run();
            l.push(("cause".to_string(), (*cause).to_string()));
            retries.get_or_create(&l).inc_by(*n);
        }
        if let Some(per_second) = r.rate_limit_per_second {
            rate.get_or_create(&run()).set(per_second);
        }
    }
}

/// The run's own series: in progress, started and, once it finished, its
/// duration, exit code and finish. Returns the last success's time: this
/// run's end if it finished and succeeded, else `last_success`.
fn run_series(
    registry: &mut Registry,
    report: &RunReport,
    pipeline: &str,
    last_success: Option<f64>,
    phase: Phase,
) -> Option<f64> {
    let run = || run_labels(pipeline);
    let started = seconds(&report.started);
    let running = phase == Phase::Running;
    gauge(
        registry,
        "listpipe_run_in_progress",
        "1 while the run goes (the file rewritten every few seconds), 0 once it has finished",
    )
    .get_or_create(&run())
    .set(i64::from(running));
    if let Some(s) = started {
        float(
            registry,
            "listpipe_run_started_timestamp_seconds",
            "When the last run started (Unix time)",
        )
        .get_or_create(&run())
        .set(s);
    }
    let last = if !running && succeeded(report) {
        seconds(&report.finished)
    } else {
        last_success
    };
    if running {
        return last;
    }
    let finished = seconds(&report.finished);
    if let (Some(s), Some(f)) = (started, finished) {
        float(
            registry,
            "listpipe_run_duration_seconds",
            "How long the last run took",
        )
        .get_or_create(&run())
        .set(((f - s) * 1000.0).round().max(0.0) / 1000.0);
    }
    gauge(
        registry,
        "listpipe_run_exit_code",
        "The exit code of the last run (0 all written, 1 rows rejected or failed; see docs)",
    )
    .get_or_create(&run())
    .set(i64::from(report.exit_code));
    if let Some(f) = finished {
        float(
            registry,
            "listpipe_run_finished_timestamp_seconds",
            "When the last run finished, successful or not (Unix time)",
        )
        .get_or_create(&run())
        .set(f);
    }
    last
}

/// Adds the last success of `pipeline` (when there is one) to `registry`,
/// and encodes it.
fn finish(
    mut registry: Registry,
    pipeline: &str,
    last: Option<f64>,
) -> Result<String, std::fmt::Error> {
    if let Some(t) = last {
        let family = FloatGauges::default();
        registry.register(
            LAST_SUCCESS,
            "When a run of this pipeline last succeeded (exit 0, or 1 with every step run) (Unix time)",
            family.clone(),
        );
        family
            .get_or_create(&vec![("pipeline".to_string(), pipeline.to_string())])
            .set(t);
    }
    let mut text = String::new();
    prometheus_text::encode(&mut text, &registry)?;
    Ok(text)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_is_not_plain_goes_base64_encoded() {
        assert_eq!(
            push_url("http://pg:9091/", "nightly"),
            "http://pg:9091/metrics/job/listpipe/pipeline/nightly"
        );
        assert_eq!(
            push_url("http://pg:9091", "a/b"),
            "http://pg:9091/metrics/job/listpipe/pipeline@base64/YS9i"
        );
    }

    #[test]
    fn a_failed_run_keeps_the_last_success_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.prom");
        let ok = RunReport {
            started: "2026-01-01T00:00:00Z".into(),
            finished: "2026-01-01T00:01:00Z".into(),
            ..Default::default()
        };
        std::fs::write(&path, render(&ok, "n", None).unwrap()).unwrap();
        assert_eq!(previous_success(&path, "n"), Some(1_767_225_660.0));
        let failed = RunReport {
            exit_code: exit::TARGET,
            finished: "2026-01-02T00:00:00Z".into(),
            ..Default::default()
        };
        let text = render(&failed, "n", previous_success(&path, "n")).unwrap();
        assert!(
            text.contains("listpipe_run_last_success_timestamp_seconds{pipeline=\"n\"} 1767225660"),
            "{text}"
        );
        assert!(
            text.contains("listpipe_run_exit_code{pipeline=\"n\"} 3"),
            "{text}"
        );
    }
}

//! The run report: what each step read, rejected, wrote and how long each
//! stage took. Printed as one summary line per stage, and written as JSON
//! with `--report FILE` for schedulers and dashboards.

use crate::export::ExportOutcome;
use crate::load::blacklist::BlacklistOutcome;
use crate::load::import::ImportOutcome;
use crate::prepare::PrepareStats;
use crate::source::Workbook;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize, Default)]
pub struct RunReport {
    pub pipeline: String,
    pub target: String,
    pub dry_run: bool,
    /// RFC 3339.
    pub started: String,
    pub finished: String,
    pub steps: Vec<StepReport>,
    /// What the run's requests did: concurrency over time, retries by
    /// cause, latency percentiles, rate-limit pauses (`load::controller`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<crate::transport::requests::RequestsReport>,
    /// 0 everything written, 1 some rows rejected or failed.
    pub exit_code: u8,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct StepReport {
    pub name: String,
    pub kind: &'static str,
    pub prepare: PrepareStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blacklist: Option<BlacklistOutcome>,
    /// Rows written, the file(s), milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export: Option<ExportOutcome>,
    /// An export step of a dry run: not written.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub export_skipped: bool,
    /// Why the step read and wrote nothing: `source unchanged since <when>` (every URL of
    /// its source answered 304 Not Modified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Written only when rows were rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejects_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_rejects_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_file: Option<PathBuf>,
    /// Milliseconds per stage: prepare, plan (reading the target), write.
    pub timings_ms: Timings,
    /// Why the step stopped before its end (its cause, in one line); what
    /// it wrote before is in `import`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A dry run's step: its counts are what would happen, and its summary
    /// says so (the report's top-level `dry_run` carries it in the JSON).
    #[serde(skip)]
    pub dry_run: bool,
    /// The step's prepared columns profiled for the HTML report (`--html`
    /// only); not in the JSON, whose figures it does not change.
    #[serde(skip)]
    pub profile: Option<crate::profile::StepProfile>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Timings {
    pub prepare: u64,
    pub load: u64,
}

/// One line per reject reason: its count and its first row, as `check` and the run's
/// summary show them (`invalid birthday: 2, e.g. row 5, birthday "0.0.00": ...`).
pub fn reason_lines(stats: &PrepareStats) -> Vec<String> {
    stats
        .rejected
        .iter()
        .map(|(reason, n)| match stats.reject_examples.get(reason) {
            Some(e) => format!("{reason}: {n}, e.g. {}", e.describe()),
            None => format!("{reason}: {n}"),
        })
        .collect()
}

/// One line per field whose values were left out (`ambiguous = "omit"`): how many, and
/// what the first reads as (`registered: 6 values left out until the format is decided
/// (ambiguous = "omit"; "5/6/2012 15:53" is 2012-06-05 or 2012-05-06: put the right
/// format first and set ambiguous = "first")`).
pub fn left_out_lines(stats: &PrepareStats) -> Vec<String> {
    stats
        .values_left_out
        .iter()
        .map(|(field, n)| {
            let example = stats
                .left_out_examples
                .get(field)
                .map(|e| format!("; {e}"))
                .unwrap_or_default();
            format!(
                "{field}: {n} value{} left out until the format is decided (ambiguous = \"omit\"{example}: put the right format first and set ambiguous = \"first\")",
                if *n == 1 { "" } else { "s" }
            )
        })
        .collect()
}

/// What reading the source noticed besides rejects: padded short rows, and the warnings
/// about text-like columns holding numbers in scientific notation.
pub fn source_notes(stats: &PrepareStats) -> Vec<String> {
    let mut lines = Vec::new();
    if stats.padded > 0 {
        lines.push(format!(
            "{} short row{} padded with empty fields (pad_short_rows)",
            stats.padded,
            if stats.padded == 1 { "" } else { "s" }
        ));
    }
    let tags = |n: u64| format!("{n} tag{}", if n == 1 { "" } else { "s" });
    if stats.tags_trimmed > 0 {
        lines.push(format!("{} trimmed (trim_start)", tags(stats.tags_trimmed)));
    }
    if stats.tags_mapped > 0 {
        lines.push(format!(
            "{} mapped, {} of them to \"\" and dropped (map)",
            tags(stats.tags_mapped),
            stats.tags_dropped
        ));
    } else if stats.tags_dropped > 0 {
        lines.push(format!(
            "{} trimmed to nothing and dropped",
            tags(stats.tags_dropped)
        ));
    }
    if !stats.unread_sheets.is_empty() {
        lines.push(format!(
            "warning: sheet{} not read: {}; to read them too, set sheet = \"*\" (or list them in `sheets`)",
            if stats.unread_sheets.len() == 1 { "" } else { "s" },
            stats.unread_sheets.join(", ")
        ));
    }
    lines.extend(
        stats
            .repeated_headers
            .iter()
            .map(|r| format!("header: {r}")),
    );
    if stats.addresses_trimmed > 0 {
        lines.push(format!(
            "{} address{} trimmed of spaces or tabs at the ends",
            stats.addresses_trimmed,
            if stats.addresses_trimmed == 1 {
                ""
            } else {
                "es"
            }
        ));
    }
    lines.extend(
        stats
            .mangled_numbers
            .iter()
            .map(|m| format!("warning: {}", m.describe())),
    );
    lines.extend(
        stats
            .domain_typos
            .iter()
            .map(|t| format!("warning: {}", t.describe())),
    );
    lines
}

/// `; 1 line merged into another of the same order and product (duplicate_lines = "sum")`
/// after the orders' counts, when lines were merged; empty otherwise.
pub fn orders_merged(stats: &PrepareStats) -> String {
    match stats.order_lines_merged {
        0 => String::new(),
        n => format!(
            "; {n} line{} merged into another of the same order and product (duplicate_lines = \"{}\")",
            if n == 1 { "" } else { "s" },
            stats.duplicate_lines.unwrap_or("sum")
        ),
    }
}

/// One line per workbook: its sheets and the ones read.
pub fn workbook_lines(workbooks: &[Workbook]) -> Vec<String> {
    workbooks
        .iter()
        .map(|w| {
            format!(
                "workbook {}: sheets {}; read {}",
                w.file.display(),
                w.sheets.join(", "),
                w.read.join(", ")
            )
        })
        .collect()
}

impl StepReport {
    fn export_summary(&self) -> Vec<String> {
        let Some(e) = &self.export else {
            return vec![format!("{}: export: skipped in a dry run", self.name)];
        };
        let mut lines = vec![format!(
            "{}: export: {} rows written to {} ({}, {} pages, {} retries, {} ms)",
            self.name,
            e.rows,
            crate::export::shown(&e.file),
            e.format,
            e.pages,
            e.retries,
            e.ms
        )];
        if let (Some(n), Some(path)) = (e.orders, &e.orders_file) {
            lines.push(format!(
                "{}: export: {n} orders written to {}",
                self.name,
                path.display()
            ));
        }
        lines
    }

    /// An import's load lines. A dry run speaks in the conditional: nothing
    /// was created, so nothing says "created".
    fn import_summary(&self, i: &ImportOutcome) -> Vec<String> {
        let mut lines = Vec::new();
        let name = &self.name;
        if i.group_created {
            lines.push(format!("{name}: load: group created"));
        }
        if i.would_create_group {
            lines.push(format!("{name}: load: would create the group"));
        }
        let attributes = |verb: &str, names: &[String]| {
            if names.is_empty() {
                String::new()
            } else {
                format!(", {verb}: {}", names.join(", "))
            }
        };
        let (counts, attrs) = if self.dry_run {
            (
                format!("would create {}, would update {}", i.created, i.updated),
                attributes("would create attributes", &i.would_create_attributes),
            )
        } else {
            (
                format!("{} created, {} updated", i.created, i.updated),
                attributes("attributes created", &i.attributes_created),
            )
        };
        // How often the writes themselves met the target's limit.
        let refused = match i.write_requests_refused {
            0 => String::new(),
            n => format!(" ({n} of {} write requests answered 429)", i.write_requests),
        };
        lines.push(format!(
            "{name}: load: {counts}, {} unchanged, {} blocked, {} failed, {} retries{refused}{attrs} ({} ms)",
            i.unchanged, i.blocked, i.failed, i.retries, self.timings_ms.load
        ));
        lines.extend(self.policy_lines(i));
        lines
    }

    /// What the write policies kept and the limit left (issue 62).
    fn policy_lines(&self, i: &ImportOutcome) -> Vec<String> {
        let name = &self.name;
        let mut lines = Vec::new();
        if !i.kept_by_policy.is_empty() {
            let kept: Vec<String> = i
                .kept_by_policy
                .iter()
                .map(|(field, n)| format!("{field} {n}"))
                .collect();
            let verb = if self.dry_run { "would keep" } else { "kept" };
            lines.push(format!(
                "{name}: load: {verb} by policy (values left as the target holds them): {}",
                kept.join(", ")
            ));
        }
        if let Some(l) = &i.limited {
            let left = l.of.saturating_sub(l.limit);
            lines.push(format!(
                "{name}: load: limited to {} of {} receivers (limit); {left} left for a later run",
                l.limit.min(l.of),
                l.of
            ));
        }
        lines
    }

    /// Rows that did not make it: rejected while preparing or refused by the target.
    pub fn problems(&self) -> u64 {
        self.prepare.rejected_total()
            + self.prepare.orders_rejected
            + self.import.as_ref().map_or(0, |i| i.failed)
            + self.blacklist.as_ref().map_or(0, |b| b.failed)
    }

    /// The step's end as one log event with its counts (for `--log-format
    /// json`, where a log collector reads them as fields).
    pub fn log_finished(&self) {
        let (created, updated, unchanged, failed) = match (&self.import, &self.blacklist) {
            (Some(i), _) => (i.created, i.updated, i.unchanged, i.failed),
            (None, Some(b)) => (b.added, b.updated, b.unchanged, b.failed),
            (None, None) => (0, 0, 0, 0),
        };
        tracing::info!(target: log_target!(),
            step = %self.name,
            kind = self.kind,
            rows_read = self.prepare.rows_read,
            rejected = self.prepare.rejected_total(),
            created,
            updated,
            unchanged,
            failed,
            exported = self.export.as_ref().map_or(0, |e| e.rows),
            prepare_ms = self.timings_ms.prepare,
            load_ms = self.timings_ms.load,
            "step finished"
        );
    }

    /// The summary lines of this step, for people.
    pub fn summary(&self) -> Vec<String> {
        if self.kind == "export" {
            return self.export_summary();
        }
        if let Some(why) = &self.skipped {
            return vec![format!("{}: skipped: {why}", self.name)];
        }
        let p = &self.prepare;
        let mut lines = vec![format!(
            "{}: prepare: {} rows read{}, {} rejected{}, {} duplicates{} ({} ms)",
            self.name,
            p.rows_read,
            if p.skipped > 0 {
                format!(", {} skipped (only_if)", p.skipped)
            } else {
                String::new()
            },
            p.rejected_total(),
            if p.rejected.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    p.rejected
                        .iter()
                        .map(|(k, v)| format!("{k}: {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            p.duplicates,
            if p.tags_changed > 0 {
                format!(", {} tags normalised", p.tags_changed)
            } else {
                String::new()
            },
            self.timings_ms.prepare,
        )];

        lines.extend(
            reason_lines(p)
                .into_iter()
                .map(|l| format!("{}: rejected: {l}", self.name)),
        );
        lines.extend(
            left_out_lines(p)
                .into_iter()
                .map(|l| format!("{}: prepare: {l}", self.name)),
        );
        lines.extend(
            source_notes(p)
                .into_iter()
                .map(|l| format!("{}: source: {l}", self.name)),
        );
        if p.orders_read > 0 {
            lines.push(format!(
                "{}: orders: {} read, {} accepted, {} rejected{}",
                self.name,
                p.orders_read,
                p.orders_accepted,
                p.orders_rejected,
                orders_merged(p)
            ));
        }
        if let Some(i) = &self.import {
            lines.extend(self.import_summary(i));
        }
        if let Some(b) = &self.blacklist {
            let counts = if self.dry_run {
                format!("would add {}, would update {}", b.added, b.updated)
            } else {
                format!("{} added, {} updated", b.added, b.updated)
            };
            lines.push(format!(
                "{}: load: {counts}, {} unchanged, {} failed, {} requests (largest batch {}), {} retries ({} ms)",
                self.name, b.unchanged, b.failed, b.requests, b.largest_batch, b.retries, self.timings_ms.load
            ));
        }
        if let Some(path) = &self.rejects_file {
            lines.push(format!(
                "{}: rejects written to {}",
                self.name,
                path.display()
            ));
        }
        if let Some(path) = &self.order_rejects_file {
            lines.push(format!(
                "{}: order rejects written to {}",
                self.name,
                path.display()
            ));
        }
        if let Some(path) = &self.plan_file {
            lines.push(format!("{}: plan written to {}", self.name, path.display()));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_line_says_how_many_writes_the_target_refused() {
        let mut step = StepReport {
            name: "news".into(),
            kind: "import",
            import: Some(ImportOutcome {
                created: 20,
                retries: 5,
                write_requests: 22,
                ..Default::default()
            }),
            ..Default::default()
        };
        let load = |s: &StepReport| s.summary().into_iter().find(|l| l.contains(": load: "));
        let line = load(&step).unwrap();
        assert!(!line.contains("answered 429"), "{line}");
        step.import.as_mut().unwrap().write_requests_refused = 3;
        let line = load(&step).unwrap();
        assert!(
            line.contains("5 retries (3 of 22 write requests answered 429) ("),
            "{line}"
        );
    }
}

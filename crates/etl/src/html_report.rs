//! The HTML report of `check` and `run` (`--html FILE`, issue 60): one
//! self-contained page drawn from the same [`RunReport`] as the JSON report,
//! plus a bounded [`profile`] of each step's mapped columns.
//!
//! Decisions:
//! - One file, nothing fetched: the styles are inline, the charts are inline
//!   SVG drawn here, no script at all (a page without JavaScript cannot run
//!   a hostile value, and prints as it shows), the system font stack.
//! - Every value from the input (file names, reasons, column values, the
//!   target's answers) goes through [`esc`]; the page's own text is static.
//! - Its size is bounded whatever the input: the report's sections are
//!   bounded already (reasons are categories, examples one per reason, cut),
//!   and the profile keeps a few values per column ([`profile`]).
//! - Pure: data in, `String` out; the caller writes it (atomically).

mod charts;
pub mod pace;
mod requests;
mod sections;

pub use sections::consent_sources;

use crate::profile::StepProfile;
use crate::report::{self, RunReport, StepReport};
use charts::{Bar, bar, bar_chart};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Which command made the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `check`: offline, the rows prepared but nothing compared with the target.
    Check,
    /// `run` (or `run --dry-run`, which the report's `dry_run` says).
    Run,
}

/// A source file of a step, as the header lists it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    /// None: not a local file (a URL, an object, a glob or a query).
    pub bytes: Option<u64>,
}

/// What the page shows of a step besides its [`StepReport`].
#[derive(Debug, Clone, Default)]
pub struct StepExtra {
    pub sources: Vec<SourceFile>,
    /// `check`: the receivers (or blacklist entries) it would send.
    pub to_send: Option<u64>,
    pub profile: Option<StepProfile>,
    /// Where each state field comes from ([`consent_sources`]).
    pub consent: Vec<(String, String)>,
}

/// The page's input: the report, and per step name its [`StepExtra`].
pub struct Page<'a> {
    pub command: Command,
    pub report: &'a RunReport,
    pub extra: &'a BTreeMap<String, StepExtra>,
}

/// The source files of `paths` (as written in the pipeline file, relative to
/// `base_dir`), with their sizes when they are local files. A glob or a URL
/// is listed as written, without a size.
pub fn source_files(base_dir: &Path, paths: &[String]) -> Vec<SourceFile> {
    paths
        .iter()
        .map(|p| SourceFile {
            name: p.clone(),
            bytes: std::fs::metadata(base_dir.join(p))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
        })
        .collect()
}

/// The files a source read (its globs resolved), with their sizes.
pub fn files(paths: &[std::path::PathBuf]) -> Vec<SourceFile> {
    paths
        .iter()
        .map(|p| SourceFile {
            name: p.display().to_string(),
            bytes: std::fs::metadata(p).ok().map(|m| m.len()),
        })
        .collect()
}

/// Escapes text for HTML content and quoted attribute values.
pub fn esc(text: &str) -> String {
    listpipe_base::html::escape(text)
}

const STYLE: &str = r#"
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--info:#0969da;--dup:#8250df}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fff}
main{max-width:960px;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:1rem 0 .3rem}h4{font-size:.95rem;font-weight:500;margin:.8rem 0 .2rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0}dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}td{overflow-wrap:anywhere}th{white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.wrap{overflow-x:auto}
.verdict{display:inline-block;padding:.1rem .5rem;border-radius:.3rem;color:#fff;font-weight:600}
.v-ok{background:var(--ok)}.v-partial{background:var(--warn)}.v-bad{background:var(--bad)}
svg{width:100%;height:auto;max-width:640px;display:block}svg text{font:13px system-ui,sans-serif;fill:var(--fg)}
.b-read{fill:var(--info)}.b-bad{fill:var(--bad)}.b-dup{fill:var(--dup)}.b-warn{fill:var(--warn)}.b-ok{fill:var(--ok)}.b-muted{fill:#8c959f}
.muted{color:var(--muted)}ul{padding-left:1.2rem}code{overflow-wrap:anywhere}
@media print{main{max-width:none}h2{break-after:avoid}section{break-inside:avoid}}
"#;

/// Renders the page of `report` and writes it to `path` atomically, like
/// the JSON report (`--html FILE` of `check` and `run`, issue 60); an
/// error names the file.
pub fn write(
    path: &Path,
    command: Command,
    report: &RunReport,
    extra: &BTreeMap<String, StepExtra>,
) -> Result<(), listpipe_base::state_file::WriteError> {
    let page = render(&Page {
        command,
        report,
        extra,
    });
    let access = listpipe_base::state_file::Access::Shared;
    listpipe_base::state_file::write(path, page.as_bytes(), access)
}

/// The steps' sources as the pipeline file names them, with their sizes
/// (what `run`'s page shows: its steps' files are read inside the step).
pub fn sources(pipeline: &crate::pipeline::Pipeline) -> BTreeMap<String, StepExtra> {
    use crate::pipeline::Step;
    pipeline
        .steps
        .iter()
        .filter_map(|step| {
            let (source, consent) = match step {
                Step::Import(s) => (&s.source, consent_sources(s)),
                Step::Blacklist(s) => (&s.source, Vec::new()),
                Step::Export(_) => return None,
            };
            let extra = StepExtra {
                sources: source_files(&pipeline.base_dir, &source.paths),
                consent,
                ..Default::default()
            };
            Some((step.name().to_string(), extra))
        })
        .collect()
}

/// The page.
pub fn render(page: &Page) -> String {
    let r = page.report;
    let mut out = String::with_capacity(32 * 1024);
    let title = match (page.command, r.dry_run) {
        (Command::Check, _) => "listpipe check",
        (Command::Run, true) => "listpipe run --dry-run",
        (Command::Run, false) => "listpipe run",
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}: {}</title><style>{STYLE}</style></head><body><main>",
        esc(&r.pipeline)
    );
    header(&mut out, page, title);
    for step in &r.steps {
        step_section(&mut out, page, step);
    }
    if let Some(req) = &r.requests {
        requests::section(&mut out, req);
    }
    out.push_str("</main></body></html>\n");
    out
}

fn verdict(code: u8) -> (&'static str, &'static str) {
    match code {
        0 => ("v-ok", "ok"),
        1 => ("v-partial", "some rows rejected or failed"),
        2 => ("v-bad", "the pipeline file or a source is wrong"),
        3 => ("v-bad", "the target could not be reached or refused"),
        4 => ("v-bad", "another run holds the lock"),
        5 => ("v-bad", "a guard stopped the run"),
        74 => ("v-bad", "a file could not be written"),
        130 => ("v-bad", "stopped"),
        _ => ("v-bad", "failed"),
    }
}

fn header(out: &mut String, page: &Page, title: &str) {
    let r = page.report;
    let (class, words) = verdict(r.exit_code);
    let _ = write!(
        out,
        "<header><h1>{title}</h1><dl><dt>pipeline</dt><dd><code>{}</code></dd>",
        esc(&r.pipeline)
    );
    let target = if page.command == Command::Check {
        format!("{} (not contacted by check)", r.target)
    } else {
        r.target.clone()
    };
    if !r.target.is_empty() {
        let _ = write!(out, "<dt>target</dt><dd>{}</dd>", esc(&target));
    }
    let _ = write!(out, "<dt>started</dt><dd>{}</dd>", esc(&r.started));
    if !r.finished.is_empty() {
        let _ = write!(out, "<dt>finished</dt><dd>{}</dd>", esc(&r.finished));
    }
    let _ = write!(
        out,
        "<dt>verdict</dt><dd><span class=\"verdict {class}\">exit {}: {words}</span></dd></dl>",
        r.exit_code
    );
    let sources: Vec<(&str, &SourceFile)> = r
        .steps
        .iter()
        .filter_map(|s| page.extra.get(&s.name).map(|e| (s.name.as_str(), e)))
        .flat_map(|(name, e)| e.sources.iter().map(move |f| (name, f)))
        .collect();
    if !sources.is_empty() {
        out.push_str(
            "<h3>sources</h3><div class=\"wrap\"><table><tr><th>step</th><th>file</th><th class=\"n\">size</th></tr>",
        );
        for (step, f) in sources {
            let size = f.bytes.map(human_bytes).unwrap_or_else(|| "—".into());
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td></tr>",
                esc(step),
                esc(&f.name),
                esc(&size)
            );
        }
        out.push_str("</table></div>");
    }
    out.push_str("</header>");
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KB", n as f64 / 1024.0),
        n if n < 1024 * 1024 * 1024 => format!("{:.1} MB", n as f64 / 1048576.0),
        n => format!("{:.2} GB", n as f64 / 1073741824.0),
    }
}

fn step_section(out: &mut String, page: &Page, step: &StepReport) {
    let extra = page.extra.get(&step.name);
    let _ = write!(
        out,
        "<section><h2>{} <span class=\"muted\">({})</span></h2>",
        esc(&step.name),
        esc(step.kind)
    );
    if let Some(e) = &step.error {
        let _ = write!(
            out,
            "<p><strong class=\"bad\">stopped:</strong> {}</p>",
            esc(e)
        );
    }
    if let Some(why) = &step.skipped {
        let _ = write!(
            out,
            "<p class=\"muted\">skipped: {}</p></section>",
            esc(why)
        );
        return;
    }
    if step.kind == "export" {
        match &step.export {
            Some(e) => {
                let _ = write!(
                    out,
                    "<p>{} rows written to <code>{}</code> ({}, {} pages, {} retries, {} ms)</p>",
                    e.rows,
                    esc(&crate::export::shown(&e.file)),
                    esc(e.format),
                    e.pages,
                    e.retries,
                    e.ms
                );
            }
            None => {
                out.push_str("<p class=\"muted\">not written (a dry run, or checked when run)</p>")
            }
        }
        out.push_str("</section>");
        return;
    }
    funnel(out, page, step, extra);
    rejects(out, step);
    notes(out, step);
    if let Some(p) = step
        .profile
        .as_ref()
        .or(extra.and_then(|e| e.profile.as_ref()))
    {
        sections::consent(out, p, extra);
        sections::addresses(out, step, p);
        sections::tags(out, p);
        sections::orders(out, p);
        sections::profile_table(out, p);
        sections::column_charts(out, p);
    }
    out.push_str("</section>");
}

/// Rows read, then where they went, as bars: rejected (all reasons),
/// duplicates, `only_if`, blocked, and what the target got or would get.
fn funnel(out: &mut String, page: &Page, step: &StepReport, extra: Option<&StepExtra>) {
    let p = &step.prepare;
    let mut bars = vec![
        bar("rows read", p.rows_read, "b-read"),
        bar("rejected", p.rejected_total(), "b-bad"),
        bar("duplicates", p.duplicates, "b-dup"),
    ];
    if p.skipped > 0 {
        bars.push(bar("skipped (only_if)", p.skipped, "b-muted"));
    }
    let would = page.report.dry_run;
    let verb = |done: &str, planned: &str| {
        if would {
            planned.to_string()
        } else {
            done.to_string()
        }
    };
    if let Some(i) = &step.import {
        bars.push(bar("blocked (blacklist)", i.blocked, "b-warn"));
        bars.push(bar(verb("created", "to create"), i.created, "b-ok"));
        bars.push(bar(verb("updated", "to update"), i.updated, "b-ok"));
        bars.push(bar("unchanged", i.unchanged, "b-muted"));
        if !would || i.failed > 0 {
            bars.push(bar("failed", i.failed, "b-bad"));
        }
        if i.removed > 0 {
            bars.push(bar(
                verb("removed (mirror)", "to remove (mirror)"),
                i.removed,
                "b-warn",
            ));
        }
    } else if let Some(b) = &step.blacklist {
        bars.push(bar(verb("added", "to add"), b.added, "b-ok"));
        bars.push(bar(verb("updated", "to update"), b.updated, "b-ok"));
        bars.push(bar("unchanged", b.unchanged, "b-muted"));
        if !would || b.failed > 0 {
            bars.push(bar("failed", b.failed, "b-bad"));
        }
    } else if let Some(n) = extra.and_then(|e| e.to_send) {
        bars.push(bar("ready to send", n, "b-ok"));
    }
    out.push_str("<h3>rows</h3>");
    bar_chart(out, "rows of the step", &bars);
    if page.command == Command::Check && step.import.is_none() && step.blacklist.is_none() {
        out.push_str(
            "<p class=\"muted\">check does not read the target: <code>run --dry-run</code> splits the rows to send into created, updated, unchanged and blocked.</p>",
        );
    }
    let _ = write!(
        out,
        "<p class=\"muted\">prepare {} ms, load {} ms</p>",
        step.timings_ms.prepare, step.timings_ms.load
    );
}

/// Reject reasons, most first, as bars, then each with its first row and the
/// line `check` prints for it (which names the option that would change it).
fn rejects(out: &mut String, step: &StepReport) {
    let p = &step.prepare;
    if p.rejected.is_empty() {
        return;
    }
    let mut reasons: Vec<(&String, &u64)> = p.rejected.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let bars: Vec<Bar> = reasons
        .iter()
        .map(|(r, n)| bar(r.as_str(), **n, "b-bad"))
        .collect();
    out.push_str("<h3>reject reasons</h3>");
    bar_chart(out, "rejected rows by reason", &bars);
    out.push_str("<div class=\"wrap\"><table><tr><th>reason</th><th class=\"n\">rows</th><th>first row</th><th>what check says</th></tr>");
    for (reason, n) in reasons {
        let example = p.reject_examples.get(reason.as_str());
        let row = example.map(|e| e.row.to_string()).unwrap_or_default();
        let said = match example {
            Some(e) => format!("{reason}: {n}, e.g. {}", e.describe()),
            None => format!("{reason}: {n}"),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(reason),
            esc(&row),
            esc(&said)
        );
    }
    out.push_str("</table></div>");
    if let Some(f) = &step.rejects_file {
        let _ = write!(
            out,
            "<p>rejects written to <code>{}</code></p>",
            esc(&f.display().to_string())
        );
    }
}

/// The other lines of the summary: values left out, source notes, orders.
fn notes(out: &mut String, step: &StepReport) {
    let p = &step.prepare;
    let mut lines = report::left_out_lines(p);
    lines.extend(report::source_notes(p));
    if p.orders_read > 0 {
        lines.push(format!(
            "orders: {} read, {} accepted, {} rejected{}",
            p.orders_read,
            p.orders_accepted,
            p.orders_rejected,
            report::orders_merged(p)
        ));
    }
    if let Some(i) = &step.import {
        if !i.attributes_created.is_empty() {
            lines.push(format!(
                "attributes created: {}",
                i.attributes_created.join(", ")
            ));
        }
        if !i.would_create_attributes.is_empty() {
            lines.push(format!(
                "attributes a run would create: {}",
                i.would_create_attributes.join(", ")
            ));
        }
        if i.retries > 0 {
            lines.push(format!("{} retries", i.retries));
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push_str("<h3>notes</h3><ul>");
    for l in lines {
        let _ = write!(out, "<li>{}</li>", esc(&l));
    }
    out.push_str("</ul>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::PrepareStats;

    #[test]
    fn hostile_values_are_escaped_and_nothing_is_fetched() {
        let mut prepare = PrepareStats {
            rows_read: 3,
            duplicates: 1,
            ..Default::default()
        };
        prepare
            .rejected
            .insert("<script>alert(1)</script>".to_string(), 1);
        let report = RunReport {
            pipeline: "p\"<b>.toml".to_string(),
            steps: vec![StepReport {
                name: "<img src=x onerror=alert(1)>".to_string(),
                kind: "import",
                prepare,
                ..Default::default()
            }],
            exit_code: 1,
            ..Default::default()
        };
        let extra = BTreeMap::new();
        let html = render(&Page {
            command: Command::Check,
            report: &report,
            extra: &extra,
        });
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("<svg"));
        assert!(html.contains("name=\"viewport\""));
    }
}

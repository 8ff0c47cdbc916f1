//! `--html FILE` of `check` and `run` (issue 60): the page is
//! [`crate::html_report::render`]ed from the report the command built, and
//! written atomically like the JSON report.

use crate::html_report::{self, Command, Page, StepExtra};
use crate::pipeline::{Pipeline, Step};
use crate::report::RunReport;
use crate::state_file;
use std::collections::BTreeMap;
use std::path::Path;

/// Renders and writes the page; an error names the file.
pub fn write(
    path: &Path,
    command: Command,
    report: &RunReport,
    extra: &BTreeMap<String, StepExtra>,
) -> Result<(), state_file::WriteError> {
    let page = html_report::render(&Page {
        command,
        report,
        extra,
    });
    state_file::write(path, page.as_bytes(), state_file::Access::Shared)
}

/// The steps' sources as the pipeline file names them, with their sizes
/// (what `run` shows: its steps' files are read inside the step).
pub fn sources(pipeline: &Pipeline) -> BTreeMap<String, StepExtra> {
    pipeline
        .steps
        .iter()
        .filter_map(|step| {
            let (source, consent) = match step {
                Step::Import(s) => (&s.source, html_report::consent_sources(s)),
                Step::Blacklist(s) => (&s.source, Vec::new()),
                Step::Export(_) => return None,
            };
            let extra = StepExtra {
                sources: html_report::source_files(&pipeline.base_dir, &source.paths),
                consent,
                ..Default::default()
            };
            Some((step.name().to_string(), extra))
        })
        .collect()
}

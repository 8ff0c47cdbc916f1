//! `listpipe check PIPELINE.toml`: the command line of
//! [`crate::run::check()`], which does everything `run` does before it
//! touches the network: parse the file, read every source, map, validate
//! and dedupe, keep the first rows as they will be sent, count, and write
//! the rejects files. This file prints what it found. No network.

use super::exit;
use crate::html_report::{self, Command};
use crate::pipeline::{self, Step};
use crate::run::check::{Line, said, valid};
use crate::run::{CheckEvents, CheckOptions, StepCheck};
use clap::Args;
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
    crate::outln!("{}", valid(&pipeline));
    let opts = CheckOptions {
        preview: args.preview,
        budget: settings.budget,
        profile: html.is_some(),
    };
    let outcome = crate::run::check(&pipeline, &opts, &mut Printer);
    if let Some(line) = outcome.verdict.line() {
        crate::outln!("\n{line}");
    }
    let mut code = outcome.status.code();
    if let Some(path) = &html
        && let Err(e) = html_report::write(path, Command::Check, &outcome.report, &outcome.extra)
    {
        crate::cause::report_in("the HTML report", &e);
        code = exit::IO;
    }
    Ok(code)
}

/// Prints what `check` says of each step as it is checked.
struct Printer;

impl CheckEvents for Printer {
    fn checked(&mut self, step: &Step, check: &StepCheck) {
        for line in said(step, check) {
            match line {
                Line::Out(l) => crate::outln!("{l}"),
                Line::Err(l) => crate::errln!("{l}"),
            }
        }
    }
}

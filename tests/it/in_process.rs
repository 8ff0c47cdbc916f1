//! `listpipe run` in this process, through the library (`listpipe::run`)
//! as the binary calls it: the pipeline's state in the test's own folder
//! (`pipeline::load_in`), the run lock and the journals decided by
//! `run::guard`, the steps by `run::run`. For the tests that read the
//! report and the server's state; what only a process shows (exit codes
//! of a bad command line, signals, the exact output streams) stays with
//! the binary (`import::run`).

use crate::support::TestServer;
use listpipe::cause;
use listpipe::html_report::{self, Command};
use listpipe::load::WriteMode;
use listpipe::load::journal::Again;
use listpipe::pipeline::{self, Step};
use listpipe::report::StepReport;
use listpipe::run::check::{Line, said, valid};
use listpipe::run::journals::Leftover;
use listpipe::run::step::StepError;
use listpipe::run::{
    self, CheckEvents, CheckOptions, RunEvents, RunOptions, RunOutcome, StepCheck,
};
use listpipe::transport::target::{self, NoBuiltin, TargetOverrides};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// The command-line flags a test gives, as `listpipe run` reads them.
#[derive(Default)]
struct Flags {
    dry_run: bool,
    resume: bool,
    single: bool,
    concurrency: Option<usize>,
    limit: Option<u64>,
    full: bool,
    allow_mass_removal: bool,
}

impl Flags {
    fn parse(extra: &[&str]) -> Flags {
        let mut flags = Flags::default();
        let mut args = extra.iter();
        while let Some(arg) = args.next() {
            let mut value = || *args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
            match *arg {
                "--quiet" | "-q" => {}
                "--dry-run" => flags.dry_run = true,
                "--resume" => flags.resume = true,
                "--full" => flags.full = true,
                "--allow-mass-removal" => flags.allow_mass_removal = true,
                "--writes" => flags.single = value() == "single",
                "--concurrency" => flags.concurrency = Some(value().parse().unwrap()),
                "--limit" => flags.limit = Some(value().parse().unwrap()),
                other => panic!("{other}: not a flag of the in-process run; use import::run"),
            }
        }
        flags
    }
}

/// Runs `pipeline` against the test server in this process, with `extra`
/// flags of `listpipe run` (`--dry-run`, `--resume`, `--writes`,
/// `--concurrency`, `--limit`, `--full`, `--allow-mass-removal`,
/// `--quiet`). Answers the exit code, the report as JSON and what the run
/// said: each step's summary, the errors and the notes on journals (the
/// lines of standard error without the log: a test that asserts a line is
/// absent runs the binary, whose log could hold it).
pub(crate) async fn run_here(
    t: &TestServer,
    pipeline: &Path,
    extra: &[&str],
) -> (i32, Value, String) {
    let flags = Flags::parse(extra);
    let state = t.dir.path().join(".listpipe");
    let mut said = Said::default();
    let mut pipeline = match pipeline::load_in(pipeline, &state) {
        Ok(p) => p,
        Err(e) => return (2, Value::Null, e.to_string()),
    };
    if let Some(n) = flags.limit
        && let Err(why) = run::pipeline::limit_steps(&mut pipeline, n)
    {
        return (2, Value::Null, why);
    }
    let url = t.base_url();
    let overrides = TargetOverrides {
        url: Some(url.clone()),
        token: Some(t.client.token()),
        concurrency: flags.concurrency,
        state_dir: Some(state),
    };
    let conn = match target::connect(&pipeline.target, &overrides, &NoBuiltin).await {
        Ok(conn) => conn,
        Err(e) => return (3, Value::Null, cause::flat(&e)),
    };
    let leftover = Leftover::asked(flags.resume, false);
    let again = Again {
        pipeline_file: &pipeline.file,
        target_url: Some(&url),
    };
    let cleared =
        match run::guard::clear(&pipeline, &conn.resolved, &again, leftover, flags.dry_run) {
            Ok(cleared) => cleared,
            Err(not) => {
                conn.close().await;
                return (i32::from(not.status.code()), Value::Null, not.message);
            }
        };
    said.lines.extend(cleared.notes.iter().cloned());
    let mut opts = RunOptions::new(&pipeline, &conn)
        .dry_run(flags.dry_run)
        .resume(flags.resume);
    if flags.single {
        opts.write.writes = WriteMode::Single;
    }
    opts.write.allow_mass_removal = flags.allow_mass_removal;
    opts.full_exports = flags.full;
    let RunOutcome { report, status, .. } = run::run(&pipeline, &conn, &opts, &mut said).await;
    said.lines
        .extend(report.requests.as_ref().and_then(|r| r.rate_summary()));
    conn.close().await;
    drop(cleared);
    let mut report = serde_json::to_value(&report).unwrap();
    let folder = t.dir.path();
    as_from(folder, &mut report);
    (
        i32::from(status.code()),
        report,
        from(folder, &said.lines.join("\n")),
    )
}

/// `text` with the paths under `folder` written from it, as the binary
/// run in `folder` writes them (`.listpipe/rejects/p/people.rejects.csv`).
fn from(folder: &Path, text: &str) -> String {
    text.replace(&format!("{}/", folder.display()), "")
}

/// [`from`] for every string of a report.
fn as_from(folder: &Path, value: &mut Value) {
    match value {
        Value::String(s) => *s = from(folder, s),
        Value::Array(items) => items.iter_mut().for_each(|v| as_from(folder, v)),
        Value::Object(map) => map.values_mut().for_each(|v| as_from(folder, v)),
        _ => {}
    }
}

/// What a run says as it goes, kept.
#[derive(Default)]
struct Said {
    lines: Vec<String>,
}

impl RunEvents for Said {
    fn finished(&mut self, step: &StepReport) {
        self.lines.extend(step.summary());
    }

    fn failed(&mut self, step: &Step, e: &StepError) {
        // As the binary prints it (`cause::report_in`).
        self.lines.push(cause::in_place(step.name(), e));
    }
}

/// `listpipe check ARGS` as run in `dir`, in this process through the
/// library (`run::check`, what it says of each step by
/// `run::check::said`): the pipeline file, then `--preview N` and
/// `--html FILE`, relative to `dir`. Answers what the binary's `Output`
/// would hold, its paths written from `dir`, without the log lines (a test
/// that asserts a line is absent runs the binary).
pub(crate) fn check_here(dir: &Path, args: &[&str]) -> Output {
    let (file, mut preview, mut html) = (dir.join(args[0]), 3, None);
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        let value = rest.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match *arg {
            "--preview" => preview = value.parse().unwrap(),
            "--html" => html = Some(dir.join(value)),
            other => panic!("{other}: not a flag of the in-process check; use import::listpipe"),
        }
    }
    let (mut out, mut err) = (Vec::<String>::new(), Vec::<String>::new());
    let pipeline = match pipeline::load_in(&file, &dir.join(".listpipe")) {
        Ok(p) => p,
        Err(e) => return output(dir, 2, &out, &[e.to_string()]),
    };
    let html = html.or_else(|| pipeline.report.html.clone());
    out.push(valid(&pipeline));
    let opts = CheckOptions {
        preview,
        profile: html.is_some(),
        ..Default::default()
    };
    let mut said = SaidLines::default();
    let outcome = run::check(&pipeline, &opts, &mut said);
    out.extend(said.out);
    err.extend(said.err);
    out.extend(outcome.verdict.line().map(|l| format!("\n{l}")));
    let mut code = outcome.status.code();
    if let Some(path) = &html
        && let Err(e) = html_report::write(path, Command::Check, &outcome.report, &outcome.extra)
    {
        err.push(format!("listpipe: the HTML report: {}", cause::Chain(&e)));
        code = 74;
    }
    output(dir, code, &out, &err)
}

/// What `check` says, as its two streams.
#[derive(Default)]
struct SaidLines {
    out: Vec<String>,
    err: Vec<String>,
}

impl CheckEvents for SaidLines {
    fn checked(&mut self, step: &Step, check: &StepCheck) {
        for line in said(step, check) {
            match line {
                Line::Out(l) => self.out.push(l),
                Line::Err(l) => self.err.push(l),
            }
        }
    }
}

/// A process's `Output` of `code` and the lines of its two streams.
fn output(dir: &Path, code: u8, out: &[String], err: &[String]) -> Output {
    use std::os::unix::process::ExitStatusExt;
    let stream = |lines: &[String]| {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        from(dir, &text).into_bytes()
    };
    Output {
        status: std::process::ExitStatus::from_raw(i32::from(code) << 8),
        stdout: stream(out),
        stderr: stream(err),
    }
}

//! `listpipe bench`: the benchmark harness. It generates deterministic data
//! of N rows ([`data`]), starts the built-in server as its own process on a
//! fresh database over loopback HTTP, and runs each stage as the `listpipe`
//! command a user would type, measuring wall time, rows per second and the
//! peak memory of the command and of the server ([`measure`]). The table is
//! printed and written as JSON, so that runs can be compared.

pub mod data;
pub mod measure;

use anyhow::Context;
use measure::Server;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub rows: u64,
    pub blacklist_rows: u64,
    /// Where the data, the pipelines and the server's database go.
    pub dir: PathBuf,
    /// Where the results go as JSON.
    pub json: PathBuf,
    /// Leave out the XLSX stage (writing a 1,000,000-row workbook takes a while).
    pub no_xlsx: bool,
    /// Leave out the first import through the single-receiver endpoints.
    pub no_single: bool,
    /// Requests in flight for the import stages.
    /// Pinned requests in flight (`None`: the pipeline's adaptive default).
    pub concurrency: Option<usize>,
    /// Extra flags for every server the benchmark starts (`serve --faults ...`).
    pub serve_args: Vec<String>,
    /// A naive importer (`benches/naive_import.py`) to run side by side on
    /// the same data and server, into a group of its own.
    pub naive: Option<PathBuf>,
    /// The stages to run, in their usual order (empty: every stage the
    /// other options leave in). The re-imports and exports read what the
    /// batch import wrote: pick it with them.
    pub stages: Vec<Stage>,
}

/// A stage of the benchmark, to pick with `--stages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    Check,
    CheckXlsx,
    Single,
    Batch,
    Naive,
    Reimport,
    Changed,
    ExportCsv,
    ExportParquet,
    Blacklist,
}

impl BenchOptions {
    fn runs(&self, stage: Stage) -> bool {
        let left_out = match stage {
            Stage::CheckXlsx => self.no_xlsx,
            Stage::Single => self.no_single,
            Stage::Naive => self.naive.is_none(),
            _ => false,
        };
        !left_out && (self.stages.is_empty() || self.stages.contains(&stage))
    }
}

/// One stage's figures.
#[derive(Debug, Clone, Serialize)]
pub struct StageResult {
    pub stage: String,
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_sec: f64,
    /// Peak RSS of the listpipe command, MiB.
    pub peak_rss_mib: f64,
    /// Peak RSS of the server process during the stage, MiB.
    pub server_peak_rss_mib: f64,
    /// Write requests the stage sent (imports and the blacklist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_requests: Option<u64>,
    pub exit_code: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub rows: u64,
    pub blacklist_rows: u64,
    pub order_lines: u64,
    pub generate_seconds: f64,
    pub machine: String,
    pub listpipe: &'static str,
    pub profile: &'static str,
    pub stages: Vec<StageResult>,
}

const MIB: f64 = 1024.0 * 1024.0;

/// Runs every stage and answers the figures (also written to `opts.json`).
pub fn run(opts: &BenchOptions) -> anyhow::Result<BenchReport> {
    let exe = std::env::current_exe()?;
    let dir = &opts.dir;
    std::fs::create_dir_all(dir)?;
    let dir = std::fs::canonicalize(dir)?;
    crate::errln!(
        "bench: generating {} rows and {} blacklist entries in {}",
        opts.rows,
        opts.blacklist_rows,
        dir.display()
    );
    let t = std::time::Instant::now();
    let files = data::generate(
        &dir,
        opts.rows,
        opts.blacklist_rows,
        opts.runs(Stage::CheckXlsx),
    )?;
    let generate_seconds = t.elapsed().as_secs_f64();
    let import = |name: &str, source: &Path, group: &str| {
        data::write_file(
            &dir,
            &format!("{name}.toml"),
            &data::import_pipeline(name, source, group, Some(&files.orders)),
        )
    };
    let first = import("import", &files.receivers, "Bench")?;
    let single = import("import-single", &files.receivers, "Bench single")?;
    let changed = import("import-changed", &files.changed, "Bench")?;
    let xlsx = data::write_file(
        &dir,
        "check-xlsx.toml",
        &data::import_pipeline("check-xlsx", &files.xlsx, "Bench", None),
    )?;
    let blacklist = data::write_file(
        &dir,
        "blacklist.toml",
        &data::blacklist_pipeline(&files.blacklist),
    )?;

    let server = Server::start(&exe, &dir, &opts.serve_args)?;
    crate::errln!("bench: server at {}", server.url);
    let bench = Bench {
        exe: &exe,
        dir: &dir,
        server: &server,
        concurrency: opts.concurrency,
    };
    let n = opts.rows;
    let mut stages = Vec::new();
    if opts.runs(Stage::Check) {
        stages.push(bench.stage("check CSV", n, &["check", "--preview", "0"], &first)?);
    }
    if opts.runs(Stage::CheckXlsx) {
        stages.push(bench.stage("check XLSX", n, &["check", "--preview", "0"], &xlsx)?);
    }
    // Each first import starts from an empty database of its own: one run
    // before it must not have created its contacts and attribute values.
    if opts.runs(Stage::Single) {
        let fresh = Server::start(&exe, &dir.join("server-single"), &opts.serve_args)?;
        let b = Bench {
            server: &fresh,
            ..bench
        };
        stages.push(b.run_stage("first import, single requests", n, &single, "single")?);
    }
    if opts.runs(Stage::Batch) {
        stages.push(bench.run_stage("first import, batch upsert", n, &first, "auto")?);
    }
    if let Some(script) = opts.naive.as_ref().filter(|_| opts.runs(Stage::Naive)) {
        let server = Server::start(&exe, &dir.join("server-naive"), &opts.serve_args)?;
        let mut py = Command::new("python3");
        py.current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .arg(script)
            .args(["--url", &server.url, "--token", &server.token])
            .args(["--group", "Bench naive", "--workers"])
            .arg(opts.concurrency.unwrap_or(16).to_string())
            .arg("--receivers")
            .arg(&files.receivers)
            .arg("--orders")
            .arg(&files.orders);
        let b = Bench {
            server: &server,
            ..bench
        };
        stages.push(b.measure("first import, naive Python importer", n, &mut py)?);
    }
    if opts.runs(Stage::Reimport) {
        stages.push(bench.run_stage("re-import, unchanged", n, &first, "auto")?);
    }
    if opts.runs(Stage::Changed) {
        stages.push(bench.run_stage("re-import, 5% changed", n, &changed, "auto")?);
    }
    for (label, ext, stage) in [
        ("export CSV", "csv", Stage::ExportCsv),
        ("export Parquet", "parquet", Stage::ExportParquet),
    ] {
        if !opts.runs(stage) {
            continue;
        }
        let out = dir.join(format!("export.{ext}"));
        let mut args: Vec<String> = ["export", "--group", "Bench", "--quiet"]
            .map(String::from)
            .to_vec();
        args.extend(["--out".into(), out.display().to_string()]);
        stages.push(bench.export_stage(label, n, &args)?);
    }
    if opts.runs(Stage::Blacklist) {
        stages.push(bench.run_stage(
            "blacklist import",
            opts.blacklist_rows,
            &blacklist,
            "auto",
        )?);
    }
    drop(server);

    let report = BenchReport {
        rows: opts.rows,
        blacklist_rows: opts.blacklist_rows,
        order_lines: files.order_lines,
        generate_seconds,
        machine: machine(),
        listpipe: env!("CARGO_PKG_VERSION"),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        stages,
    };
    std::fs::write(&opts.json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("cannot write the results to {}", opts.json.display()))?;
    Ok(report)
}

#[derive(Clone, Copy)]
struct Bench<'a> {
    exe: &'a Path,
    dir: &'a Path,
    server: &'a Server,
    concurrency: Option<usize>,
}

impl Bench<'_> {
    fn command(&self) -> Command {
        let mut cmd = Command::new(self.exe);
        cmd.current_dir(self.dir)
            .env("LISTPIPE_URL", &self.server.url)
            .env("LISTPIPE_TOKEN", &self.server.token)
            .stdout(std::process::Stdio::null());
        cmd
    }

    /// Runs one listpipe command as a stage.
    fn measure(&self, stage: &str, rows: u64, cmd: &mut Command) -> anyhow::Result<StageResult> {
        crate::errtext!("bench: {stage} ... ");
        self.server.reset_peak();
        let m = measure::run(cmd)?;
        let seconds = m.wall.as_secs_f64();
        crate::errln!("{seconds:.2} s (exit {})", m.exit_code);
        Ok(StageResult {
            stage: stage.to_string(),
            rows,
            seconds,
            rows_per_sec: rows as f64 / seconds.max(1e-9),
            peak_rss_mib: m.peak_rss as f64 / MIB,
            server_peak_rss_mib: self.server.peak_rss() as f64 / MIB,
            write_requests: None,
            exit_code: m.exit_code,
        })
    }

    fn stage(
        &self,
        stage: &str,
        rows: u64,
        args: &[&str],
        pipeline: &Path,
    ) -> anyhow::Result<StageResult> {
        let mut cmd = self.command();
        cmd.args(args)
            .arg(pipeline)
            .stderr(std::process::Stdio::null());
        self.measure(stage, rows, &mut cmd)
    }

    fn export_stage(&self, stage: &str, rows: u64, args: &[String]) -> anyhow::Result<StageResult> {
        let mut cmd = self.command();
        cmd.args(args);
        self.measure(stage, rows, &mut cmd)
    }

    /// `listpipe run` of a pipeline; the write requests come from its report.
    fn run_stage(
        &self,
        stage: &str,
        rows: u64,
        pipeline: &Path,
        writes: &str,
    ) -> anyhow::Result<StageResult> {
        let report = self.dir.join(format!(
            "report-{}.json",
            stage.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        ));
        let mut cmd = self.command();
        cmd.args(["run", "--quiet", "--discard-journal", "--writes", writes]);
        if let Some(n) = self.concurrency {
            cmd.arg("--concurrency").arg(n.to_string());
        }
        cmd.arg("--report").arg(&report).arg(pipeline);
        let mut result = self.measure(stage, rows, &mut cmd)?;
        result.write_requests = write_requests(&report);
        Ok(result)
    }
}

/// Write requests of a run report: every import's and blacklist's.
fn write_requests(report: &Path) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(report).ok()?).ok()?;
    let steps = v["steps"].as_array()?;
    Some(
        steps
            .iter()
            .map(|s| {
                s["import"]["write_requests"].as_u64().unwrap_or(0)
                    + s["blacklist"]["requests"].as_u64().unwrap_or(0)
            })
            .sum(),
    )
}

/// The machine, for the record: CPU model and count, memory.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024 / 1024);
    format!("{cpu}, {cores} cores, {mem} GiB")
}

/// The results as a Markdown table.
pub fn table(report: &BenchReport) -> String {
    let mut s = String::from(
        "| stage | rows | seconds | rows/s | peak RSS (MiB) | server peak RSS (MiB) | write requests | exit |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &report.stages {
        s.push_str(&format!(
            "| {} | {} | {:.2} | {:.0} | {:.0} | {:.0} | {} | {} |\n",
            r.stage,
            r.rows,
            r.seconds,
            r.rows_per_sec,
            r.peak_rss_mib,
            r.server_peak_rss_mib,
            r.write_requests.map_or("".into(), |w| w.to_string()),
            r.exit_code
        ));
    }
    s
}

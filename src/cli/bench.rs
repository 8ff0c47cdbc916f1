//! `listpipe bench`: the benchmark harness (see `bench` and BENCHMARKS.md).

use crate::bench::{self, BenchOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Receiver rows to generate and import.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Blacklist entries to generate and import.
    #[arg(long, default_value_t = 100_000)]
    pub blacklist_rows: u64,
    /// Where the data, pipelines, reports and the server's database go.
    #[arg(long, default_value = ".listpipe/bench")]
    pub dir: PathBuf,
    /// Where the results are written as JSON [default: results.json in --dir].
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Leave out the XLSX check (writing the workbook takes a while).
    #[arg(long)]
    pub no_xlsx: bool,
    /// Leave out the first import through the single-receiver endpoints.
    #[arg(long)]
    pub no_single: bool,
    /// Requests in flight during the imports, pinned (without it: adaptive,
    /// and the naive importer runs 16 threads).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Extra flags for the benchmark's servers, one string split at spaces:
    /// a slow or limited target, e.g. `--faults delay=50ms@1.0` or `--rate-limit 5`.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub serve_args: Option<String>,
    /// Also run this naive importer (benches/naive_import.py, with python3)
    /// on the same data and server, for comparison.
    #[arg(long, value_name = "SCRIPT")]
    pub naive: Option<PathBuf>,
    /// Only these stages, comma-separated (re-imports and exports read what
    /// `batch` wrote): check, check-xlsx, single, batch, naive, reimport,
    /// changed, export-csv, export-parquet, blacklist.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub stages: Vec<crate::bench::Stage>,
}

/// A benchmark that cannot run is exit code 3 (its server or its target failed).
pub fn run(args: BenchArgs) -> super::Outcome {
    bench(args)
        .map(|_| super::exit::OK)
        .map_err(super::fail(super::exit::TARGET))
}

fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let json = args
        .json
        .clone()
        .unwrap_or_else(|| args.dir.join("results.json"));
    let report = bench::run(&BenchOptions {
        rows: args.rows,
        blacklist_rows: args.blacklist_rows,
        dir: args.dir,
        json: json.clone(),
        no_xlsx: args.no_xlsx,
        no_single: args.no_single,
        concurrency: args.concurrency,
        serve_args: args
            .serve_args
            .as_deref()
            .map(|a| a.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
        // A path that cannot be made absolute is kept as given: running it
        // then fails with its own error, naming it.
        naive: args.naive.map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
        stages: args.stages,
    })?;
    crate::outln!(
        "{} rows ({} order lines), {} blacklist entries; {} build; {}\n",
        report.rows,
        report.order_lines,
        report.blacklist_rows,
        report.profile,
        report.machine
    );
    crate::outln!("{}", bench::table(&report));
    crate::outln!("results: {}", json.display());
    Ok(())
}

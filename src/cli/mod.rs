//! The command line: one module per subcommand. `main.rs` parses, sets up
//! logging and maps the outcome to an exit code.

pub mod accounts;
pub mod auth;
pub mod bench;
pub mod builtin;
pub mod check;
pub mod docs;
pub mod export;
pub mod init;
pub mod logs;
pub mod outbox;
mod progress;
pub use listpipe_base::output;
pub mod run;
pub mod serve;
pub mod settings;

pub use settings::Settings;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "listpipe",
    version,
    about = "Move subscriber data in and out of an email-marketing service (REST API v3)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How log lines are written on standard error: `text` for a person
    /// (coloured on a terminal, never with NO_COLOR set), `json` one object
    /// a line for log collectors. Summary lines stay text.
    #[arg(long, global = true, value_enum, env = "LISTPIPE_LOG_FORMAT", default_value_t = logs::LogFormat::Text)]
    pub log_format: logs::LogFormat,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a pipeline: import (and export) as its steps say, against its target.
    Run(run::RunArgs),
    /// Export a group, a segment (saved or runtime filter) or the blacklist to CSV, XLSX, Parquet or JSON lines.
    Export(Box<export::ExportArgs>),
    /// Write a commented pipeline for these exports: dialect, preset or mapping, consent.
    Init(init::InitArgs),
    /// Check a pipeline offline: parse it, read and prepare every source, preview, count, write rejects.
    Check(check::CheckArgs),
    /// Run the built-in target server: every v3 endpoint and the OAuth token service on SQLite or PostgreSQL.
    Serve(serve::ServeArgs),
    /// Manage the built-in server's accounts (tenants) and their credentials.
    #[command(subcommand)]
    Accounts(accounts::AccountsCommand),
    /// Log in to a v3 API through the browser (OAuth authorization code) and check credentials files.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Measure every stage on generated data against the built-in server (see BENCHMARKS.md).
    Bench(bench::BenchArgs),
    /// Print the double-opt-in mails the built-in server wrote (JSON lines, newest first).
    Outbox(outbox::OutboxArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(docs::CompletionsArgs),
    /// Print the man page, listpipe(1), in roff.
    Man,
}

/// How every subcommand ends: `Ok(code)` when it ran to its end (the code
/// says how it went: 0, or 1 for rows rejected, 5, 130...), `Err((code,
/// error))` when it stopped; `main.rs` prints that error with its causes
/// ([`crate::cause::report`]) and exits with its code. Errors a command
/// reports and carries on after (a step's failure) it prints itself through
/// the same function.
pub type Outcome = Result<u8, Failure>;

/// A command stopped by an error, and the exit code it stands for.
pub type Failure = (u8, anyhow::Error);

/// Tags an error with its exit code: `.map_err(fail(exit::TARGET))`.
pub fn fail<E: Into<anyhow::Error>>(code: u8) -> impl FnOnce(E) -> Failure {
    move |e| (code, e.into())
}

/// Exit codes, the same for every command.
pub use listpipe_base::exit;

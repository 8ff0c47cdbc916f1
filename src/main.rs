//! The `listpipe` binary: parse the command line, set up logging, run the
//! command, and turn the outcome into an exit code (see `cli::exit`).

use clap::Parser;
use listpipe::cli::{self, Cli, Command, exit};
use std::process::ExitCode;

fn main() -> ExitCode {
    few_malloc_arenas();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LISTPIPE_LOG")
                .unwrap_or_else(|_| "listpipe=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            listpipe::cause::report(&e);
            return ExitCode::from(exit::TARGET);
        }
    };
    // One convention for every command (see `cli::Outcome`).
    let result: cli::Outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => cli::run::run(args).await,
            Command::Check(args) => cli::check::run(args),
            Command::Export(args) => cli::export::run(*args).await,
            Command::Serve(args) => cli::serve::run(args).await,
            Command::Auth(cmd) => cli::auth::run(cmd).await,
            Command::Accounts(cmd) => cli::accounts::run(cmd).await,
            Command::Bench(args) => tokio::task::spawn_blocking(move || cli::bench::run(args))
                .await
                .map_err(cli::fail(exit::TARGET))
                .and_then(|r| r),
            Command::Outbox(args) => cli::outbox::run(args).await,
            Command::Completions(args) => cli::docs::completions(args),
            Command::Man => cli::docs::man(),
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        // A pipeline file's errors are `file:line:col: what is wrong` lines,
        // as a compiler prints them (editors jump to each); the rest say
        // `listpipe: error:` and their causes.
        Err((code, e)) => {
            match e.downcast_ref::<listpipe::pipeline::PipelineError>() {
                Some(file_errors) => listpipe::errln!("{file_errors}"),
                None => listpipe::cause::report(e.as_ref()),
            }
            ExitCode::from(code)
        }
    }
}

/// Two malloc arenas instead of glibc's eight a core. Every thread that
/// allocates gets an arena of its own up to that bound, and each keeps the
/// memory it freed: the server's page reads run on many blocking threads,
/// and at 1M receivers its peak was 329 MiB with the default, 167 MiB with
/// two, at the same speed (BENCHMARKS.md, issue 15). Before any thread
/// starts; a `MALLOC_ARENA_MAX` in the environment is left to decide.
fn few_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a parameter of the allocator; called
        // before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

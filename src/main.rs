//! The `listpipe` binary: parse the command line, set up logging, run the
//! command, and turn the outcome into an exit code (see `cli::exit`).
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

use clap::Parser;
use listpipe::cli::{self, Cli, Command, exit};
use std::io::Write;
use std::process::ExitCode;

#[cfg(not(target_env = "msvc"))]
mod allocator {
    //! jemalloc, not glibc's malloc. A batch write decodes a thousand items
    //! into small strings and maps and frees them on another thread; glibc
    //! spent a quarter of the server's time in `malloc` and `free`. With
    //! jemalloc a first import takes 0.78 of the time, single writes 0.85
    //! (BENCHMARKS.md, issue 15, an eighth session).

    #[global_allocator]
    static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

    /// jemalloc's settings, read when it starts; `_RJEM_MALLOC_CONF` in the
    /// environment overrides any of them. Two arenas, not four a core: the
    /// server's page reads run on many blocking threads, and each arena
    /// keeps what its threads freed (the server's peak in the bench at 1M
    /// rows was 281 MiB with the default, 179 with two). Freed pages go back
    /// to the system after a second.
    #[unsafe(export_name = "_rjem_malloc_conf")]
    static MALLOC_CONF: Conf = Conf(c"narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

    /// A C string, as jemalloc reads its `malloc_conf`.
    #[repr(transparent)]
    struct Conf(*const std::ffi::c_char);

    // SAFETY: it points to a constant, never written.
    unsafe impl Sync for Conf {}
}

fn main() -> ExitCode {
    // Temporary files beside a destination older than this are an earlier
    // process's, which a write removes (`state_file`'s module).
    listpipe::state_file::mark_start();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A usage error, or `--help` and `--version`: printed like any
        // other output, whose failure (`--help > /dev/full`) ends the
        // process as `cli::output` says.
        Err(e) => {
            let stream = if e.use_stderr() {
                cli::output::Stream::Err
            } else {
                cli::output::Stream::Out
            };
            let printed = e.print().and_then(|()| match stream {
                cli::output::Stream::Out => std::io::stdout().flush(),
                cli::output::Stream::Err => std::io::stderr().flush(),
            });
            if let Err(io) = printed {
                cli::output::fail(stream, &io);
            }
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    if let Err(e) = cli::logs::init(cli.log_format) {
        listpipe::cause::report(&e);
        return ExitCode::from(exit::USAGE);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            listpipe::cause::report(&e);
            return ExitCode::from(exit::TARGET);
        }
    };
    // The tuning knobs, read from the environment here and nowhere else.
    let settings = cli::Settings::from_env();
    // One convention for every command (see `cli::Outcome`).
    let result: cli::Outcome = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => cli::run::run(args, settings).await,
            Command::Check(args) => cli::check::run(args, settings),
            Command::Init(args) => cli::init::run(args).await,
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

//! Exit codes, the same for every command.

/// Everything done.
pub const OK: u8 = 0;
/// Finished, but some rows were rejected or failed.
pub const PARTIAL: u8 = 1;
/// Usage or pipeline-file error.
pub const USAGE: u8 = 2;
/// Target unreachable, authentication failed, or the server could not start.
pub const TARGET: u8 = 3;
/// Another run of the same pipeline against the same target is in progress.
pub const LOCKED: u8 = 4;
/// Mirror mode's guard refused a step: more removals than allowed.
pub const GUARD: u8 = 5;
/// The run's own state or output could not be written (disk full,
/// permissions) or read back (a damaged ledger): the run stopped,
/// nothing half-written; fix it and `--resume` (EX_IOERR of sysexits.h).
pub const IO: u8 = 74;
/// Stopped by Ctrl-C or SIGTERM; `run --resume` continues (128 + SIGINT).
pub const STOPPED: u8 = 130;
/// The reader of standard output went away (`listpipe check p.toml |
/// head -1`): ended quietly, as a tool that SIGPIPE ends (128 + 13).
pub const PIPE: u8 = 141;

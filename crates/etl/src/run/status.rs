//! How a run or a check went, as the process's exit code says it.

use listpipe_base::exit;

/// The outcome of [`super::run()`] or [`super::check()`] as an exit code
/// (the codes are [`listpipe_base::exit`]'s, the same for every command).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitStatus(u8);

impl ExitStatus {
    /// Everything done.
    pub const OK: ExitStatus = ExitStatus(exit::OK);
    /// Finished, but some rows were rejected or failed.
    pub const PARTIAL: ExitStatus = ExitStatus(exit::PARTIAL);
    /// The pipeline file's error (found only when a step ran).
    pub const USAGE: ExitStatus = ExitStatus(exit::USAGE);
    /// The target unreachable, refusing the credentials or gone.
    pub const TARGET: ExitStatus = ExitStatus(exit::TARGET);
    /// Another run holds the lock.
    pub const LOCKED: ExitStatus = ExitStatus(exit::LOCKED);
    /// Mirror mode's guard refused a step.
    pub const GUARD: ExitStatus = ExitStatus(exit::GUARD);
    /// The run's own state or output could not be written.
    pub const IO: ExitStatus = ExitStatus(exit::IO);
    /// Stopped by Ctrl-C or SIGTERM.
    pub const STOPPED: ExitStatus = ExitStatus(exit::STOPPED);

    /// The process's exit code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// Whether everything was done (exit 0).
    pub const fn success(self) -> bool {
        self.0 == exit::OK
    }

    /// The worse of the two: the higher code.
    pub fn at_least(self, other: ExitStatus) -> ExitStatus {
        if other.0 > self.0 { other } else { self }
    }
}

impl From<ExitStatus> for u8 {
    fn from(status: ExitStatus) -> u8 {
        status.0
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> std::process::ExitCode {
        std::process::ExitCode::from(status.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worse_status_is_the_higher_code() {
        let s = ExitStatus::OK.at_least(ExitStatus::PARTIAL);
        assert_eq!(s, ExitStatus::PARTIAL);
        assert_eq!(s.at_least(ExitStatus::OK), ExitStatus::PARTIAL);
        assert_eq!(s.at_least(ExitStatus::GUARD).code(), 5);
        assert!(ExitStatus::default().success());
        assert_eq!(u8::from(ExitStatus::STOPPED), 130);
    }
}

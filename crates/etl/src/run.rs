//! `listpipe run` and `listpipe check` as library functions. [`run()`]
//! runs a pipeline's steps against a connected target ([`pipeline`]: the
//! loop, the journals' end, the report), each step from its source to its
//! report ([`step`]), with the rejects files they write ([`rejects`]);
//! [`check()`] prepares every step offline ([`check`]). Both answer an
//! [`ExitStatus`]. The binary parses the command line, connects the
//! target, takes the run lock, handles signals and prints; a program (or a
//! test) can run a pipeline through the library the same way.

pub mod check;
pub mod journals;
pub mod pipeline;
pub mod rejects;
mod status;
pub mod step;

pub use check::{CheckEvents, CheckOptions, CheckOutcome, StepCheck, check};
pub use pipeline::{Journals, RunEvents, RunOptions, RunOutcome, not_run, run};
pub use status::ExitStatus;

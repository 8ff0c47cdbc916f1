//! `listpipe run` and `listpipe check` as library functions. [`run()`]
//! runs a pipeline's steps against a connected target ([`pipeline`]: the
//! loop, the journals' end, the report), each step from its source to its
//! report ([`step`]), with the rejects files they write ([`rejects`]);
//! [`check()`] prepares every step offline ([`check`]). Both answer an
//! [`ExitStatus`]. Before the first step [`guard::clear`] takes the run
//! lock and decides on the journals an earlier run left. The binary parses
//! the command line, connects the target, handles signals and prints; a
//! program (or a test) runs a pipeline through the library the same way,
//! its state in a folder of its choosing ([`crate::pipeline::load_in`]).

pub mod check;
pub mod guard;
pub mod journals;
pub mod pipeline;
pub mod rejects;
mod status;
pub mod step;

pub use check::{CheckEvents, CheckOptions, CheckOutcome, StepCheck, check};
pub use pipeline::{Journals, RunEvents, RunOptions, RunOutcome, not_run, run};
pub use status::ExitStatus;

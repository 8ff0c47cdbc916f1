//! The step engine of `listpipe run` and `listpipe check`: each step from
//! its source to its report ([`step`]), and the rejects files they write
//! ([`rejects`]). The binary parses the command line, takes the run lock,
//! handles signals and prints; the steps themselves run here, so a program
//! (or a test) can run them through the library.

pub mod rejects;
pub mod step;

//! What every layer of listpipe uses and none owns: how an error and its
//! causes are printed ([`cause`]), the hash maps of per-row work ([`hash`]),
//! the one atomic-write path for files the tool keeps ([`state_file`]), and
//! the process's two output streams with their exit codes ([`output`],
//! [`exit`]).
// No `unwrap` or `expect` outside tests: bad input is an error, never a panic.

pub mod cause;
pub mod exit;
pub mod hash;
pub mod html;
pub mod output;
pub mod state_file;

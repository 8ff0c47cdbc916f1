//! A command-line runner: the one way the tests start a binary of the
//! workspace (`listpipe`, whose path only its own package's tests know:
//! `env!("CARGO_BIN_EXE_listpipe")`), for what only a process shows (exit
//! codes of a command line, signals, the output streams, the terminal).

use std::process::Command;

/// A command of `binary` without the environment's target and token (the
/// test process's own environment is shared by every test).
pub fn command(binary: &str) -> Command {
    let mut cmd = Command::new(binary);
    cmd.env_remove("LISTPIPE_URL").env_remove("LISTPIPE_TOKEN");
    cmd
}

//! A command-line runner: the one way the tests start a binary of the
//! workspace (`listpipe`, whose path only its own package's tests know:
//! `env!("CARGO_BIN_EXE_listpipe")`), for what only a process shows (exit
//! codes of a command line, signals, the output streams, the terminal).

use std::process::Command;

/// A command of `binary` without the environment's target and token (the
/// test process's own environment is shared by every test).
/// `LISTPIPE_TEST_SPAWNS=FILE` appends the starting thread's name to FILE
/// each time (which tests still start the binary).
pub fn command(binary: &str) -> Command {
    if let Some(log) = std::env::var_os("LISTPIPE_TEST_SPAWNS") {
        use std::io::Write;
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        let _ = file.and_then(|mut f| writeln!(f, "{name}"));
    }
    let mut cmd = Command::new(binary);
    cmd.env_remove("LISTPIPE_URL").env_remove("LISTPIPE_TOKEN");
    cmd
}

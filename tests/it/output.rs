//! Output is I/O like any other: a closed pipe ends listpipe quietly, a full
//! device ends it with the I/O exit code and a message on the other stream,
//! never a panic or a backtrace.

use std::fs::File;
use std::path::Path;
use std::process::{Output, Stdio};

fn fixture(dir: &Path) {
    let rows: String = (0..200).map(|i| format!("user{i}@example.com\n")).collect();
    std::fs::write(dir.join("in.csv"), format!("email\n{rows}")).unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n",
    )
    .unwrap();
}

fn listpipe(dir: &Path, args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    crate::support::binary()
        .current_dir(dir)
        .args(args)
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .unwrap()
}

#[test]
fn a_closed_pipe_on_stdout_ends_the_process_quietly_with_141() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    // The reader is gone before listpipe writes its first line.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = listpipe(
        dir.path(),
        &["check", "p.toml", "--preview", "100"],
        writer.into(),
        Stdio::piped(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_full_device_on_stdout_ends_with_74_and_says_so_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let full = File::options().write(true).open("/dev/full").unwrap();
    let out = listpipe(
        dir.path(),
        &["check", "p.toml"],
        full.into(),
        Stdio::piped(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert_eq!(
        stderr,
        "listpipe: cannot write to standard output: No space left on device (os error 28)\n"
    );
}

#[test]
fn a_full_device_on_stderr_ends_with_74_and_says_so_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let full = File::options().write(true).open("/dev/full").unwrap();
    let out = listpipe(
        dir.path(),
        &["check", "missing.toml"],
        Stdio::piped(),
        full.into(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(74), "{stdout}");
    assert_eq!(
        stdout,
        "listpipe: cannot write to standard error: No space left on device (os error 28)\n"
    );
}

#[test]
fn help_on_a_full_device_ends_with_74_like_any_other_output() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--help"][..], &["run", "--help"][..], &["--version"][..]] {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let out = listpipe(dir.path(), args, full.into(), Stdio::piped());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(74), "{args:?}: {stderr}");
        assert_eq!(
            stderr,
            "listpipe: cannot write to standard output: No space left on device (os error 28)\n"
        );
    }
}

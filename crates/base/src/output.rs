//! Output is I/O like any other. Everything listpipe prints for a person
//! goes through [`outln!`](crate::outln) and [`errln!`](crate::errln), never
//! `println!`, whose failure is a panic. A failed write ends the process the
//! way a well-behaved Unix tool ends:
//!
//! - a closed pipe (`listpipe check p.toml | head -1`) ends it quietly with
//!   [`exit::PIPE`] (141, what a shell reports for a tool that SIGPIPE ended);
//! - any other failure (a full disk behind `> log`, `/dev/full`) ends it with
//!   [`exit::IO`] and a message on the other stream, when that one still works.
//!
//! Either way no backtrace. What a run had journaled is already with the
//! operating system (the journal writes each line as it happens), so the run
//! stays resumable with `--resume`.

use crate::exit;
use std::fmt;
use std::io::{self, Write};

/// The two streams a person reads.
#[derive(Debug, Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Out => "standard output",
            Stream::Err => "standard error",
        }
    }
}

/// Writes one line to `stream`; a failure ends the process (see the module).
pub fn line(stream: Stream, args: fmt::Arguments<'_>) {
    write(stream, args, true);
}

/// Writes `args` to `stream` without ending the line (a stage's name before
/// its figures); a failure ends the process.
pub fn text(stream: Stream, args: fmt::Arguments<'_>) {
    write(stream, args, false);
}

fn write(stream: Stream, args: fmt::Arguments<'_>, newline: bool) {
    let written = match stream {
        Stream::Out => write_to(&mut io::stdout().lock(), args, newline),
        Stream::Err => write_to(&mut io::stderr().lock(), args, newline),
    };
    if let Err(e) = written {
        fail(stream, &e);
    }
}

fn write_to(w: &mut impl Write, args: fmt::Arguments<'_>, newline: bool) -> io::Result<()> {
    w.write_fmt(args)?;
    if newline {
        w.write_all(b"\n")?;
    }
    // Standard output is line-buffered, standard error unbuffered: the flush
    // makes a full device fail here, not silently at exit.
    w.flush()
}

/// Ends the process after a failed write to `stream`.
pub fn fail(stream: Stream, e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(i32::from(exit::PIPE));
    }
    let message = format!("listpipe: cannot write to {}: {e}", stream.name());
    // The other stream may still work; if it does not either, the exit code
    // is all there is.
    let _ = match stream {
        Stream::Out => writeln!(io::stderr(), "{message}"),
        Stream::Err => writeln!(io::stdout(), "{message}").and_then(|()| io::stdout().flush()),
    };
    std::process::exit(i32::from(exit::IO));
}

/// `println!` whose failure ends the process as [`output`](crate::output) says.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::line($crate::output::Stream::Out, format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Stream::Out, format_args!($($arg)*))
    };
}

/// `eprintln!` whose failure ends the process as [`output`](crate::output) says.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::line($crate::output::Stream::Err, format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line($crate::output::Stream::Err, format_args!($($arg)*))
    };
}

/// `eprint!` whose failure ends the process as [`output`](crate::output) says.
#[macro_export]
macro_rules! errtext {
    ($($arg:tt)*) => {
        $crate::output::text($crate::output::Stream::Err, format_args!($($arg)*))
    };
}

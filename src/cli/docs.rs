//! `listpipe completions SHELL` and `listpipe man`: shell completion scripts and a roff man
//! page, both generated from the CLI definition (`clap_complete`, `clap_mangen`), so they
//! never drift from the flags the binary takes. Printed to standard output for the user to
//! redirect where their shell or `man` looks (docs/scheduled.md shows where).

use super::output::{self, Stream};
use super::{Cli, exit};
use clap::{Args, CommandFactory, ValueEnum};
use std::io::Write;

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl From<Shell> for clap_complete::Shell {
    fn from(s: Shell) -> Self {
        match s {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Powershell => clap_complete::Shell::PowerShell,
            Shell::Elvish => clap_complete::Shell::Elvish,
        }
    }
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script for the shell.
pub fn completions(args: CompletionsArgs) -> super::Outcome {
    let mut script = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::from(args.shell),
        &mut Cli::command(),
        "listpipe",
        &mut script,
    );
    print(&script)
}

/// Prints the man page, `listpipe(1)`, in roff.
pub fn man() -> super::Outcome {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(super::fail(exit::IO))?;
    print(&page)
}

/// Standard output, its failures ended as every print is (see `output`).
fn print(bytes: &[u8]) -> super::Outcome {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        output::fail(Stream::Out, &e);
    }
    Ok(exit::OK)
}

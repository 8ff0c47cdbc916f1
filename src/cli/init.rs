//! `listpipe init SOURCE...`: reads the sources as `run` would and writes a complete,
//! commented pipeline for them (standard output, or `--out`), with a summary on standard
//! error of what was decided and what to look at. The decisions live in [`crate::init`].

use super::exit;
use crate::init::{self, Options};
use crate::pipeline::STATE_DIR;
use crate::remote::{self, Fetched};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The exports to read: files, globs, URLs or object URLs (CSV, TSV, XLSX/ODS, Parquet, JSON lines, zip, .gz).
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// The target group's name [default: the first file's name without extension].
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// Write the pipeline to this file instead of standard output.
    #[arg(long, value_name = "PIPELINE.toml")]
    pub out: Option<PathBuf>,
    /// The pipeline's `[target] url` [default: builtin].
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Overwrite the `--out` file when it exists.
    #[arg(long)]
    pub force: bool,
    /// Ask in the terminal what the file does not say (is a column consent, day or month
    /// first, which address column) instead of writing DECIDE comments [default: when
    /// standard input and standard error are a terminal].
    #[arg(long, conflicts_with = "no_interactive")]
    pub interactive: bool,
    /// Never ask: every open question becomes a DECIDE comment in the pipeline.
    #[arg(long)]
    pub no_interactive: bool,
}

/// `init`'s questions answered in the terminal (standard error), with dialoguer. A prompt
/// the user leaves with Escape or q, or that cannot be shown, is a question unanswered: it
/// stays a DECIDE.
struct Terminal {
    term: dialoguer::console::Term,
}

impl init::ask::Ask for Terminal {
    fn ask(&mut self, q: &init::ask::Question) -> Option<init::ask::Answer> {
        use init::ask::{Answer, Choices};
        let theme = dialoguer::theme::SimpleTheme;
        let answer = match &q.choices {
            Choices::YesNo => dialoguer::Confirm::with_theme(&theme)
                .with_prompt(&q.text)
                .default(false)
                .interact_on_opt(&self.term)
                .map(|a| a.map(Answer::Yes)),
            Choices::One(items) => dialoguer::Select::with_theme(&theme)
                .with_prompt(&q.text)
                .items(items)
                .default(0)
                .interact_on_opt(&self.term)
                .map(|a| a.map(Answer::One)),
            Choices::Many(items) => dialoguer::MultiSelect::with_theme(&theme)
                .with_prompt(format!("{} [space: choose, enter: done]", q.text))
                .items(items)
                .interact_on_opt(&self.term)
                .map(|a| a.map(Answer::Many)),
        };
        answer.ok().flatten()
    }
}

/// Why `init` stopped.
#[derive(Debug, thiserror::Error)]
pub enum InitCliError {
    #[error("{} exists; choose another --out or add --force to overwrite it", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", .file.display())]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("the source is unchanged since {0}, and init has no copy of it; run init again")]
    Unchanged(String),
    #[error("cannot tell the current folder: {0}")]
    Cwd(std::io::Error),
}

pub async fn run(args: InitArgs) -> super::Outcome {
    if let Some(out) = &args.out
        && out.exists()
        && !args.force
    {
        return Err((exit::USAGE, InitCliError::Exists(out.clone()).into()));
    }
    let base = std::env::current_dir().map_err(|e| (exit::IO, InitCliError::Cwd(e).into()))?;
    let out_dir = args.out.as_ref().map(|o| match o.parent() {
        Some(p) if !p.as_os_str().is_empty() => base.join(p),
        _ => base.clone(),
    });
    // URLs and objects are downloaded as `run` downloads them; the copies live until the
    // pipeline is written, and the pipeline names the URLs.
    let spec = crate::source::SourceSpec {
        paths: args.sources.clone(),
        ..Default::default()
    };
    let context = remote::Context {
        state_dir: Path::new(STATE_DIR),
        pipeline: "init",
        step: "init",
        timeout: Duration::from_secs(30),
    };
    let ready = match remote::fetch(&spec, &context)
        .await
        .map_err(super::fail(exit::USAGE))?
    {
        Fetched::Ready(ready) => ready,
        // Nothing remembered validators for `init`: every URL is downloaded.
        Fetched::Unchanged { since } => {
            return Err((exit::USAGE, InitCliError::Unchanged(since).into()));
        }
    };
    let opts = Options {
        local: ready.spec.paths.clone(),
        sources: args.sources.clone(),
        base,
        out_dir,
        group: args.group.clone(),
        target: args.target.clone(),
    };
    use std::io::IsTerminal;
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let draft = if args.interactive || (terminal && !args.no_interactive) {
        let mut ask = Terminal {
            term: dialoguer::console::Term::stderr(),
        };
        init::draft(&opts, &mut ask)
    } else {
        init::draft(&opts, &mut init::ask::NoQuestions)
    }
    .map_err(super::fail(exit::USAGE))?;
    match &args.out {
        Some(out) => {
            write(out, &draft.text, args.force)?;
            crate::errln!("wrote {}", out.display());
        }
        None => crate::outln!("{}", draft.text.trim_end()),
    }
    crate::errln!("init decided:");
    for d in &draft.decided {
        crate::errln!("  - {d}");
    }
    if draft.look_at.is_empty() {
        crate::errln!(
            "nothing needs a decision; run `listpipe check` on the pipeline to see the first rows"
        );
    } else {
        crate::errln!("look at:");
        for l in &draft.look_at {
            crate::errln!("  - {l}");
        }
    }
    Ok(exit::OK)
}

/// Writes the pipeline: a new file only, unless `force`.
fn write(out: &PathBuf, text: &str, force: bool) -> Result<(), super::Failure> {
    let fail = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            (exit::USAGE, InitCliError::Exists(out.clone()).into())
        } else {
            (
                exit::IO,
                InitCliError::Write {
                    file: out.clone(),
                    source: e,
                }
                .into(),
            )
        }
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(out).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)
}

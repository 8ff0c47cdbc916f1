//! `listpipe init`: the pipeline written from the file. The sources are read as `run` reads
//! them (`sample`), each column's role is decided from its header and values (`columns`,
//! driven by the tables in `rules`), consent from what the file records (`consent`), a known
//! tool's export is handed to its preset (`tools`), and the result is written as a
//! commented pipeline (`render`). Nothing here touches the network or the target.

pub mod ask;
mod columns;
mod consent;
mod date_order;
mod dates;
mod mapped;
mod parts;
mod render;
pub mod rules;
mod sample;
mod source_line;
mod tools;

#[cfg(test)]
mod consent_tests;
#[cfg(test)]
mod dates_tests;
#[cfg(test)]
mod names_tests;
#[cfg(test)]
mod sample_tests;
#[cfg(test)]
mod tests;

use crate::source::SourceError;
use ask::Ask;
use render::{comment, string, strings};
use source_line::source_lines;
use std::path::PathBuf;

/// What `init` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sources as the user named them (paths, globs, URLs, object URLs): what the
    /// pipeline names.
    pub sources: Vec<String>,
    /// What is read: `sources` with every URL and object replaced by its downloaded copy.
    pub local: Vec<String>,
    /// The folder the sources are relative to (the current folder).
    pub base: PathBuf,
    /// The folder the pipeline is written to (`--out`'s), so paths in it are relative to it;
    /// `None`: written to standard output, paths kept as given.
    pub out_dir: Option<PathBuf>,
    pub group: Option<String>,
    pub target: Option<String>,
}

/// The pipeline's text, and the summary for standard error.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub text: String,
    /// What was decided, one line each.
    pub decided: Vec<String>,
    /// What the user should look at, one line each.
    pub look_at: Vec<String>,
}

/// Why no pipeline could be written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{0}")]
    Source(#[from] SourceError),
    #[error(
        "no column holds email addresses (its columns: {columns}); name the address column in the file's header, such as \"email\", and run init again"
    )]
    NoAddress { columns: String },
}

/// Reads the sources and writes the pipeline for them, asking `ask` what the file does
/// not say.
pub fn draft(opts: &Options, ask: &mut dyn Ask) -> Result<Draft, InitError> {
    let sample = sample::read(&opts.local, &opts.base)?;
    draft_from(opts, &sample, ask)
}

/// The pipeline for what the sources' first rows showed.
fn draft_from(
    opts: &Options,
    sample: &sample::Sample,
    ask: &mut dyn Ask,
) -> Result<Draft, InitError> {
    let mut w = Writer::default();
    let first = opts.sources.first().map(String::as_str).unwrap_or("source");
    let stem = stem(first);
    let shown: Vec<String> = sample
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();

    w.line("# Written by `listpipe init` from");
    for f in &shown {
        w.line(&format!("#   {f}"));
    }
    w.comment(&format!(
        "after reading its first {} rows. Every decision has a comment above it saying what it was read from; lines marked DECIDE need you. Check it with `listpipe check` (it shows the first rows as they will be sent), then `listpipe run`.",
        sample.rows
    ));
    w.line("");
    w.line("[target]");
    let target = opts.target.as_deref().unwrap_or("builtin");
    w.line(&format!("url = {}", string(target)));
    w.line("");
    w.line("[[import]]");
    w.line(&format!("name = {}", string(&step_name(&stem))));
    source_lines(&mut w, opts, sample);
    let group = opts.group.clone().unwrap_or_else(|| stem.clone());
    w.line(&format!("group = {}", string(&group)));
    w.line("create_group = true");
    let placeholders = sample.placeholders();
    if !placeholders.is_empty() {
        w.comment(&format!(
            "Cells holding {} stand for nothing: read as empty.",
            consent::quoted(&placeholders)
        ));
        w.line(&format!("null_values = {}", strings(&placeholders)));
        w.decided(format!(
            "placeholders read as empty: {}",
            consent::quoted(&placeholders)
        ));
    }

    if let Some(tool) = tools::preset_for(&sample.columns) {
        preset_step(&mut w, sample, tool.preset);
    } else {
        mapped::mapped_step(&mut w, sample, ask)?;
    }
    Ok(w.finish())
}

/// A step read by a preset: the preset maps everything; a regional date format is set.
fn preset_step(w: &mut Writer, sample: &sample::Sample, preset: &str) {
    w.comment(&format!(
        "The headers are those of the {preset} export: its preset maps the address, consent, attributes and tags (pipelines/README.md, \"Migration presets\", lists every rule). A key set below overrides the preset's."
    ));
    w.line(&format!("preset = {}", string(preset)));
    w.decided(format!("the {preset} preset (its headers fit)"));
    let regional = sample.columns.iter().enumerate().find_map(|(i, _)| {
        match dates::detect(&sample.values(i).collect::<Vec<_>>()) {
            Some(
                d @ (dates::DateFormat::One(_)
                | dates::DateFormat::List(_)
                | dates::DateFormat::Ambiguous { .. }),
            ) => Some(d),
            _ => None,
        }
    });
    if let Some(d) = regional {
        w.comment("The export writes its dates in a regional format:");
        match (&d, date_order::month_first_tool(&sample.columns)) {
            (dates::DateFormat::Ambiguous { formats, example }, Some(tool)) => {
                let first = date_order::pick(formats, true).unwrap_or(formats[0]);
                w.comment(&format!(
                    "\"{example}\" reads day first and month first alike: read month first, as {tool} writes its dates."
                ));
                w.line(&format!("date_format = {}", string(first)));
            }
            (dates::DateFormat::Ambiguous { .. }, None) => {
                w.line(&format!("date_format = {}", strings(&d.formats())));
                w.comment("DECIDE: day first or month first: put your export's format first and set ambiguous = \"first\"; until then values read both ways are left out.");
                w.line("ambiguous = \"omit\"");
                w.look_at("the date format (day first or month first)".into());
            }
            _ => w.line(&format!("date_format = {}", strings(&d.formats()))),
        }
    }
}

/// The file name of a source without folder and extension: `exports/kunden.csv` → `kunden`.
fn stem(source: &str) -> String {
    let name = source.rsplit(['/', '\\']).next().unwrap_or(source);
    let name = name.split('.').next().unwrap_or(name);
    let name = name.replace(['*', '?', '[', ']'], "");
    if name.is_empty() {
        "import".into()
    } else {
        name
    }
}

/// A step name the pipeline accepts: letters, digits, space, `-`, `_`, `.` (not first).
fn step_name(stem: &str) -> String {
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    let name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        "import".into()
    } else {
        name
    }
}

/// The file's lines and the summary, as they are written.
#[derive(Default)]
struct Writer {
    lines: Vec<String>,
    decided: Vec<String>,
    look_at: Vec<String>,
}

impl Writer {
    fn line(&mut self, l: &str) {
        self.lines.push(l.to_string());
    }
    fn comment(&mut self, text: &str) {
        self.lines.extend(comment(text));
    }
    fn decided(&mut self, s: String) {
        self.decided.push(s);
    }
    fn look_at(&mut self, s: String) {
        if !self.look_at.contains(&s) {
            self.look_at.push(s);
        }
    }
    fn finish(self) -> Draft {
        let mut text = self.lines.join("\n");
        text.push('\n');
        Draft {
            text,
            decided: self.decided,
            look_at: self.look_at,
        }
    }
}

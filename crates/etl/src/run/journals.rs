//! The run's journals: which ones its steps write, and what a run does
//! with one an earlier run left.

use super::ExitStatus;
use crate::load::journal;
use crate::pipeline::{Pipeline, Step};

/// The pipeline's import steps, each with the group it writes (as the
/// file names it): the journals a run writes, with its target.
pub fn journal_steps(pipeline: &Pipeline) -> Vec<(&str, String)> {
    pipeline
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Import(i) => Some((i.name.as_str(), i.group.to_string())),
            _ => None,
        })
        .collect()
}

pub fn step_keys<'a>(steps: &'a [(&'a str, String)]) -> Vec<journal::StepKey<'a>> {
    steps
        .iter()
        .map(|(step, group)| journal::StepKey { step, group })
        .collect()
}

/// What a run asks of a journal an earlier run left: continue it
/// (`--resume`) or drop it (`--discard-journal`); neither: refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Leftover {
    #[default]
    Refuse,
    Resume,
    Discard,
}

impl Leftover {
    /// What `--resume` and `--discard-journal` ask (never both: the
    /// command line refuses them together; `--discard-journal` wins here).
    pub fn asked(resume: bool, discard: bool) -> Leftover {
        match (discard, resume) {
            (true, _) => Leftover::Discard,
            (_, true) => Leftover::Resume,
            _ => Leftover::Refuse,
        }
    }
}

/// A leftover journal of this run's (this pipeline, this target, a step's
/// group) means an earlier run did not finish: continue it
/// ([`Leftover::Resume`]) or drop it ([`Leftover::Discard`]), never write
/// past it. Journals of other targets, accounts or groups are not this
/// run's: kept as they are and said (the lines `Ok` answers), and a resume
/// that finds only those is refused, naming them. `again` names the run in
/// the messages. `Err`: the exit status and the message.
pub fn leftover_journals(
    pipeline: &Pipeline,
    target: &str,
    again: &journal::Again<'_>,
    leftover: Leftover,
) -> Result<Vec<String>, (ExitStatus, String)> {
    let steps = journal_steps(pipeline);
    let keys = step_keys(&steps);
    let found = journal::found(&pipeline.state_dir, &pipeline.state, target, &keys);
    let notes = || -> Vec<String> {
        found
            .others
            .iter()
            .filter_map(|o| journal::kept_note(o, target, again))
            .collect()
    };
    if leftover == Leftover::Discard {
        journal::discard_own(&pipeline.state_dir, &pipeline.state, &found).map_err(|e| {
            (
                ExitStatus::IO,
                format!("listpipe: cannot discard the journal: {e}"),
            )
        })?;
        return Ok(notes());
    }
    let resume = leftover == Leftover::Resume;
    if found.own.is_empty() {
        if resume
            && let Some(message) = found
                .others
                .iter()
                .find_map(|o| journal::belongs_elsewhere(o, target, again))
        {
            return Err((ExitStatus::USAGE, message));
        }
        return Ok(notes());
    }
    if !resume {
        return Err((
            ExitStatus::USAGE,
            journal::leftover_message(again, &found.own_paths()),
        ));
    }
    journal::adopt(&found).map_err(|e| (ExitStatus::IO, format!("listpipe: {e}")))?;
    Ok(notes())
}

//! The run's journals: which ones its steps write, and what a run does
//! with one an earlier run left.

use super::RunArgs;
use crate::cli::exit;
use crate::load::journal;
use crate::pipeline::{Pipeline, Step};

/// The pipeline's import steps, each with the group it writes (as the
/// file names it): the journals a run writes, with its target.
pub(super) fn journal_steps(pipeline: &Pipeline) -> Vec<(&str, String)> {
    pipeline
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Import(i) => Some((i.name.as_str(), i.group.to_string())),
            _ => None,
        })
        .collect()
}

pub(super) fn step_keys<'a>(steps: &'a [(&'a str, String)]) -> Vec<journal::StepKey<'a>> {
    steps
        .iter()
        .map(|(step, group)| journal::StepKey { step, group })
        .collect()
}

/// How messages name this run again: its file, and the `--target-url` it
/// was given (a journal belongs to one target).
pub(super) fn again(args: &RunArgs) -> journal::Again<'_> {
    journal::Again {
        pipeline_file: &args.pipeline,
        target_url: args.target_url.as_deref(),
    }
}

/// A leftover journal of this run's (this pipeline, this target, a step's
/// group) means an earlier run did not finish: continue it (`--resume`) or
/// drop it (`--discard-journal`), never write past it. Journals of other
/// targets, accounts or groups are not this run's: kept as they are and
/// said, and a `--resume` that finds only those is refused, naming them.
/// `Err`: the exit code and the message.
pub(super) fn leftover_journals(
    args: &RunArgs,
    pipeline: &Pipeline,
    target: &str,
) -> Result<(), (u8, String)> {
    let steps = journal_steps(pipeline);
    let keys = step_keys(&steps);
    let found = journal::found(&pipeline.state, target, &keys);
    let again = again(args);
    let notes = || {
        found
            .others
            .iter()
            .filter_map(|o| journal::kept_note(o, target, &again))
            .for_each(|line| crate::errln!("{line}"));
    };
    if args.discard_journal {
        journal::discard_own(&pipeline.state, &found).map_err(|e| {
            (
                exit::IO,
                format!("listpipe: cannot discard the journal: {e}"),
            )
        })?;
        notes();
        return Ok(());
    }
    if found.own.is_empty() {
        if args.resume
            && let Some(message) = found
                .others
                .iter()
                .find_map(|o| journal::belongs_elsewhere(o, target, &again))
        {
            return Err((exit::USAGE, message));
        }
        notes();
        return Ok(());
    }
    if !args.resume {
        return Err((
            exit::USAGE,
            journal::leftover_message(&again, &found.own_paths()),
        ));
    }
    journal::adopt(&found).map_err(|e| (exit::IO, format!("listpipe: {e}")))?;
    notes();
    Ok(())
}

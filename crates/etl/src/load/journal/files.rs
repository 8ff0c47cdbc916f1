//! Where a pipeline's journals live and which of them are the run's own:
//! the path of a step's journal against a target ([`path`]), the journals
//! found in the pipeline's folder sorted into this run's and others'
//! ([`found`]), taking over, discarding and removing them, and the words
//! a run says of another target's journal ([`belongs_elsewhere`],
//! [`kept_note`]).

use super::{Header, header};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The journal directory of a pipeline (its [`crate::pipeline::state_name`])
/// in the run's state folder.
pub fn dir(state_dir: &Path, pipeline: &str) -> PathBuf {
    state_dir.join("journal").join(pipeline)
}

/// The journal of `step` (writing `group`, as the pipeline file names it)
/// of a pipeline against the resolved `target`:
/// `.listpipe/journal/<pipeline>/<step>-<16 hex>.jsonl`, the hex the start
/// of a SHA-256 of the target and the group, as the mirror ledger's.
pub fn path(state_dir: &Path, pipeline: &str, step: &str, target: &str, group: &str) -> PathBuf {
    dir(state_dir, pipeline).join(file_name(step, target, group))
}

pub(super) fn file_name(step: &str, target: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{target}\n{group}").as_bytes());
    format!("{step}-{}.jsonl", &hex::encode(digest)[..16])
}

/// The step a journal's file name names: `<step>-<16 hex>.jsonl`, or
/// `<step>.jsonl` as journals were named before targets keyed them.
pub(super) fn step_named(name: &str) -> &str {
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    match stem.rsplit_once('-') {
        Some((step, key)) if key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit()) => step,
        _ => stem,
    }
}

/// An import step of a run, as its journal is keyed: its name and the
/// group it writes, as the pipeline file names it (`group "People"`).
#[derive(Debug, Clone, Copy)]
pub struct StepKey<'a> {
    pub step: &'a str,
    pub group: &'a str,
}

/// A journal of a pipeline that is not this run's.
#[derive(Debug, Clone)]
pub struct Elsewhere {
    pub path: PathBuf,
    /// Its first line (`None`: none could be read).
    pub header: Option<Header>,
    /// The group this run's step of the same name writes (`None`: no step
    /// of the pipeline has its name now).
    pub group: Option<String>,
}

/// The journals earlier runs of a pipeline left, as one run sees them.
#[derive(Debug, Default)]
pub struct Found {
    /// This run's own: a step's journal against this run's target and into
    /// its step's group. Each with where it belongs: its own path, or, for a
    /// journal named as before targets keyed the name (`<step>.jsonl`,
    /// whose header names this target and group, or none), the path
    /// [`adopt`] moves it to.
    pub own: Vec<(PathBuf, PathBuf)>,
    /// Every other one: another target, account or group, or a step the
    /// pipeline no longer has. This run never touches them.
    pub others: Vec<Elsewhere>,
}

impl Found {
    /// This run's own journals.
    pub fn own_paths(&self) -> Vec<PathBuf> {
        self.own.iter().map(|(p, _)| p.clone()).collect()
    }
}

/// The journals earlier runs of `pipeline` left, sorted into this run's
/// own (against `target`, by `steps`) and the others.
pub fn found(state_dir: &Path, pipeline: &str, target: &str, steps: &[StepKey<'_>]) -> Found {
    found_in(&dir(state_dir, pipeline), target, steps)
}

pub(super) fn found_in(dir: &Path, target: &str, steps: &[StepKey<'_>]) -> Found {
    let mut out = Found::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        // A folder is another pipeline's (`a/nightly`'s inside `a`'s).
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        if steps
            .iter()
            .any(|s| file_name(s.step, target, s.group) == name)
        {
            out.own.push((path.clone(), path));
            continue;
        }
        let header = header(&path);
        let step = steps.iter().find(|s| s.step == step_named(&name));
        let former = step.filter(|s| name == format!("{}.jsonl", s.step));
        if let Some(s) = former
            && header
                .as_ref()
                .is_none_or(|h| h.target == target && h.group == s.group)
        {
            out.own
                .push((path, dir.join(file_name(s.step, target, s.group))));
            continue;
        }
        out.others.push(Elsewhere {
            path,
            header,
            group: step.map(|s| s.group.to_string()),
        });
    }
    out
}

/// Moves this run's journals named as before targets keyed the name to
/// their keyed path, for `--resume` to continue them (one already there
/// stays, and so does the older one).
pub fn adopt(found: &Found) -> std::io::Result<()> {
    for (path, keyed) in &found.own {
        if path != keyed && !keyed.exists() {
            std::fs::rename(path, keyed).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot rename the journal {} to {}: {e}",
                        path.display(),
                        keyed.display()
                    ),
                )
            })?;
        }
    }
    Ok(())
}

/// Removes the journals of `steps` of a pipeline against `target` (a
/// completed run's own), and their folder once nothing else is in it:
/// never another target's or group's journal, never another pipeline's
/// state (`a/nightly`'s folder is inside `a`'s).
pub fn discard(
    state_dir: &Path,
    pipeline: &str,
    target: &str,
    steps: &[StepKey<'_>],
) -> std::io::Result<()> {
    for s in steps {
        remove(&path(state_dir, pipeline, s.step, target, s.group))?;
    }
    // Deliberately ignored: a folder still holding anything (another
    // target's journal, another pipeline's folder) stays.
    let _ = std::fs::remove_dir(dir(state_dir, pipeline));
    Ok(())
}

/// Removes this run's own journals (`--discard-journal`): the files
/// [`Found::own`] lists, nothing else.
pub fn discard_own(state_dir: &Path, pipeline: &str, found: &Found) -> std::io::Result<()> {
    for (path, _) in &found.own {
        remove(path)?;
    }
    // Deliberately ignored, as in `discard`.
    let _ = std::fs::remove_dir(dir(state_dir, pipeline));
    Ok(())
}

fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// How messages name the command that runs the pipeline again:
/// `listpipe run FILE`, and the `--target-url` this run was given, since
/// a journal belongs to one target.
#[derive(Debug, Clone, Copy)]
pub struct Again<'a> {
    pub pipeline_file: &'a Path,
    pub target_url: Option<&'a str>,
}

impl Again<'_> {
    /// `listpipe run FILE FLAG[ --target-url URL]`.
    pub fn with(&self, flag: &str) -> String {
        let mut out = format!("listpipe run {} {flag}", self.pipeline_file.display());
        if let Some(url) = self.target_url {
            out.push_str(" --target-url ");
            out.push_str(url);
        }
        out
    }

    /// `listpipe run FILE FLAG --target-url URL` of a journal's target
    /// (`None`: the built-in target, which no URL names).
    fn against(&self, target: &str, flag: &str) -> Option<String> {
        if target.starts_with("the built-in target on ") {
            return None;
        }
        let url = target.split(" (account ").next().unwrap_or(target);
        Some(format!(
            "listpipe run {} {flag} --target-url {url}",
            self.pipeline_file.display()
        ))
    }
}

/// The message refusing `--resume` when no journal of this run's is left
/// but `other` is, of another target, account or group. `None` when
/// `other` has no readable header (damaged, or no journal): nothing to
/// resume, a run as any other.
pub fn belongs_elsewhere(other: &Elsewhere, target: &str, again: &Again<'_>) -> Option<String> {
    let h = other.header.as_ref()?;
    let group = other.group.as_deref().unwrap_or(&h.group);
    let what = if h.target != target {
        match (
            again.against(&h.target, "--resume"),
            again.against(&h.target, "--discard-journal"),
        ) {
            (Some(resume), Some(discard)) => {
                format!(
                    "resume it against that target with: {resume}, or discard it with: {discard}"
                )
            }
            _ => "resume it against that target, or delete the file to drop it".to_string(),
        }
    } else if let Some(now) = &other.group {
        format!("the pipeline's step writes {now} now: delete the file if that run is over")
    } else {
        "no step of the pipeline has its name now: delete the file if that run is over".to_string()
    };
    Some(format!(
        "listpipe: the journal {} belongs to {} of {}, not to {} of {}; {}; \
         without --resume this run starts afresh against this target and keeps it",
        other.path.display(),
        h.group,
        h.target,
        group,
        target,
        what
    ))
}

/// A line saying that `other`, an unfinished run's journal of another
/// target, account or group than this run's `target`, is kept (`None`: it
/// has no readable header).
pub fn kept_note(other: &Elsewhere, target: &str, again: &Again<'_>) -> Option<String> {
    let h = other.header.as_ref()?;
    let how = if h.target != target {
        again
            .against(&h.target, "--resume")
            .map_or(String::new(), |resume| {
                format!("; resume it with: {resume}")
            })
    } else {
        "; this run does not write that group: delete the file if that run is over".to_string()
    };
    Some(format!(
        "listpipe: note: the journal {} of an unfinished run into {} of {} is kept{how}",
        other.path.display(),
        h.group,
        h.target,
    ))
}

/// A run's answer to its own leftover journals, for the message that stops it.
pub fn leftover_message(again: &Again<'_>, found: &[PathBuf]) -> String {
    let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
    format!(
        "listpipe: an earlier run of this pipeline against this target did not finish (journal: {}); \
         continue it with: {}, or discard it with: {}",
        list.join(", "),
        again.with("--resume"),
        again.with("--discard-journal"),
    )
}

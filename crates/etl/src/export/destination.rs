//! Where an export's file goes, and how it gets there only once complete. Every export is
//! written to a temporary file first ([`state_file::Pending`]); then, by its `out`:
//! - a local file: the temporary one is renamed into place;
//! - `-`, standard output: it is copied to standard output (a reader of the pipe never
//!   gets half an export that looks whole), then removed;
//! - an object URL (`s3://`, `gs://`, `az://`): it is uploaded as a multipart upload, so
//!   the object appears only when complete ([`crate::remote::object::put`]), then removed.
//!
//! The last two are staged under `.listpipe/exports/`, since their `out` is no folder.

use super::output;
use crate::load::LoadError;
use crate::pipeline::out::{is_stdout, object_of};
use crate::remote::object::{self, ObjectUrl};
use listpipe_base::state_file;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How summaries name an export's output.
pub fn shown(out: &Path) -> String {
    if is_stdout(out) {
        "standard output".to_string()
    } else {
        out.display().to_string()
    }
}

/// An export's file being written, and where it goes when complete.
pub(super) struct Staged {
    pending: state_file::Pending,
    out: PathBuf,
    to: To,
}

enum To {
    File,
    Stdout,
    Object(ObjectUrl),
}

impl Staged {
    /// Starts the file for `out`; `staged_as` names the temporary file of an `out` that is
    /// no local file (standard output, an object).
    /// Staged files go to `state_dir`'s `exports/`.
    pub(super) fn open(state_dir: &Path, out: &Path, staged_as: &str) -> Result<Staged, LoadError> {
        let to = if is_stdout(out) {
            To::Stdout
        } else if let Some(url) = object_of(out) {
            To::Object(ObjectUrl::parse(url).map_err(|e| output(out, e))?)
        } else {
            To::File
        };
        let path = match to {
            To::File => out.to_path_buf(),
            To::Stdout | To::Object(_) => state_dir.join("exports").join(staged_as),
        };
        let pending = state_file::Pending::new(&path, state_file::Access::Shared)
            .map_err(|e| output(&path, e.source))?;
        Ok(Staged {
            pending,
            out: out.to_path_buf(),
            to,
        })
    }

    /// Where the rows are written meanwhile.
    pub(super) fn temp_path(&self) -> &Path {
        self.pending.temp_path()
    }

    /// The `out` it goes to.
    pub(super) fn out(&self) -> &Path {
        &self.out
    }

    /// Puts the finished file where it goes (see the module). An upload that fails is
    /// aborted and reported as an output failure naming the object URL.
    pub(super) async fn deliver(self, timeout: Duration) -> Result<(), LoadError> {
        match &self.to {
            To::File => self.pending.commit().map_err(|e| output(&e.path, e.source)),
            // The temporary file is removed when `pending` drops, never renamed.
            To::Stdout => copy_to_stdout(self.pending.temp_path()),
            To::Object(url) => {
                let bytes = object::put::upload(self.pending.temp_path(), url, timeout)
                    .await
                    .map_err(|e| LoadError::Output {
                        path: self.out.clone(),
                        message: e.message,
                    })?;
                tracing::debug!(target: log_target!(), object = %url, bytes, "uploaded");
                Ok(())
            }
        }
    }
}

/// Copies the finished export to standard output; a write that fails ends
/// the process as every print does (a closed pipe quietly).
fn copy_to_stdout(temp: &Path) -> Result<(), LoadError> {
    use std::io::Write;
    let mut file = std::fs::File::open(temp).map_err(|e| output(temp, e))?;
    let mut out = std::io::stdout().lock();
    if let Err(e) = std::io::copy(&mut file, &mut out).and_then(|_| out.flush()) {
        listpipe_base::output::fail(listpipe_base::output::Stream::Out, &e);
    }
    Ok(())
}

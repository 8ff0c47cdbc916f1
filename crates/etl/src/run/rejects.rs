//! A step's rejects files as `run` and `check` write them: each chunk's
//! rejects on the preparing thread as the chunk is prepared (the file
//! grows with the source, memory does not), then the rows the target
//! refused, set aside on disk meanwhile, after all of them (the order the
//! file always had), then the file under its name.
//!
//! Decision: the preparing thread owns the file, not the loader: its rows
//! are written even when the loader is busy or stops taking chunks, and the
//! loader's thread does no file writes per chunk but the dry run's plan. A
//! dry run keeps each chunk's rejects in the chunk for the plan's
//! `invalid` lines; a run drops them once written.
//!
//! Decision: a rejects file that cannot be written (a full disk, a file
//! where its folder should be) does not stop the rows: they are sent as
//! before, and the step fails at its end naming the file (exit 74), when
//! the journal lets `--resume` finish it. The rejects after the failure are
//! dropped, never held.

use crate::load::LoadError;
use crate::prepare::OrderRejects;
use crate::source::{RejectRow, RejectSpool, RejectsFile, RejectsFormat, SourceError, Table};
use std::path::{Path, PathBuf};

/// One step's rejects file, fed chunk by chunk.
pub struct StepRejects {
    file: RejectsFile,
    path: PathBuf,
    /// The step's `rejects_bom`.
    bom: Option<bool>,
    /// Why the file could not be written; no row is written after.
    failed: Option<SourceError>,
}

impl StepRejects {
    pub fn new(path: &Path, bom: Option<bool>) -> Self {
        StepRejects {
            file: RejectsFile::new(path),
            path: path.to_path_buf(),
            bom,
            failed: None,
        }
    }

    /// Writes the rejects of a chunk of `table` (nothing once the file could
    /// not be written: [`StepRejects::finish`] says why).
    pub fn chunk(&mut self, table: &Table, rows: &[RejectRow]) {
        if self.failed.is_some() {
            return;
        }
        let written = self
            .file
            .follow(RejectsFormat::of(table, self.bom))
            .and_then(|()| self.file.write(rows));
        if let Err(e) = written {
            self.failed = Some(e);
        }
    }

    /// Writes a chunk's `rows` as [`StepRejects::chunk`] does and lets them
    /// go, unless `keep` (a dry run keeps them for the plan's `invalid`
    /// lines).
    pub fn take(&mut self, table: &Table, rows: &mut Vec<RejectRow>, keep: bool) {
        self.chunk(table, rows);
        if !keep {
            *rows = Vec::new();
        }
    }

    /// Adds the rows the target `refused` after every row written, and puts
    /// the file under its name; a step that rejected nothing removes a file
    /// an earlier run left. The error of a file that could not be written.
    pub fn finish(self, refused: RejectSpool) -> Result<Option<PathBuf>, LoadError> {
        if let Some(e) = self.failed {
            return Err(output(&self.path, e));
        }
        let path = self.path;
        let mut file = self.file;
        file.append(refused, false).map_err(|e| output(&path, e))?;
        file.finish().map_err(|e| output(&path, e))
    }
}

/// Writes a joined orders source's rejects to their own file (or removes a
/// stale one when there are none).
pub fn write_order_rejects(
    path: &Path,
    rejects: OrderRejects,
) -> Result<Option<PathBuf>, LoadError> {
    let mut file = RejectsFile::new(path);
    rejects.write(&mut file).map_err(|e| output(path, e))?;
    file.finish().map_err(|e| output(path, e))
}

/// The rejects file's error as the run's output error, which names the file
/// itself: a [`SourceError::Write`] of that file gives only its cause (it
/// read `cannot write F: cannot write F: …` before).
fn output(path: &Path, e: SourceError) -> LoadError {
    let message = match e {
        SourceError::Write { file, source } if file == path => source.to_string(),
        e => e.to_string(),
    };
    LoadError::Output {
        path: path.to_path_buf(),
        message,
    }
}

//! A dry run's plan file, written chunk by chunk as the rows are decided:
//! `row_number,email,action,detail`, a line per input row, never held
//! whole (a ten-million-row dry run holds a chunk's lines).
//!
//! Decision: lines are sorted by row number within each chunk, and chunks
//! follow each other. A chunk covers the rows after the previous one's, so
//! for a source of one file this is the file sorted by row number whole, as
//! the plan always was. A source of several files restarts its row numbers
//! with each file: their lines are sorted together within a chunk (small
//! sources, one chunk: as before), and chunk after chunk beyond that, so a
//! large multi-file plan reads file after file instead of interleaving
//! them. Mirror mode's removals (row 0) come first: they are planned before
//! the first chunk is written, and go in with it.

use super::{Action, LoadError, PlanRow};
use crate::source::RejectRow;
use listpipe_base::state_file::{Access, Pending};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The plan of one step, being written; [`PlanFile::commit`] puts it under
/// its name (a step that fails leaves the plan of an earlier run).
pub struct PlanFile {
    path: PathBuf,
    pending: Pending,
    out: csv::Writer<File>,
}

impl PlanFile {
    /// Starts the file at `path` with its header.
    pub fn create(path: &Path) -> Result<Self, LoadError> {
        let mut pending =
            Pending::new(path, Access::Shared).map_err(|e| output(path, &e.source))?;
        let file = pending.file().try_clone().map_err(|e| output(path, &e))?;
        let mut out = csv::Writer::from_writer(file);
        out.write_record(["row_number", "email", "action", "detail"])
            .map_err(|e| output(path, &e))?;
        Ok(PlanFile {
            path: path.to_path_buf(),
            pending,
            out,
        })
    }

    /// Writes one chunk's lines sorted by row number (lines of one row
    /// number in the order given) and empties `rows` for the next chunk.
    pub fn chunk(&mut self, rows: &mut Vec<PlanRow>) -> Result<(), LoadError> {
        rows.sort_by_key(|r| r.row_number);
        for r in rows.drain(..) {
            self.out
                .write_record([
                    r.row_number.to_string().as_str(),
                    &r.email,
                    r.action.as_str(),
                    &r.detail,
                ])
                .map_err(|e| output(&self.path, &e))?;
        }
        Ok(())
    }

    /// Puts the plan under its name, atomically ([`listpipe_base::state_file`]).
    pub fn commit(self) -> Result<PathBuf, LoadError> {
        let PlanFile { path, pending, out } = self;
        // The bytes written through the clone are synced by the commit.
        drop(out.into_inner().map_err(|e| output(&path, e.error()))?);
        pending.commit().map_err(|e| output(&path, &e.source))?;
        Ok(path)
    }
}

/// A rejected row's plan line: `invalid`, with its field and reason.
pub fn invalid(r: &RejectRow) -> PlanRow {
    PlanRow {
        row_number: r.row_number,
        email: String::new(),
        action: Action::Invalid,
        detail: if r.field.is_empty() {
            r.reason.clone()
        } else {
            format!("{}: {}", r.field, r.reason)
        },
    }
}

fn output(path: &Path, e: &dyn std::fmt::Display) -> LoadError {
    LoadError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(row_number: u64, email: &str) -> PlanRow {
        PlanRow {
            row_number,
            email: email.into(),
            action: Action::Create,
            detail: String::new(),
        }
    }

    #[test]
    fn chunks_of_increasing_rows_make_the_plan_sorted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plans/p/s.plan.csv");
        let mut plan = PlanFile::create(&path).unwrap();
        let mut rows = vec![line(4, "d@x"), line(2, "b@x")];
        rows.push(invalid(&RejectRow {
            file: None,
            values: Vec::new(),
            row_number: 3,
            field: "email".into(),
            reason: "not an email address".into(),
        }));
        plan.chunk(&mut rows).unwrap();
        assert!(rows.is_empty());
        assert!(!path.exists(), "the plan appears when complete");
        plan.chunk(&mut vec![line(6, "f@x"), line(5, "e@x")])
            .unwrap();
        assert_eq!(plan.commit().unwrap(), path);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "row_number,email,action,detail\n2,b@x,create,\n3,,invalid,email: not an email address\n\
             4,d@x,create,\n5,e@x,create,\n6,f@x,create,\n"
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("plans/p"))
                .unwrap()
                .count(),
            1
        );
    }
}

//! A rejects file written as rows fail, not built in memory: a misconfigured step that
//! rejects every row of a ten-million-row file writes ten million lines, holding a write
//! buffer. The file is made with the first reject, under a temporary name beside the real
//! one ([`listpipe_base::state_file::Pending`]) and renamed when complete, so a crash never leaves
//! half a file under the real name; a step that rejects nothing removes a stale file of
//! an earlier run instead.
//!
//! Decision: whether the file has a `file` column is known only once the source is read
//! to its end (a second file may come after the first's rejects are written). Rows are
//! written as soon as they come without it, and the file is rewritten once, with each
//! row's file name added, when a second file turns up: the rows before then are all of
//! the first file. A rewrite reads back what it wrote, so it costs a second pass only for
//! a source of several files whose first file had rejects.

use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ::csv::{ByteRecord, ReaderBuilder};

use super::reject_spool::RejectSpool;
use super::rejects::Renderer;
use super::{RejectRow, RejectsFormat, SourceError, encoding};
use listpipe_base::state_file::{Access, Pending};

/// One step's rejects file, being written.
pub struct RejectsFile {
    path: PathBuf,
    format: Option<RejectsFormat>,
    open: Option<Open>,
    /// While the format has no `file` column: the file of the rows written so far.
    first_file: Option<String>,
    rows: u64,
}

struct Open {
    pending: Pending,
    out: Renderer<File>,
}

impl RejectsFile {
    /// Nothing is written before the first row.
    pub fn new(path: &Path) -> Self {
        RejectsFile {
            path: path.to_path_buf(),
            format: None,
            open: None,
            first_file: None,
            rows: 0,
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn error(&self, source: io::Error) -> SourceError {
        SourceError::Write {
            file: self.path.clone(),
            source,
        }
    }

    /// The format of the rows to come. The first one given fixes the columns, the
    /// dialect and the BOM; a later one only adds the `file` column, once the source is
    /// known to have several files (rewriting the rows written before).
    pub fn follow(&mut self, format: RejectsFormat) -> Result<(), SourceError> {
        match &mut self.format {
            None => self.format = Some(format),
            Some(have) if format.multi_file && !have.multi_file => {
                have.multi_file = true;
                if self.open.is_some() {
                    self.add_file_column().map_err(|e| self.error(e))?;
                }
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Writes `rows` after the ones before.
    pub fn write(&mut self, rows: &[RejectRow]) -> Result<(), SourceError> {
        rows.iter()
            .try_for_each(|r| self.push(r))
            .map_err(|e| self.error(e))
    }

    /// Writes the rows set aside in `spool` after the ones before, in the order they
    /// were set aside, or sorted by file and row number when `sorted`.
    pub fn append(&mut self, spool: RejectSpool, sorted: bool) -> Result<(), SourceError> {
        let mut each = |row: RejectRow| self.push(&row);
        let done = if sorted {
            spool.drain_sorted(&mut each)
        } else {
            spool.drain(&mut each)
        };
        done.map_err(|e| self.error(e))
    }

    fn push(&mut self, row: &RejectRow) -> io::Result<()> {
        if self.open.is_none() {
            self.open = Some(self.start()?);
        }
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        if !open.out.multi_file() && self.first_file.is_none() {
            self.first_file.clone_from(&row.file);
        }
        open.out.row(row)?;
        self.rows += 1;
        Ok(())
    }

    /// The temporary file with the BOM and the header.
    fn start(&self) -> io::Result<Open> {
        let format = self.format.as_ref().ok_or_else(|| {
            io::Error::other("internal error: rejected rows came before their columns")
        })?;
        let mut pending = Pending::new(&self.path, Access::Shared).map_err(|e| e.source)?;
        let file = pending.file().try_clone()?;
        let out = Renderer::new(file, format)?;
        Ok(Open { pending, out })
    }

    /// Writes the file again with the `file` column: its rows so far, each of the first
    /// file, read back from the temporary file.
    fn add_file_column(&mut self) -> io::Result<()> {
        let Some(old) = self.open.take() else {
            return Ok(());
        };
        let Some(format) = &self.format else {
            return Ok(());
        };
        let mut written = old.out.finish()?;
        let bom = if format.bom {
            encoding::UTF8_BOM.len()
        } else {
            0
        };
        written.seek(SeekFrom::Start(bom as u64))?;
        let mut fresh = self.start()?;
        let width = fresh.out.width();
        let name = self.first_file.clone().unwrap_or_default();
        let mut reader = ReaderBuilder::new()
            .delimiter(format.dialect.delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(BufReader::new(written));
        let (mut record, mut wider) = (ByteRecord::new(), ByteRecord::new());
        // The header is written by `start`, with `file`.
        let mut header = true;
        while reader.read_byte_record(&mut record)? {
            if std::mem::take(&mut header) {
                continue;
            }
            wider.clear();
            record.iter().take(width).for_each(|f| wider.push_field(f));
            wider.push_field(name.as_bytes());
            record.iter().skip(width).for_each(|f| wider.push_field(f));
            fresh.out.record(&wider)?;
        }
        // The old temporary file goes with `old`.
        drop(old.pending);
        self.open = Some(fresh);
        Ok(())
    }

    /// Puts the file under its real name, and answers it; with no row, removes a file
    /// an earlier run left there and answers None.
    pub fn finish(self) -> Result<Option<PathBuf>, SourceError> {
        let Some(open) = self.open else {
            // An earlier run's file that stays would be read as this run's.
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SourceError::Write {
                    file: self.path.clone(),
                    source: e,
                }),
                _ => Ok(None),
            };
        };
        let error = |source| SourceError::Write {
            file: self.path.clone(),
            source,
        };
        drop(open.out.finish().map_err(error)?);
        open.pending.commit().map_err(|e| error(e.source))?;
        Ok(Some(self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::rejects::tests::{dialect, format, render};
    use crate::source::{LineEnding, RENDER_BUFFER, TextEncoding};

    fn row(file: &str, row_number: u64, values: &[&str]) -> RejectRow {
        RejectRow {
            file: Some(file.into()),
            values: values.iter().map(|v| Some(v.to_string())).collect(),
            row_number,
            field: "email".into(),
            reason: "not an email address".into(),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_second_file_adds_the_file_column_to_the_rows_written_before_it() {
        // Cells that need quoting in the file, and a ragged row's extra values, survive
        // being read back and written again.
        let first = [
            row("a.csv", 2, &["x;y", "say \"hi\"", "extra"]),
            row("a.csv", 5, &["line\r\nbreak", ""]),
        ];
        let second = [row("b.csv", 2, &["z@", "ok"])];
        for (delimiter, line_ending, encoding) in [
            (b';', LineEnding::Crlf, TextEncoding::Utf8Bom),
            (b'\t', LineEnding::Lf, TextEncoding::Utf8),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.csv");
            let d = dialect(delimiter, encoding, line_ending);
            let mut file = RejectsFile::new(&path);
            file.follow(format(&["email", "name"], d.clone(), false))
                .unwrap();
            file.write(&first).unwrap();
            file.follow(format(&["email", "name"], d.clone(), true))
                .unwrap();
            file.write(&second).unwrap();
            assert_eq!(file.rows(), 3);
            file.finish().unwrap();
            let all: Vec<RejectRow> = first.iter().chain(&second).cloned().collect();
            let multi = format(&["email", "name"], d.clone(), true);
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                render(&multi, &all)
            );
            assert_eq!(names(dir.path()), ["r.csv"]);
        }
    }

    #[test]
    fn a_later_second_file_with_no_rows_of_its_own_still_adds_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Lf);
        let mut file = RejectsFile::new(&path);
        file.follow(format(&["email"], d.clone(), false)).unwrap();
        file.write(&[row("a.csv", 3, &["x"])]).unwrap();
        file.follow(format(&["email"], d, true)).unwrap();
        file.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "email,file,row_number,field,reason\nx,a.csv,3,email,not an email address\n"
        );
    }

    #[test]
    fn nothing_rejected_writes_no_file_and_removes_one_an_earlier_run_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        std::fs::write(&path, "stale").unwrap();
        let mut file = RejectsFile::new(&path);
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Lf);
        file.follow(format(&["email"], d, false)).unwrap();
        file.write(&[]).unwrap();
        assert_eq!(file.finish().unwrap(), None);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn a_file_never_finished_leaves_the_earlier_one_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        std::fs::write(&path, "earlier").unwrap();
        let mut file = RejectsFile::new(&path);
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Lf);
        file.follow(format(&["email"], d, false)).unwrap();
        file.write(&[row("a.csv", 2, &["x"])]).unwrap();
        assert_eq!(
            names(dir.path()).len(),
            2,
            "the rows go to a temporary file"
        );
        drop(file);
        assert_eq!(names(dir.path()), ["r.csv"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier");
    }

    #[test]
    fn the_writer_holds_no_more_than_its_buffer_whatever_the_rows() {
        // Rows of one length each: the file on disk must keep up with what was written,
        // short of the buffer at most, however many rows have come.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let d = dialect(b',', TextEncoding::Utf8, LineEnding::Lf);
        let f = format(&["email", "name"], d, false);
        let one = |n: u64| row("a.csv", 1_000_000 + n, &["not-an-address", "Name"]);
        let header = render(&f, &[]).len() as u64;
        let line = render(&f, &[one(0)]).len() as u64 - header;
        let mut file = RejectsFile::new(&path);
        file.follow(f).unwrap();
        let (batch, batches) = (1_000, 60);
        for b in 0..batches {
            let rows: Vec<RejectRow> = (0..batch).map(|i| one(b * batch + i)).collect();
            file.write(&rows).unwrap();
            let Some(open) = &file.open else {
                panic!("the file is open");
            };
            let on_disk = std::fs::metadata(open.pending.temp_path()).unwrap().len();
            let given = header + line * (b + 1) * batch;
            assert!(
                on_disk + RENDER_BUFFER as u64 >= given,
                "after {} rows: {on_disk} bytes on disk of {given}",
                (b + 1) * batch
            );
        }
        file.finish().unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            header + line * batch * batches
        );
    }
}

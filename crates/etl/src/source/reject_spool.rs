//! Rejected rows set aside on disk until their turn in a rejects file: the rows a target
//! refused (written after every row the step rejected itself) and the rejects of a joined
//! orders source (written sorted by file and row once its second read is done). Memory
//! holds a write buffer and one entry per run of ascending rows, never the rows.
//!
//! Decision: a plain length-prefixed record per row in a temporary file with no name
//! (`TMPDIR`, out of the folder from the start, so that no run, however it ends, leaves
//! it behind; runs are read back with positioned reads), not CSV: the rows' final format (whether a
//! `file` column is wanted) is only known when the source is read to its end, and a
//! length prefix reads back without any quoting rule.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};

use std::sync::Arc;

use super::RejectRow;
use crate::spill::SpillError;

/// A run of rows of one file in ascending row order, at `start..end` of the file.
struct Run {
    file: Option<String>,
    start: u64,
    end: u64,
    last_row: u64,
}

/// Rows on disk, read back in the order they came ([`RejectSpool::drain`]) or sorted
/// ([`RejectSpool::drain_sorted`]). The file is made with the first row.
#[derive(Default)]
pub struct RejectSpool {
    temp: Option<(Arc<File>, BufWriter<File>)>,
    written: u64,
    rows: u64,
    runs: Vec<Run>,
}

fn spill_error(source: io::Error) -> SpillError {
    SpillError::Io {
        dir: std::env::temp_dir(),
        source,
    }
}

impl RejectSpool {
    pub fn new() -> Self {
        RejectSpool::default()
    }

    /// Rows set aside.
    pub fn len(&self) -> u64 {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Sets `row` aside after the ones before it.
    pub fn push(&mut self, row: &RejectRow) -> Result<(), SpillError> {
        if self.temp.is_none() {
            let temp = tempfile::tempfile().map_err(spill_error)?;
            let file = temp.try_clone().map_err(spill_error)?;
            self.temp = Some((Arc::new(temp), BufWriter::new(file)));
        }
        let Some((_, out)) = self.temp.as_mut() else {
            return Ok(());
        };
        let start = self.written;
        self.written += encode(out, row).map_err(spill_error)?;
        self.rows += 1;
        match self.runs.last_mut() {
            Some(run) if run.file == row.file && run.last_row <= row.row_number => {
                run.end = self.written;
                run.last_row = row.row_number;
            }
            _ => self.runs.push(Run {
                file: row.file.clone(),
                start,
                end: self.written,
                last_row: row.row_number,
            }),
        }
        Ok(())
    }

    /// Hands every row to `each` in the order they were set aside.
    pub fn drain(self, each: &mut dyn FnMut(RejectRow) -> io::Result<()>) -> io::Result<()> {
        let written = self.written;
        let Some(temp) = self.finish_writing()? else {
            return Ok(());
        };
        let mut reader = RunReader::open(&temp, 0, written)?;
        while let Some(row) = reader.next()? {
            each(row)?;
        }
        Ok(())
    }

    /// Hands every row to `each` sorted by file and row number; rows of equal keys keep
    /// the order they were set aside in (what a stable sort of them all gives), merged
    /// from the runs of ascending rows they were set aside in.
    pub fn drain_sorted(
        mut self,
        each: &mut dyn FnMut(RejectRow) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut runs = std::mem::take(&mut self.runs);
        let Some(temp) = self.finish_writing()? else {
            return Ok(());
        };
        // A stable sort: runs of one file keep their order, which breaks ties.
        runs.sort_by(|a, b| a.file.cmp(&b.file));
        let mut from = 0;
        while from < runs.len() {
            let to = from + runs[from..].partition_point(|r| r.file == runs[from].file);
            merge(&temp, &runs[from..to], each)?;
            from = to;
        }
        Ok(())
    }

    fn finish_writing(self) -> io::Result<Option<Arc<File>>> {
        match self.temp {
            None => Ok(None),
            Some((temp, mut out)) => {
                out.flush()?;
                Ok(Some(temp))
            }
        }
    }
}

/// Merges runs of one file by row number, the earlier run first on a tie.
fn merge(
    temp: &Arc<File>,
    runs: &[Run],
    each: &mut dyn FnMut(RejectRow) -> io::Result<()>,
) -> io::Result<()> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heads: Vec<Option<RejectRow>> = Vec::with_capacity(runs.len());
    for run in runs {
        let mut reader = RunReader::open(temp, run.start, run.end)?;
        heads.push(reader.next()?);
        readers.push(reader);
    }
    loop {
        let next = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some((h.as_ref()?.row_number, i)))
            .min();
        let Some((_, i)) = next else {
            return Ok(());
        };
        let row = heads[i].take();
        heads[i] = readers[i].next()?;
        if let Some(row) = row {
            each(row)?;
        }
    }
}

/// The rows of `start..end` of the spool, one after the other.
struct RunReader {
    input: io::Take<BufReader<At>>,
}

/// The spool's file read from `at` on with positioned reads, so that several
/// readers share one file (it has no name to open it again by).
struct At {
    file: Arc<File>,
    at: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(&*self.file, buf, self.at)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(&*self.file, buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl RunReader {
    fn open(temp: &Arc<File>, start: u64, end: u64) -> io::Result<Self> {
        let file = At {
            file: Arc::clone(temp),
            at: start,
        };
        // A small buffer: a merge holds one per run.
        let input = BufReader::with_capacity(8 * 1024, file).take(end - start);
        Ok(RunReader { input })
    }

    fn next(&mut self) -> io::Result<Option<RejectRow>> {
        if self.input.limit() == 0 {
            return Ok(None);
        }
        decode(&mut self.input).map(Some)
    }
}

/// Writes `row`; answers the bytes written.
fn encode(out: &mut impl Write, row: &RejectRow) -> io::Result<u64> {
    let mut n = put_opt(out, row.file.as_deref())?;
    out.write_all(&row.row_number.to_le_bytes())?;
    n += 8 + put_str(out, &row.field)? + put_str(out, &row.reason)?;
    n += put_len(out, row.values.len())?;
    for v in &row.values {
        n += put_opt(out, v.as_deref())?;
    }
    Ok(n)
}

fn put_len(out: &mut impl Write, len: usize) -> io::Result<u64> {
    let len = u32::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a rejected cell over 4 GiB"))?;
    out.write_all(&len.to_le_bytes())?;
    Ok(4)
}

fn put_str(out: &mut impl Write, s: &str) -> io::Result<u64> {
    let n = put_len(out, s.len())?;
    out.write_all(s.as_bytes())?;
    Ok(n + s.len() as u64)
}

fn put_opt(out: &mut impl Write, s: Option<&str>) -> io::Result<u64> {
    match s {
        None => {
            out.write_all(&[0])?;
            Ok(1)
        }
        Some(s) => {
            out.write_all(&[1])?;
            Ok(1 + put_str(out, s)?)
        }
    }
}

fn decode(input: &mut impl Read) -> io::Result<RejectRow> {
    let file = get_opt(input)?;
    let mut number = [0u8; 8];
    input.read_exact(&mut number)?;
    let field = get_str(input)?;
    let reason = get_str(input)?;
    let count = get_len(input)?;
    let values = (0..count)
        .map(|_| get_opt(input))
        .collect::<io::Result<_>>()?;
    Ok(RejectRow {
        file,
        values,
        row_number: u64::from_le_bytes(number),
        field,
        reason,
    })
}

fn get_len(input: &mut impl Read) -> io::Result<usize> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    Ok(u32::from_le_bytes(len) as usize)
}

fn get_str(input: &mut impl Read) -> io::Result<String> {
    let len = get_len(input)?;
    let mut bytes = Vec::new();
    input.take(len as u64).read_to_end(&mut bytes)?;
    if bytes.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn get_opt(input: &mut impl Read) -> io::Result<Option<String>> {
    let mut tag = [0u8; 1];
    input.read_exact(&mut tag)?;
    match tag[0] {
        0 => Ok(None),
        _ => get_str(input).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(file: Option<&str>, row_number: u64, values: &[Option<&str>]) -> RejectRow {
        RejectRow {
            file: file.map(String::from),
            values: values.iter().map(|v| v.map(String::from)).collect(),
            row_number,
            field: "email".into(),
            reason: format!("reason of {row_number}; \"quoted\"\nand a new line"),
        }
    }

    fn drained(spool: RejectSpool, sorted: bool) -> Vec<RejectRow> {
        let mut out = Vec::new();
        let mut each = |r| {
            out.push(r);
            Ok(())
        };
        if sorted {
            spool.drain_sorted(&mut each).unwrap();
        } else {
            spool.drain(&mut each).unwrap();
        }
        out
    }

    #[test]
    fn rows_read_back_in_the_order_they_were_set_aside_with_every_cell() {
        let rows = [
            row(Some("b.csv"), 9, &[Some("x@"), None, Some("")]),
            row(None, 2, &[]),
            row(Some("a.csv"), 3, &[Some("Zoë"), Some("ünïcode ✓")]),
        ];
        let mut spool = RejectSpool::new();
        rows.iter().for_each(|r| spool.push(r).unwrap());
        assert_eq!(spool.len(), 3);
        assert_eq!(drained(spool, false), rows);
        assert!(drained(RejectSpool::new(), false).is_empty());
    }

    #[test]
    fn sorted_rows_come_as_a_stable_sort_by_file_and_row_gives_them() {
        // Two reads of two files (the second file named first), each ascending, as an
        // orders source's mapping rejects and then its orphans come; a tie on (file, row)
        // keeps the order set aside.
        let pushed = [
            row(Some("b.csv"), 2, &[Some("first read")]),
            row(Some("b.csv"), 7, &[]),
            row(Some("a.csv"), 4, &[]),
            row(Some("a.csv"), 5, &[]),
            row(Some("b.csv"), 3, &[Some("second read")]),
            row(Some("b.csv"), 7, &[Some("tie, set aside later")]),
            row(Some("a.csv"), 2, &[]),
            row(None, 1, &[]),
        ];
        let mut spool = RejectSpool::new();
        pushed.iter().for_each(|r| spool.push(r).unwrap());
        let mut expected = pushed.to_vec();
        expected.sort_by(|a, b| (&a.file, a.row_number).cmp(&(&b.file, b.row_number)));
        assert_eq!(drained(spool, true), expected);
    }
}

//! A temporary on-disk table for run state that would otherwise grow with the
//! input (the receivers a target holds, the order lines of a joined file):
//! values kept under 128-bit keys ([`listpipe_base::hash::Key128`]) in a SQLite file
//! in `TMPDIR`, removed from its folder as soon as it is open: the open file
//! lives on until the connection closes, and nothing is left behind however
//! the run ends (Ctrl-C, `kill -9`, a scheduler's timeout). A file removed
//! when the spill was dropped was left, up to gigabytes of it, by every
//! interrupted run. (Not SQLite's own temporary database, the empty name:
//! this build keeps that one in memory.)
//!
//! SQLite because the server already builds it: a B-tree on disk with a
//! bounded page cache, so memory stays flat whatever the table holds. The
//! file is scratch, never state: no journal, no fsync; a crash loses it and
//! the next run builds it again. One connection owns the file
//! (`locking_mode = EXCLUSIVE`): without it every lookup took and released
//! a file lock, two system calls a row (measured with `perf`).
//!
//! The key index is built at the first read, not kept up while the table
//! fills: most spills are written whole and then read (a group's receivers,
//! an orders file), and one sort of the keys at the end is several times
//! faster than a random insert into the index per entry (measured with
//! SQLite's shell: 5M random keys, 34.8 s inserted into the index as they
//! came, 13.3 s appended and then indexed). Entries added after the first
//! read go into the index as they come.

use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

/// Page cache of the spill's connection: what it holds in memory at most.
/// Small: a run of ten million rows has three spills open at once (order
/// lines, addresses kept, the target's receivers), their files are far
/// larger than any cache, and the operating system's file cache serves the
/// pages the spill's own cache misses (32 MiB each took 96 MiB of a 10M
/// re-import's peak).
const CACHE_KIB: i64 = 8 * 1024;

/// Entries a stage keeps in memory before it moves them to a [`Spill`]
/// (order lines, addresses kept, the rows kept by `last`): two million,
/// about 75 to 170 MB for these kinds. Reading a spill is several times
/// slower than memory (measured: `check` of 1M rows with every store spilled,
/// about 4x), so the default keeps the inputs of a usual run (a million rows
/// and their orders) in memory and bounds the ten-million-row ones. The
/// stages take their budget as a value; `LISTPIPE_SPILL_AFTER`, read by the
/// CLI (`cli::Settings`), replaces this and [`TARGET_SPILL_AFTER`].
pub const SPILL_AFTER: usize = 2_000_000;

/// Receivers of the target's group a re-import keeps in memory before they
/// go to a [`Spill`]: one million, about 125 MB (the bench's receivers).
/// Fewer than the other kinds, because a receiver costs more (its hashes,
/// encoded) and because the group is read while the run holds its other
/// state: at two million, when a receiver cost 237 bytes, the index alone
/// took about 500 MB just before it spilled, over the 512 MiB a run of ten
/// million rows is meant to stay under.
pub const TARGET_SPILL_AFTER: usize = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// `dir`: the folder of temporary files (the spill's file is out of it).
    #[error("temporary spill file in {dir}: {source}")]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("temporary spill file in {dir}: {source}")]
    Sql {
        dir: PathBuf,
        source: rusqlite::Error,
    },
}

impl SpillError {
    /// The folder of temporary files, and what went wrong there.
    pub fn dir_and_reason(&self) -> (PathBuf, String) {
        match self {
            SpillError::Io { dir, source } => (dir.clone(), source.to_string()),
            SpillError::Sql { dir, source } => (dir.clone(), source.to_string()),
        }
    }
}

/// A key → values table on disk. A key may hold several values, read back in
/// the order they were added.
pub struct Spill {
    conn: Connection,
    /// The folder of temporary files (for messages).
    dir: PathBuf,
    /// Whether the key index exists (built at the first read).
    indexed: std::cell::Cell<bool>,
}

fn split(key: u128) -> (i64, i64) {
    ((key >> 64) as u64 as i64, key as u64 as i64)
}

impl Spill {
    /// An empty table in a new temporary database.
    pub fn new() -> Result<Self, SpillError> {
        let dir = std::env::temp_dir();
        let sql = |source| SpillError::Sql {
            dir: dir.clone(),
            source,
        };
        let folder = tempfile::Builder::new()
            .prefix("listpipe-spill")
            .tempdir()
            .map_err(|source| SpillError::Io {
                dir: dir.clone(),
                source,
            })?;
        let conn = Connection::open(folder.path().join("spill.sqlite")).map_err(sql)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = OFF;
             PRAGMA synchronous = OFF;
             PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA temp_store = FILE;
             PRAGMA cache_size = -{CACHE_KIB};
             CREATE TABLE spill (hi INTEGER NOT NULL, lo INTEGER NOT NULL, v BLOB NOT NULL);"
        ))
        .map_err(sql)?;
        // Out of its folder at once: the journal is off and one connection
        // holds the file, so SQLite never opens it by name again.
        if let Err(e) = folder.close() {
            tracing::debug!(target: log_target!(), error = %e, "the spill's folder could not be removed");
        }
        Ok(Spill {
            conn,
            dir,
            indexed: std::cell::Cell::new(false),
        })
    }

    fn sql(&self, source: rusqlite::Error) -> SpillError {
        SpillError::Sql {
            dir: self.dir.clone(),
            source,
        }
    }

    /// Adds every `(key, value)` in one transaction.
    pub fn extend<'a>(
        &mut self,
        items: impl IntoIterator<Item = (u128, &'a [u8])>,
    ) -> Result<(), SpillError> {
        let dir = &self.dir;
        let sql = |source| SpillError::Sql {
            dir: dir.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO spill (hi, lo, v) VALUES (?1, ?2, ?3)")
                .map_err(sql)?;
            for (key, value) in items {
                let (hi, lo) = split(key);
                insert.execute(params![hi, lo, value]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// Builds the key index before the first read.
    fn indexed(&self) -> Result<(), SpillError> {
        if !self.indexed.get() {
            self.conn
                .execute_batch("CREATE INDEX spill_key ON spill (hi, lo)")
                .map_err(|e| self.sql(e))?;
            self.indexed.set(true);
        }
        Ok(())
    }

    /// The values under `key`, in the order they were added, each passed to `each`.
    pub fn for_each(&self, key: u128, mut each: impl FnMut(&[u8])) -> Result<(), SpillError> {
        self.indexed()?;
        let (hi, lo) = split(key);
        let mut select = self
            .conn
            .prepare_cached("SELECT v FROM spill WHERE hi = ?1 AND lo = ?2 ORDER BY rowid")
            .map_err(|e| self.sql(e))?;
        let mut rows = select.query(params![hi, lo]).map_err(|e| self.sql(e))?;
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            let v = row.get_ref(0).map_err(|e| self.sql(e))?;
            each(v.as_blob().map_err(|e| self.sql(e.into()))?);
        }
        Ok(())
    }

    /// The first value under `key`, if any.
    pub fn first(&self, key: u128) -> Result<Option<Vec<u8>>, SpillError> {
        self.indexed()?;
        let (hi, lo) = split(key);
        let mut select = self
            .conn
            .prepare_cached("SELECT v FROM spill WHERE hi = ?1 AND lo = ?2 ORDER BY rowid LIMIT 1")
            .map_err(|e| self.sql(e))?;
        select
            .query_row(params![hi, lo], |row| row.get::<_, Vec<u8>>(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// The last value added under `key`, if any.
    pub fn last(&self, key: u128) -> Result<Option<Vec<u8>>, SpillError> {
        self.indexed()?;
        let (hi, lo) = split(key);
        let mut select = self
            .conn
            .prepare_cached(
                "SELECT v FROM spill WHERE hi = ?1 AND lo = ?2 ORDER BY rowid DESC LIMIT 1",
            )
            .map_err(|e| self.sql(e))?;
        select
            .query_row(params![hi, lo], |row| row.get::<_, Vec<u8>>(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// The folder of temporary files the table is in (for messages).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many distinct keys the table holds (a walk of the key index).
    pub fn keys(&self) -> Result<u64, SpillError> {
        self.indexed()?;
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM (SELECT 1 FROM spill GROUP BY hi, lo)",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_under_their_key_in_the_order_they_were_added() {
        let mut s = Spill::new().unwrap();
        let big = u128::MAX - 3;
        s.extend([(1u128, &b"a"[..]), (big, b"x"), (1, b"b")])
            .unwrap();
        s.extend([(1u128, &b"c"[..])]).unwrap();
        let mut got = Vec::new();
        s.for_each(1, |v| got.push(v.to_vec())).unwrap();
        assert_eq!(got, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(s.first(big).unwrap(), Some(b"x".to_vec()));
        assert_eq!(s.first(2).unwrap(), None);
        assert_eq!(s.last(1).unwrap(), Some(b"c".to_vec()));
        assert_eq!(s.last(2).unwrap(), None);
        assert_eq!(s.keys().unwrap(), 2);
    }

    #[test]
    fn entries_added_after_a_read_are_found_too() {
        let mut s = Spill::new().unwrap();
        s.extend([(7u128, &b"a"[..])]).unwrap();
        assert_eq!(s.first(8).unwrap(), None);
        s.extend([(8u128, &b"b"[..]), (7, b"c")]).unwrap();
        assert_eq!(s.first(8).unwrap(), Some(b"b".to_vec()));
        let mut got = Vec::new();
        s.for_each(7, |v| got.push(v.to_vec())).unwrap();
        assert_eq!(got, [b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(s.keys().unwrap(), 2);
    }

    /// Every spill file open is out of its folder (`(deleted)`), so an
    /// interrupted run leaves nothing there.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_spill_file_is_out_of_its_folder_while_it_is_open() {
        let mut s = Spill::new().unwrap();
        // A page cache of 8 pages: the table goes to its file at once.
        s.conn.execute_batch("PRAGMA cache_size = 8").unwrap();
        let value = vec![7u8; 1024];
        s.extend((0..2048u128).map(|k| (k, value.as_slice())))
            .unwrap();
        assert_eq!(s.first(5).unwrap(), Some(value));
        let open: Vec<String> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .map(|p| p.display().to_string())
            .filter(|p| p.contains("listpipe-spill"))
            .collect();
        assert!(!open.is_empty(), "no spill file open");
        assert!(open.iter().all(|p| p.ends_with(" (deleted)")), "{open:?}");
    }
}

//! What an import keeps in memory: the rows of a chunk, and the order lines
//! of a joined source before they move to a temporary file. A value the
//! caller passes down: the CLI reads it from the environment once
//! (`LISTPIPE_CHUNK_ROWS`, `LISTPIPE_SPILL_AFTER`: `cli::Settings`), so a
//! test sets its own budget per call instead of a process-wide variable.

use crate::source;

/// Rows per chunk and order lines kept in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Rows per chunk: [`source::CHUNK_ROWS`] by default.
    pub chunk_rows: usize,
    /// Entries of each kind of the prepare stage's state (order lines of a
    /// joined orders source, addresses kept, the rows `last` keeps, merged
    /// values) held in memory; past it they are kept in a
    /// [`crate::spill::Spill`]. [`crate::spill::SPILL_AFTER`] by default.
    pub spill_after: usize,
}

impl Budget {
    /// This budget with `rows` rows per chunk.
    pub fn with_chunk_rows(self, rows: usize) -> Self {
        Budget {
            chunk_rows: rows,
            ..self
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            chunk_rows: source::CHUNK_ROWS,
            spill_after: crate::spill::SPILL_AFTER,
        }
    }
}

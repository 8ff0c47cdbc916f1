//! What an import keeps in memory: the rows of a chunk, and the order lines
//! of a joined source before they move to a temporary file. Read from the
//! environment once, at the edge (the CLI), and passed down as a value, so a
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
    /// `LISTPIPE_CHUNK_ROWS` and `LISTPIPE_SPILL_AFTER`, or the defaults.
    pub fn from_env() -> Self {
        Budget {
            chunk_rows: chunk_rows(),
            spill_after: crate::spill::spill_after(),
        }
    }

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

/// Rows per chunk: [`source::CHUNK_ROWS`], or `LISTPIPE_CHUNK_ROWS` (a
/// knob for tests and for trading memory against speed).
pub fn chunk_rows() -> usize {
    // A tuning knob: unset, empty or not a positive number means the
    // default, deliberately (the run's results are the same either way).
    std::env::var("LISTPIPE_CHUNK_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(source::CHUNK_ROWS)
}

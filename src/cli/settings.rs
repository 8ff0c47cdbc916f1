//! The tuning knobs of a run, read from the environment once, here at the
//! edge, and handed down as values: the library reads no environment
//! variable of its own (a test sets its own budget per call instead of a
//! process-wide variable).
//!
//! - `LISTPIPE_CHUNK_ROWS`: rows per chunk ([`crate::source::CHUNK_ROWS`]
//!   by default; fewer: less memory, more overhead).
//! - `LISTPIPE_SPILL_AFTER`: entries of each kind of state kept in memory
//!   before they go to a temporary file ([`crate::spill::SPILL_AFTER`] by
//!   default, [`crate::spill::TARGET_SPILL_AFTER`] for the target's
//!   receivers); the tests set it tiny to run every spill path on small
//!   inputs.
//!
//! Either knob unset, empty or not a positive number means its default,
//! deliberately: the run's results are the same either way.

use crate::prepare::Budget;
use crate::{source, spill};

/// The knobs `run` and `check` pass down (`main.rs` reads them once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Rows per chunk, and entries of the prepare stage's state (and of an
    /// earlier run's journal) kept in memory.
    pub budget: Budget,
    /// Receivers of the target's group a re-import keeps in memory for the
    /// diff ([`crate::load::WriteOptions::spill_after`]).
    pub target_spill_after: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            budget: Budget::default(),
            target_spill_after: spill::TARGET_SPILL_AFTER,
        }
    }
}

impl Settings {
    /// `LISTPIPE_CHUNK_ROWS` and `LISTPIPE_SPILL_AFTER`, or the defaults.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings the variables `var` answers for give.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let positive = |name| {
            var(name)
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&n| n > 0)
        };
        let spill_after = positive("LISTPIPE_SPILL_AFTER");
        Settings {
            budget: Budget {
                chunk_rows: positive("LISTPIPE_CHUNK_ROWS").unwrap_or(source::CHUNK_ROWS),
                spill_after: spill_after.unwrap_or(spill::SPILL_AFTER),
            },
            target_spill_after: spill_after.unwrap_or(spill::TARGET_SPILL_AFTER),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        Settings::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn unset_means_the_defaults() {
        assert_eq!(settings(&[]), Settings::default());
        assert_eq!(
            Settings::default(),
            Settings {
                budget: Budget {
                    chunk_rows: source::CHUNK_ROWS,
                    spill_after: spill::SPILL_AFTER,
                },
                target_spill_after: spill::TARGET_SPILL_AFTER,
            }
        );
    }

    #[test]
    fn positive_numbers_set_the_knobs() {
        let s = settings(&[
            ("LISTPIPE_CHUNK_ROWS", "1000"),
            ("LISTPIPE_SPILL_AFTER", "10"),
        ]);
        assert_eq!(s.budget.chunk_rows, 1000);
        // One variable for every kind, the target's receivers too.
        assert_eq!(s.budget.spill_after, 10);
        assert_eq!(s.target_spill_after, 10);
        // The tests' "whole source as one chunk".
        let whole = settings(&[("LISTPIPE_CHUNK_ROWS", "18446744073709551615")]);
        assert_eq!(whole.budget.chunk_rows, usize::MAX);
    }

    #[test]
    fn empty_zero_or_garbage_means_the_default() {
        for bad in ["", "0", "-5", "many", " 10", "1e3"] {
            let s = settings(&[("LISTPIPE_CHUNK_ROWS", bad), ("LISTPIPE_SPILL_AFTER", bad)]);
            assert_eq!(s, Settings::default(), "{bad:?}");
        }
    }
}

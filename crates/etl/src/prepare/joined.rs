//! Orders from their own source, joined to the receivers by address. The
//! source is read chunk by chunk and mapped before the receivers (a
//! receiver is sent with its orders); each chunk of receivers then takes
//! the orders of its addresses ([`JoinedOrders::take`]), and an order row
//! whose address no receiver took is rejected once every receiver is known
//! ([`JoinedOrders::finish`]), its row read again then.
//!
//! What grows with the source: its rows with a valid address, each kept as
//! its line's fields and row index ([`Store`]: in memory up to the budget's
//! `spill_after` rows, then in a temporary file), and one bit per row for
//! the rows no receiver has taken yet. Neither the rows nor their addresses
//! are held as strings. Its rejects wait in a temporary file
//! ([`RejectSpool`]) until they are written, sorted by file and row.

use super::columns::{Errors, map_column, reject_rows};
use super::order_store::{Entries, Store};
use super::orders::{OrderLines, map_orders};
use super::{Budget, PrepareError, PrepareStats};
use crate::pipeline::{Mapping, OrdersSpec, ValueKind};
use crate::source::{RejectRow, RejectSpool, RejectsFile, RejectsFormat, SourceError, SourceSpec};
use listpipe_base::hash::Key128;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

pub(super) struct JoinedOrders {
    source: SourceSpec,
    /// How the source's address column is mapped.
    email: Mapping,
    /// Keys addresses as the step's receivers are keyed.
    keys: Key128,
    store: Store,
    /// The rows with a valid address that no receiver has taken yet: once
    /// every receiver has, the orphans.
    untaken: RowBits,
    /// Order lines taken by a receiver.
    accepted: u64,
    /// Rows refused while mapping, then the orphans.
    rejected: RejectSpool,
    stats: PrepareStats,
    /// Made with the first chunk.
    format: Option<RejectsFormat>,
    files: usize,
    /// Rows per chunk, both reads alike.
    chunk_rows: usize,
}

impl JoinedOrders {
    /// Reads and maps the orders source; `keys` makes the same address keys
    /// as the step's receivers (see [`listpipe_base::hash::KeySet::with_keys`]).
    pub(super) fn read(
        spec: &OrdersSpec,
        source: &SourceSpec,
        base_dir: &Path,
        keys: Key128,
        rejects_bom: Option<bool>,
        budget: Budget,
    ) -> Result<Self, PrepareError> {
        let email_mapping = spec.email.clone().unwrap_or_default();
        let mut joined = JoinedOrders {
            source: source.clone(),
            email: email_mapping.clone(),
            keys: keys.clone(),
            store: Store::default(),
            untaken: RowBits::default(),
            accepted: 0,
            rejected: RejectSpool::new(),
            stats: PrepareStats::default(),
            format: None,
            files: 0,
            chunk_rows: budget.chunk_rows,
        };
        let mut seen_rows = 0u64;
        super::read_chunks(source, base_dir, budget.chunk_rows, &mut |table| {
            let mut errors = Errors::default();
            let by_row = map_column(
                &table,
                &email_mapping,
                ValueKind::Email,
                "email",
                true,
                &mut errors,
            )?;
            let mapped = map_orders(&table, spec, &mut errors)?;
            let mut entries = Entries::default();
            let valid = by_row
                .iter()
                .enumerate()
                .filter(|(i, _)| !errors.0.contains_key(i))
                .filter_map(|(i, e)| Some((i, e?)));
            for (i, e) in valid {
                let row = seen_rows + i as u64;
                joined.untaken.insert(row);
                let line = mapped.has_order(i).then(|| mapped.fields(i));
                entries.push(keys.of(e), row, line.into_iter().flatten());
            }
            joined.store.append(entries, budget.spill_after)?;
            joined.stats.orders_read += (table.frame.height() + table.ragged.len()) as u64;
            spool_sorted(
                &mut joined.rejected,
                reject_rows(&table, &errors, &mut joined.stats)?,
            )?;
            joined
                .format
                .get_or_insert_with(|| RejectsFormat::of(&table, rejects_bom));
            joined.files = table.files.len();
            seen_rows += table.frame.height() as u64;
            Ok(true)
        })?;
        joined.store.seal();
        Ok(joined)
    }

    /// The order lines of a chunk's receivers (`emails`, normalised, each
    /// once in the whole import), each address's in file order; their rows
    /// are taken.
    pub(super) fn take<'a>(
        &mut self,
        emails: impl Iterator<Item = &'a str>,
    ) -> Result<Arc<OrderLines>, PrepareError> {
        let lines = super::orders::lines_of(&self.store, &self.keys, emails, |row| {
            self.untaken.remove(row);
        })?;
        self.accepted += lines.len() as u64;
        Ok(lines)
    }

    /// The rejects, once every receiver has taken its orders.
    pub(super) fn finish(
        mut self,
        base_dir: &Path,
        stats: &mut PrepareStats,
    ) -> Result<OrderRejects, PrepareError> {
        if !self.untaken.is_empty() {
            self.reject_orphans(base_dir)?;
        }
        let mut format = self.format.take().ok_or(PrepareError::Stopped)?;
        format.multi_file = self.files > 1;
        stats.orders_rejected += self.stats.rejected_total();
        stats.orders_read += self.stats.orders_read;
        stats.orders_accepted += self.accepted;
        stats.addresses_trimmed += self.stats.addresses_trimmed;
        for (field, n) in &self.stats.values_left_out {
            let example = self.stats.left_out_examples.get(field);
            stats.count_left_out(field, *n, example.map_or("", String::as_str));
        }
        Ok(OrderRejects {
            format,
            rows: self.rejected,
        })
    }

    /// Reads the source again for the rows no receiver took: their rejects,
    /// "no receiver with the address".
    fn reject_orphans(&mut self, base_dir: &Path) -> Result<(), PrepareError> {
        let mut seen_rows = 0u64;
        let (email, rejected, stats) = (&self.email, &mut self.rejected, &mut self.stats);
        let untaken = &self.untaken;
        super::read_chunks(&self.source, base_dir, self.chunk_rows, &mut |mut table| {
            let height = table.frame.height() as u64;
            let here: Vec<usize> = untaken
                .in_range(seen_rows..seen_rows + height)
                .map(|r| (r - seen_rows) as usize)
                .collect();
            seen_rows += height;
            if here.is_empty() {
                return Ok(true);
            }
            // The mapping's own errors and the ragged rows were counted
            // on the first read.
            let by_row = map_column(
                &table,
                email,
                ValueKind::Email,
                "email",
                true,
                &mut Errors::default(),
            )?;
            let mut errors = Errors::default();
            for i in here {
                if let Some(e) = by_row.get(i) {
                    errors.add(
                        i,
                        "email",
                        e,
                        format!("no receiver with the address \"{e}\" in this import"),
                    );
                }
            }
            table.ragged.clear();
            spool_sorted(rejected, reject_rows(&table, &errors, stats)?)?;
            Ok(true)
        })
    }
}

/// Sets a chunk's rejects aside sorted by file and row (a chunk lists its
/// ragged rows first): each read then sets aside one ascending run per file.
fn spool_sorted(spool: &mut RejectSpool, mut rows: Vec<RejectRow>) -> Result<(), PrepareError> {
    rows.sort_by(|a, b| (&a.file, a.row_number).cmp(&(&b.file, b.row_number)));
    rows.iter().try_for_each(|r| spool.push(r))?;
    Ok(())
}

/// A joined orders source's rejects, waiting on disk: the rows its mapping
/// refused and the orders no receiver took, to be written sorted by file
/// and row.
pub struct OrderRejects {
    format: RejectsFormat,
    rows: RejectSpool,
}

impl OrderRejects {
    /// Writes the rows to `file` (their own rejects file).
    pub fn write(self, file: &mut RejectsFile) -> Result<(), SourceError> {
        file.follow(self.format)?;
        file.append(self.rows, true)
    }

    /// The rows, sorted (tests).
    #[cfg(test)]
    pub(crate) fn rows(self) -> Vec<RejectRow> {
        let mut rows = Vec::new();
        self.rows
            .drain_sorted(&mut |r| {
                rows.push(r);
                Ok(())
            })
            .unwrap();
        rows
    }
}

/// A set of row indices, one bit per row of the source (two megabytes for
/// fifteen million rows).
#[derive(Default)]
struct RowBits(Vec<u64>);

impl RowBits {
    fn insert(&mut self, row: u64) {
        let word = (row / 64) as usize;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (row % 64);
    }

    fn remove(&mut self, row: u64) {
        if let Some(w) = self.0.get_mut((row / 64) as usize) {
            *w &= !(1 << (row % 64));
        }
    }

    fn contains(&self, row: u64) -> bool {
        self.0
            .get((row / 64) as usize)
            .is_some_and(|w| w & (1 << (row % 64)) != 0)
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The rows in `range` in the set, in order.
    fn in_range(&self, range: Range<u64>) -> impl Iterator<Item = u64> + '_ {
        range.filter(|&r| self.contains(r))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ImportChunk, import_chunks};
    use super::*;
    use crate::pipeline::{self, Step};

    #[test]
    fn a_joined_row_without_an_order_id_is_left_out_with_its_receiver_and_rejected_without() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("r.csv"), "email\na@x.de\nb@x.de\n").unwrap();
        std::fs::write(
            dir.path().join("o.csv"),
            "email,id\na@x.de,\nb@x.de,B1\nnobody@x.de,\na@x.de,A1\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("p.toml"),
            "[target]\nurl = \"builtin\"\n[[import]]\nname = \"i\"\nsource = \"r.csv\"\ngroup = \"G\"\n[import.receiver]\nemail = \"email\"\n[import.orders]\nsource = \"o.csv\"\nemail = \"email\"\norder_id = \"id\"\n",
        )
        .unwrap();
        let p = pipeline::load(&dir.path().join("p.toml")).unwrap();
        let Some(Step::Import(step)) = p.steps.into_iter().next() else {
            panic!("an import step");
        };
        for spill_after in [usize::MAX, 1] {
            let budget = Budget {
                chunk_rows: 1,
                spill_after,
            };
            let mut sent = Vec::new();
            let summary = import_chunks(&step, dir.path(), budget, &mut |c: ImportChunk| {
                for e in ["a@x.de", "b@x.de"] {
                    for o in c.orders.of(e).unwrap_or_default() {
                        sent.push(format!("{e} {}", o.order_id));
                    }
                }
                true
            })
            .unwrap();
            assert_eq!(sent, ["a@x.de A1", "b@x.de B1"], "{budget:?}");
            let s = &summary.stats;
            assert_eq!(
                (s.orders_read, s.orders_accepted, s.orders_rejected),
                (4, 2, 1)
            );
            let rejects = summary.order_rejects.unwrap().rows();
            let rows: Vec<(u64, &str)> = rejects
                .iter()
                .map(|r| (r.row_number, r.reason.as_str()))
                .collect();
            assert_eq!(
                rows,
                [(
                    4,
                    "no receiver with the address \"nobody@x.de\" in this import"
                )]
            );
        }
    }

    #[test]
    fn row_bits_answer_the_rows_left_in_a_range_in_order() {
        let mut bits = RowBits::default();
        for row in [3, 64, 65, 200] {
            bits.insert(row);
        }
        bits.remove(64);
        bits.remove(1_000);
        assert!(!bits.is_empty() && !bits.contains(64) && bits.contains(65));
        assert_eq!(bits.in_range(0..100).collect::<Vec<_>>(), [3, 65]);
        assert_eq!(bits.in_range(100..1_000).collect::<Vec<_>>(), [200]);
        [3, 65, 200].into_iter().for_each(|r| bits.remove(r));
        assert!(bits.is_empty());
    }
}

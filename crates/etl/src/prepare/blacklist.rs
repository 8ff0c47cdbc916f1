//! Blacklist steps: addresses (or `*@domain` entries) and comments,
//! validated and deduplicated, chunk by chunk like an import's rows: memory
//! holds one chunk and a 16-byte key per entry kept (for duplicates across
//! chunks), not the source.

use super::columns::{Errors, map_column, reject_rows};
use super::condition::RowTest;
use super::{PrepareError, PrepareStats, value};
use crate::key_store::KeyStore;
use crate::pipeline::{BlacklistStep, ValueKind};
use crate::source::{FILE_COL, ROW_COL, RejectRow, Table, Workbook};
use listpipe_base::hash::Key128;
use std::path::Path;

/// One chunk of a blacklist source, mapped and checked.
pub struct BlacklistChunk {
    /// The chunk's rows, for the rejects of entries the target refuses.
    pub table: Table,
    /// Address (or `*@domain`) and comment, deduplicated, in file order.
    pub entries: Vec<(String, String)>,
    /// The file index and row number of each entry.
    pub rows: Vec<(u32, u64)>,
    /// The chunk's rejected rows (see [`super::ImportChunk::rejects`]).
    pub rejects: Vec<RejectRow>,
}

/// What the whole source came to, once every chunk was handed on.
pub struct BlacklistSummary {
    pub stats: PrepareStats,
    pub workbooks: Vec<Workbook>,
}

/// Reads one blacklist step's source in chunks of the budget's rows, maps
/// and checks each and hands it to `each`, which answers whether to go on.
pub fn blacklist_chunks(
    step: &BlacklistStep,
    base_dir: &Path,
    budget: super::Budget,
    each: &mut dyn FnMut(BlacklistChunk) -> bool,
) -> Result<BlacklistSummary, PrepareError> {
    let mut stats = PrepareStats::default();
    let mut seen = KeyStore::new(Key128::default(), budget.spill_after);
    let (mut chunks, mut files, mut workbooks) = (0, 0, Vec::new());
    super::read_chunks(&step.source, base_dir, budget.chunk_rows, &mut |table| {
        let chunk = prepare_chunk(step, table, &mut seen, &mut stats)?;
        chunks += 1;
        files = chunk.table.files.len();
        workbooks.clone_from(&chunk.table.workbooks);
        Ok(each(chunk))
    })?;
    if chunks == 0 {
        return Err(PrepareError::Stopped);
    }
    stats.files_read(files);
    stats.unread_sheets = workbooks.iter().flat_map(|w| w.unread()).collect();
    Ok(BlacklistSummary { stats, workbooks })
}

/// Maps and checks one chunk: its entries and its rejected rows.
fn prepare_chunk(
    step: &BlacklistStep,
    table: Table,
    seen: &mut KeyStore,
    stats: &mut PrepareStats,
) -> Result<BlacklistChunk, PrepareError> {
    let height = table.frame.height();
    stats.rows_read += (height + table.ragged.len()) as u64;
    stats.padded += table.padded;
    stats.repeated_headers.extend(
        table
            .repeated_headers
            .iter()
            .map(|(file, r)| r.describe(file)),
    );
    let mut errors = Errors::default();
    let emails = map_column(
        &table,
        &step.email,
        ValueKind::Text,
        "email",
        true,
        &mut errors,
    )?;
    let comments = match &step.comment {
        Some(m) => Some(map_column(
            &table,
            m,
            ValueKind::Text,
            "comment",
            false,
            &mut errors,
        )?),
        None => None,
    };
    // Rows the step's `only_if` leaves out are not its rows: no entry, no reject.
    let wanted = step.only_if.as_ref().map(|c| RowTest::new(&table, c));
    let skipped: Vec<bool> = (0..height)
        .map(|i| wanted.as_ref().is_some_and(|w| !w.holds(i)))
        .collect();
    errors.0.retain(|i, _| !skipped[*i]);
    stats.skipped += skipped.iter().filter(|s| **s).count() as u64;
    let rows = table.frame.column(ROW_COL)?.u32()?;
    let files = table.frame.column(FILE_COL)?.u32()?;
    let mut valid = Vec::new();
    let mut entries = Vec::new();
    let mut kept_rows = Vec::new();
    for (i, email) in emails.iter().enumerate() {
        let Some(email) = email else { continue };
        if skipped[i] {
            continue;
        }
        let rules = step.email.email_rules;
        let normalised = match email.trim().strip_prefix("*@") {
            // A whole domain: checked as an address at it, kept in the
            // domain's normalised (ASCII) form.
            Some(domain) => value::normalize_email(&format!("x@{domain}"), rules)
                .map(|e| format!("*@{}", &e[2..])),
            None => value::normalize_email(email, rules),
        };
        match normalised {
            Err(reason) => errors.add(i, "email", email, reason),
            Ok(e) => valid.push((i, e)),
        }
    }
    let fresh = seen.fresh(valid.iter().map(|(_, e)| e.as_str()))?;
    for ((i, e), fresh) in valid.into_iter().zip(fresh) {
        if !fresh {
            stats.duplicates += 1;
            continue;
        }
        let comment = comments.as_ref().and_then(|c| c.get(i)).unwrap_or("");
        entries.push((e, comment.to_string()));
        kept_rows.push((files.get(i).unwrap_or(0), rows.get(i).unwrap_or(0) as u64));
    }
    let rejects = reject_rows(&table, &errors, stats)?;
    Ok(BlacklistChunk {
        table,
        entries,
        rows: kept_rows,
        rejects,
    })
}

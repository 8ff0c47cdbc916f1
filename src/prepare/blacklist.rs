//! Blacklist steps: addresses (or `*@domain` entries) and comments,
//! validated and deduplicated.

use super::columns::{Errors, map_column, reject_rows};
use super::condition::RowTest;
use super::{PrepareError, PrepareStats, PreparedBlacklist, Rejects, value};
use crate::pipeline::{BlacklistStep, ValueKind};
use crate::source::{self, FILE_COL, ROW_COL};
use std::collections::HashSet;
use std::path::Path;

/// Maps and validates one blacklist step's source.
pub fn prepare_blacklist(
    step: &BlacklistStep,
    base_dir: &Path,
) -> Result<PreparedBlacklist, PrepareError> {
    let table = source::read(&step.source, base_dir)?;
    let height = table.frame.height();
    let mut stats = PrepareStats {
        rows_read: (height + table.ragged.len()) as u64,
        padded: table.padded,
        ..Default::default()
    };
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
    stats.skipped = skipped.iter().filter(|s| **s).count() as u64;
    let rows = table.frame.column(ROW_COL)?.u32()?;
    let files = table.frame.column(FILE_COL)?.u32()?;
    let mut seen = HashSet::new();
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
            Ok(e) if !seen.insert(e.clone()) => stats.duplicates += 1,
            Ok(e) => {
                entries.push((
                    e,
                    comments
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .unwrap_or("")
                        .to_string(),
                ));
                kept_rows.push((files.get(i).unwrap_or(0), rows.get(i).unwrap_or(0) as u64));
            }
        }
    }
    let mut rejects = Rejects::new(&table, step.rejects_bom);
    rejects.rows = reject_rows(&table, &errors, &mut stats)?;
    stats.files_read(table.files.len());
    Ok(PreparedBlacklist {
        table,
        entries,
        rows: kept_rows,
        rejects,
        stats,
    })
}

//! Addresses at a domain one letter off a big provider (`anna@gmial.com`):
//! almost always a typo, but possibly a real domain, so a warning with the
//! rows to look at rather than a reject (see [`listpipe_api::email::suggest_domain`]).

use crate::source::ROW_COL;
use listpipe_base::hash::FastMap;
use polars::prelude::{DataFrame, PolarsResult, StringChunked};
use serde::Serialize;
use std::collections::BTreeMap;

/// Example rows a warning lists.
const EXAMPLE_ROWS: usize = 5;

/// The valid addresses at one likely misspelt domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainTypo {
    pub domain: String,
    /// The domain it is probably a misspelling of.
    pub suggestion: String,
    pub count: u64,
    /// The first rows (as a spreadsheet numbers them) at that domain.
    pub rows: Vec<u64>,
}

impl DomainTypo {
    /// The warning as the summaries show it.
    pub fn describe(&self) -> String {
        let rows: Vec<String> = self.rows.iter().map(u64::to_string).collect();
        format!(
            "{} address{} at \"{}\" (row{} {}{}): did you mean \"{}\"?",
            self.count,
            if self.count == 1 { "" } else { "es" },
            self.domain,
            if self.rows.len() == 1 { "" } else { "s" },
            rows.join(", "),
            if self.count as usize > self.rows.len() {
                ", ..."
            } else {
                ""
            },
            self.suggestion
        )
    }
}

/// The likely misspelt domains among `emails` (normalised addresses, one
/// per row of `frame`, empty where the row was rejected), in domain order.
pub fn find(frame: &DataFrame, emails: &StringChunked) -> PolarsResult<Vec<DomainTypo>> {
    let rows = frame.column(ROW_COL)?.u32()?;
    let mut found: BTreeMap<&str, DomainTypo> = BTreeMap::new();
    // A file has few distinct domains: each is looked at once.
    let mut seen: FastMap<&str, Option<&'static str>> = FastMap::default();
    for (i, email) in emails.iter().enumerate() {
        let Some(domain) = email.and_then(|e| e.rsplit_once('@')).map(|(_, d)| d) else {
            continue;
        };
        let suggested = *seen
            .entry(domain)
            .or_insert_with(|| listpipe_api::email::suggest_domain(domain));
        let Some(suggestion) = suggested else {
            continue;
        };
        let typo = found.entry(domain).or_insert_with(|| DomainTypo {
            domain: domain.to_string(),
            suggestion: suggestion.to_string(),
            count: 0,
            rows: Vec::new(),
        });
        typo.count += 1;
        if typo.rows.len() < EXAMPLE_ROWS {
            typo.rows.push(u64::from(rows.get(i).unwrap_or(0)));
        }
    }
    Ok(found.into_values().collect())
}

/// Adds one chunk's typos to the ones found before, as one pass over the
/// whole input would have counted them (in domain order).
pub fn merge(into: &mut Vec<DomainTypo>, more: Vec<DomainTypo>) {
    for typo in more {
        match into.iter_mut().find(|t| t.domain == typo.domain) {
            Some(t) => {
                t.count += typo.count;
                let room = EXAMPLE_ROWS.saturating_sub(t.rows.len());
                t.rows.extend(typo.rows.into_iter().take(room));
            }
            None => into.push(typo),
        }
    }
    into.sort_by(|a, b| a.domain.cmp(&b.domain));
}

//! Which global attributes the exported receivers hold. Global attributes
//! belong to the account, so every import into any group adds to them (a
//! preset's `other_columns`, say): an export of one group that wrote every
//! one of them was mostly empty columns (46 for a group with 2 attributes of
//! its own). The default columns are the group's own attributes and the
//! global attributes at least one exported receiver holds a value for;
//! `--columns` still picks from all of them.
//!
//! Asked with the spec's runtime filter (`notisnull` on the attribute, one
//! receiver per answer), a few requests at a time: one small request per
//! global attribute rather than a second read of the group.

use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_api::Id;
use listpipe_api::filter::{Rule, RuntimeFilter};

/// Requests in flight while asking.
const CONCURRENCY: usize = 8;

/// The names among `globals` that a receiver of `groups` (`None`: every
/// group) holds a value for, in their order. A global named like one of
/// the group's own attributes (`shadowed`) is kept: a filter on the name
/// would test the group's attribute, which the spec favours; so is one named
/// like a receiver field (`points`, `source`), whose name a filter reads as
/// the field. A target that
/// cannot answer keeps the attribute: a column too many, never one lost.
pub(super) async fn globals_in_use(
    conn: &Connected,
    groups: Option<&[Id]>,
    globals: Vec<String>,
    shadowed: &[String],
) -> Vec<String> {
    let groups: Option<Vec<String>> = groups.map(|g| g.iter().map(Id::to_string).collect());
    let asks = globals.into_iter().map(|name| {
        let groups = groups.clone();
        async move {
            // A rule on a receiver field's name tests the field, not the
            // attribute: such a global is kept, never lost to the field.
            if shadowed.iter().any(|s| s.eq_ignore_ascii_case(&name))
                || super::columns::shadowed_by_a_field(&name)
            {
                return Some(name);
            }
            let filter = RuntimeFilter {
                rules: Some(vec![Rule {
                    field: name.clone(),
                    logic: "notisnull".into(),
                    condition: String::new(),
                }]),
                groups,
                pagesize: Some(1),
                detail: Some(0),
                ..Default::default()
            };
            match conn.client.runtime_filter(&filter).await {
                Ok(found) if found.is_empty() => None,
                _ => Some(name),
            }
        }
    });
    futures::stream::iter(asks)
        .buffered(CONCURRENCY)
        .filter_map(futures::future::ready)
        .collect()
        .await
}

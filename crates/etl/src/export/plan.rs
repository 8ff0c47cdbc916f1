//! What the target says before an export reads: the group or filter the
//! step names, resolved to ids, the columns there are and the default ones,
//! and (for a progress bar) how many receivers to expect.

use super::columns::{self, Column, Kind, Source};
use super::in_use;
use super::reader::Query;
use crate::load::LoadError;
use crate::pipeline::GroupRef;
use crate::pipeline::export::{ExportStep, ExportWhat, FilterRef};
use crate::transport::target::Connected;
use listpipe_api::filter::RuntimeFilter;
use listpipe_api::{Group, Id, ReceiverType, detail};
use listpipe_base::cause::listed;
use std::collections::HashMap;

/// What the target says before reading: which receivers, which columns,
/// how many (when the API can tell).
pub(super) struct Plan {
    /// `None`: a blacklist export.
    pub(super) query: Option<Query>,
    pub(super) blocklist_of: Option<Id>,
    /// Every column there is, for `--columns` to pick from.
    pub(super) columns: Vec<Column>,
    /// The columns written when the step picks none (see [`in_use`]).
    pub(super) defaults: Vec<Column>,
    pub(super) total: Option<u64>,
    /// A saved filter's rules and operator (an incremental export adds its
    /// change times to them).
    pub(super) filter_rules: Option<(Vec<listpipe_api::filter::Rule>, String)>,
}

impl Plan {
    /// Ask for tags and orders only when they are written.
    pub(super) fn detail(&self, cols: &[Column], orders: bool) -> i64 {
        let tags = cols.iter().any(|c| c.source == Source::Tags);
        (if tags { detail::TAGS } else { 0 }) | (if orders { detail::ORDERS } else { 0 })
    }
}

/// The plan of a receiver export: `query` over the receivers of `groups`
/// (`None`: all), every column they have, and the default ones: the
/// groups' own attributes and the globals in use.
async fn receiver_plan(
    conn: &Connected,
    query: Query,
    groups: Option<&[Id]>,
    globals: Vec<(String, Kind)>,
    local: Vec<(String, Kind)>,
    total: Option<u64>,
) -> Plan {
    let kinds: HashMap<(bool, String), Kind> = globals
        .iter()
        .map(|(n, k)| ((true, n.clone()), *k))
        .chain(local.iter().map(|(n, k)| ((false, n.clone()), *k)))
        .collect();
    let globals: Vec<String> = globals.into_iter().map(|(n, _)| n).collect();
    let local: Vec<String> = local.into_iter().map(|(n, _)| n).collect();
    let used = in_use::globals_in_use(conn, groups, globals.clone(), &local).await;
    Plan {
        query: Some(query),
        blocklist_of: None,
        columns: columns::receiver_columns(&globals, &local, &kinds),
        defaults: columns::receiver_columns(&used, &local, &kinds),
        total,
        filter_rules: None,
    }
}

/// `counted`: whether the progress bar wants the total. A count is a pass
/// over every receiver on the server (seconds at 10M, more for a filter),
/// so a run that shows no bar (`--quiet`, cron) does not ask for it.
pub(super) async fn plan(
    conn: &Connected,
    step: &ExportStep,
    counted: bool,
) -> Result<Plan, LoadError> {
    let c = &conn.client;
    let globals = || async {
        Ok::<_, LoadError>(
            c.attributes(None)
                .await?
                .into_iter()
                .filter(|a| a.group_id == 0)
                .map(|a| (a.name, Kind::of_attribute(&a.kind)))
                .collect::<Vec<_>>(),
        )
    };
    let group_attrs = |id: Id| async move {
        Ok::<_, LoadError>(
            c.group_attributes(id)
                .await?
                .into_iter()
                .map(|a| (a.name, Kind::of_attribute(&a.kind)))
                .collect::<Vec<_>>(),
        )
    };
    Ok(match &step.what {
        ExportWhat::Group { group, kind } => {
            let g = find_group(conn, group).await?;
            let total = if counted {
                let stats = c.group_stats(g.id).await?;
                Some(match kind {
                    ReceiverType::All => stats.total_count,
                    ReceiverType::Active => stats.active_count,
                    ReceiverType::Inactive => stats.inactive_count,
                    ReceiverType::Bounce => stats.bounce_count,
                })
            } else {
                None
            };
            let query = Query::Group {
                group: g.id,
                kind: *kind,
            };
            let (globals, local) = (globals().await?, group_attrs(g.id).await?);
            let total = total.map(|t| t.max(0) as u64);
            receiver_plan(conn, query, Some(&[g.id]), globals, local, total).await
        }
        ExportWhat::Filter { group, filter } => {
            let g = find_group(conn, group).await?;
            let filters = c.filters(g.id).await?;
            let f = filters
                .iter()
                .find(|f| match filter {
                    FilterRef::Id(id) => f.id.0 == *id,
                    FilterRef::Name(n) => f.name.eq_ignore_ascii_case(n),
                })
                .ok_or_else(|| {
                    let names: Vec<&str> = filters.iter().map(|f| f.name.as_str()).collect();
                    LoadError::step(format!(
                        "the group \"{}\" has no filter {}; its filters: {}",
                        g.name,
                        match filter {
                            FilterRef::Id(id) => format!("with id {id}"),
                            FilterRef::Name(n) => format!("named \"{n}\""),
                        },
                        listed(&names)
                    ))
                })?;
            let total = if counted {
                Some(c.filter_stats(g.id, f.id).await?.total_count)
            } else {
                None
            };
            let query = Query::Filter {
                group: g.id,
                filter: f.id,
            };
            let (globals, local) = (globals().await?, group_attrs(g.id).await?);
            let total = total.map(|t| t.max(0) as u64);
            let rules = (f.rules.clone().unwrap_or_default(), f.operator.clone());
            Plan {
                filter_rules: Some(rules),
                ..receiver_plan(conn, query, Some(&[g.id]), globals, local, total).await
            }
        }
        ExportWhat::Runtime {
            groups,
            rules,
            operator,
            activeonly,
        } => {
            let ids: Vec<Id> = if groups.is_empty() {
                c.groups(None).await?.into_iter().map(|g| g.id).collect()
            } else {
                let mut ids = Vec::new();
                for g in groups {
                    ids.push(find_group(conn, g).await?.id);
                }
                ids
            };
            // A name two groups type differently is text: the column holds both.
            let mut local: Vec<(String, Kind)> = Vec::new();
            let mut seen: HashMap<String, usize> = HashMap::new();
            for id in &ids {
                for (name, kind) in group_attrs(*id).await? {
                    match seen.get(&name) {
                        Some(&i) if local[i].1 != kind => local[i].1 = Kind::Text,
                        Some(_) => {}
                        None => {
                            seen.insert(name.clone(), local.len());
                            local.push((name, kind));
                        }
                    }
                }
            }
            let scope = (!groups.is_empty()).then_some(ids.as_slice());
            let query = Query::Runtime(RuntimeFilter {
                rules: Some(rules.clone()),
                groups: scope.map(|ids| ids.iter().map(|i| i.to_string()).collect()),
                operator: Some(operator.clone()),
                activeonly: Some(*activeonly),
                ..Default::default()
            });
            receiver_plan(conn, query, scope, globals().await?, local, None).await
        }
        ExportWhat::Blacklist => Plan {
            query: None,
            blocklist_of: None,
            columns: columns::blacklist_columns(),
            defaults: columns::blacklist_columns(),
            total: None,
            filter_rules: None,
        },
        ExportWhat::Blocklist { group } => Plan {
            query: None,
            blocklist_of: Some(find_group(conn, group).await?.id),
            columns: columns::blacklist_columns(),
            defaults: columns::blacklist_columns(),
            total: None,
            filter_rules: None,
        },
    })
}

async fn find_group(conn: &Connected, group: &GroupRef) -> Result<Group, LoadError> {
    let c = &conn.client;
    match group {
        GroupRef::Id(id) => match c.group((*id).into()).await {
            Ok(g) => Ok(g),
            Err(e) if e.is_not_found() => Err(LoadError::step(format!(
                "the target has no group with id {id}"
            ))),
            Err(e) => Err(e.into()),
        },
        GroupRef::Name(name) => {
            let groups = c.groups(None).await?;
            groups
                .iter()
                .find(|g| g.name.eq_ignore_ascii_case(name))
                .cloned()
                .ok_or_else(|| {
                    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                    LoadError::step(format!(
                        "the target has no group named \"{name}\"; its groups: {}",
                        listed(&names)
                    ))
                })
        }
    }
}

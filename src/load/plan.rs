//! What the target holds before a step writes: its group, attributes,
//! blocked addresses and current receivers, read once per step.

use super::target::Connected;
use super::{LoadError, PAGE, retry};
use crate::api::{AttributeInput, Group, GroupInput, Receiver, ReceiverQuery, detail};
use crate::pipeline::{AttributeMapping, GroupRef};
use futures::{StreamExt, TryStreamExt};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;

/// Finds the step's group; creates it when allowed (not in a dry run).
/// Answers the group (`None`: it does not exist yet and a dry run would
/// create it) and whether it is (or would be) created.
pub async fn group(
    conn: &Connected,
    group: &GroupRef,
    create: bool,
    dry_run: bool,
) -> Result<(Option<Group>, bool), LoadError> {
    let c = &conn.client;
    match group {
        GroupRef::Id(id) => match c.group((*id).into()).await {
            Ok(g) => Ok((Some(g), false)),
            Err(e) if e.is_not_found() => Err(LoadError::Step(format!(
                "the target has no group with id {id}"
            ))),
            Err(e) => Err(e.into()),
        },
        GroupRef::Name(name) => {
            let groups = c.groups(None).await?;
            if let Some(g) = groups.iter().find(|g| g.name.eq_ignore_ascii_case(name)) {
                return Ok((Some(g.clone()), false));
            }
            if !create {
                let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                return Err(LoadError::Step(format!(
                    "the target has no group named \"{name}\" (groups: {}); set `create_group = true` to create it",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            if dry_run {
                return Ok((None, true));
            }
            Ok((
                Some(c.create_group(&GroupInput::named(name.clone())).await?),
                true,
            ))
        }
    }
}

/// Creates the attributes the step maps that the target lacks, with their
/// declared types; returns their names (in a dry run: what would be created).
pub async fn attributes(
    conn: &Connected,
    group: Option<&Group>,
    globals: &[AttributeMapping],
    locals: &[AttributeMapping],
    dry_run: bool,
) -> Result<Vec<String>, LoadError> {
    let c = &conn.client;
    let mut created = Vec::new();
    let have_global: HashSet<String> = c
        .attributes(None)
        .await?
        .into_iter()
        .map(|a| a.name.to_lowercase())
        .collect();
    for a in globals
        .iter()
        .filter(|a| !have_global.contains(&a.name.to_lowercase()))
    {
        if !dry_run {
            c.create_attribute(&AttributeInput::new(a.name.clone(), a.kind))
                .await?;
        }
        created.push(a.name.clone());
    }
    let have_local: HashSet<String> = match group {
        Some(g) => c
            .group_attributes(g.id)
            .await?
            .into_iter()
            .map(|a| a.name.to_lowercase())
            .collect(),
        None => HashSet::new(),
    };
    for a in locals
        .iter()
        .filter(|a| !have_local.contains(&a.name.to_lowercase()))
    {
        if let (Some(g), false) = (group, dry_run) {
            c.create_group_attribute(g.id, &AttributeInput::new(a.name.clone(), a.kind))
                .await?;
        }
        created.push(a.name.clone());
    }
    Ok(created)
}

/// The addresses among `emails` that the blacklist (or the group's
/// blocklist) holds, asked in chunks of 1,000 with the spec's validate call.
pub async fn blocked(
    conn: &Connected,
    group: Option<&Group>,
    emails: Vec<String>,
    concurrency: usize,
    retries: u32,
) -> Result<HashSet<String>, LoadError> {
    let retried = AtomicU64::new(0);
    let chunks: Vec<Vec<String>> = emails
        .chunks(super::BATCH)
        .map(<[String]>::to_vec)
        .collect();
    let gid = group.map(|g| g.id);
    let allowed: Vec<Vec<String>> = futures::stream::iter(chunks.iter())
        .map(|chunk| {
            let retried = &retried;
            async move {
                retry::retrying(conn, retries, retried, || {
                    conn.client.validate_blacklist(chunk, gid, false)
                })
                .await
            }
        })
        .buffered(concurrency.max(1))
        .try_collect()
        .await?;
    let allowed: HashSet<String> = allowed
        .into_iter()
        .flatten()
        .map(|e| e.to_lowercase())
        .collect();
    Ok(emails
        .into_iter()
        .filter(|e| !allowed.contains(e))
        .collect())
}

/// Every receiver of the group with tags and orders, by lower-case email.
pub async fn existing(
    conn: &Connected,
    group: &Group,
    concurrency: usize,
    retries: u32,
) -> Result<HashMap<String, Receiver>, LoadError> {
    let total = conn.client.group_stats(group.id).await?.total_count;
    let pages = (total + PAGE - 1) / PAGE;
    let retried = AtomicU64::new(0);
    let mut out = HashMap::with_capacity(total.max(0) as usize);
    let mut stream = futures::stream::iter(0..pages.max(1))
        .map(|page| {
            let retried = &retried;
            let q = ReceiverQuery {
                pagesize: Some(PAGE),
                page: Some(page),
                detail: Some(detail::TAGS | detail::ORDERS),
                ..Default::default()
            };
            async move {
                retry::retrying(conn, retries, retried, || {
                    conn.client.receivers(group.id, &q)
                })
                .await
            }
        })
        .buffered(concurrency.clamp(1, 4));
    while let Some(page) = stream.next().await {
        for r in page? {
            out.insert(r.email.to_lowercase(), r);
        }
    }
    Ok(out)
}

//! What the target holds before a step writes: its group, attributes,
//! blocked addresses and current receivers, read once per step.

use super::diff::{Held, Watched};
use super::held::{TargetIndex, key_of};
use super::{LoadError, PAGE, retry};
use crate::pipeline::{AttributeMapping, GroupRef};
use crate::transport::target::Connected;
use futures::StreamExt;
use listpipe_api::{Attribute, AttributeInput, Group, GroupInput, ReceiverQuery, detail};
use listpipe_client::backoff;
use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates something that is not safe to send twice (a group, an
/// attribute). Before trying again after a transient error, asks `exists`
/// whether the lost attempt made it after all (`reset_after`). A 409 means
/// another writer (a concurrent run of another pipeline) made it first:
/// that is a normal event, so `exists` is asked too, and what it finds is
/// used; `exists` itself refuses a match that differs from what the
/// pipeline asked for (an attribute of another type).
async fn create_once<T, C, CF, E, EF>(
    conn: &Connected,
    retries: u32,
    retried: &AtomicU64,
    mut create: C,
    mut exists: E,
) -> Result<T, LoadError>
where
    C: FnMut() -> CF,
    CF: Future<Output = Result<T, listpipe_client::ClientError>>,
    E: FnMut() -> EF,
    EF: Future<Output = Result<Option<T>, LoadError>>,
{
    let mut attempt = 0;
    loop {
        // Retried here, not by `retry::retrying`: a create is not idempotent.
        match conn.once(create()).await {
            Ok(v) => return Ok(v),
            Err(e) if e.status() == Some(409) => {
                return match exists().await? {
                    Some(v) => Ok(v),
                    None => Err(e.into()),
                };
            }
            Err(e) if e.is_transient() && attempt < retries => {
                conn.controller.retrying(&e);
                tokio::time::sleep(backoff::delay(attempt, e.retry_after())).await;
                attempt += 1;
                retried.fetch_add(1, Ordering::Relaxed);
                if let Some(v) = exists().await? {
                    return Ok(v);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The attribute named like `want` among `have`, when there is one; an
/// error when it has another type than the pipeline declares.
fn same_attribute(
    have: &[Attribute],
    want: &AttributeMapping,
    place: &str,
) -> Result<Option<()>, LoadError> {
    match have
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(&want.name))
    {
        None => Ok(None),
        Some(h) if h.kind.eq_ignore_ascii_case(want.kind.as_str()) => Ok(Some(())),
        Some(h) => Err(LoadError::step(format!(
            "the {place} attribute \"{}\" exists on the target with type {}, but the pipeline declares it {}: change `type` in the pipeline or rename the attribute",
            h.name,
            if h.kind.is_empty() { "(none)" } else { &h.kind },
            want.kind.as_str()
        ))),
    }
}

/// Finds the step's group; creates it when allowed (not in a dry run).
/// Answers the group (`None`: it does not exist yet and a dry run would
/// create it) and whether it is (or would be) created.
pub(super) async fn group(
    conn: &Connected,
    group: &GroupRef,
    create: bool,
    dry_run: bool,
    retries: u32,
    retried: &AtomicU64,
) -> Result<(Option<Group>, bool), LoadError> {
    let c = &conn.client;
    let named = |name: String| async move {
        let groups = retry::retrying(conn, retries, retried, || c.groups(None)).await?;
        Ok::<_, LoadError>(
            groups
                .into_iter()
                .find(|g| g.name.eq_ignore_ascii_case(&name)),
        )
    };
    match group {
        GroupRef::Id(id) => {
            match retry::retrying(conn, retries, retried, || c.group((*id).into())).await {
                Ok(g) => Ok((Some(g), false)),
                Err(e) if e.is_not_found() => Err(LoadError::step(format!(
                    "the target has no group with id {id}"
                ))),
                Err(e) => Err(e.into()),
            }
        }
        GroupRef::Name(name) => {
            let groups = retry::retrying(conn, retries, retried, || c.groups(None)).await?;
            if let Some(g) = groups.iter().find(|g| g.name.eq_ignore_ascii_case(name)) {
                return Ok((Some(g.clone()), false));
            }
            if !create {
                let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                return Err(LoadError::step(format!(
                    "the target has no group named \"{name}\" (groups: {}); set `create_group = true` to create it",
                    listpipe_base::cause::listed(&names)
                )));
            }
            if dry_run {
                return Ok((None, true));
            }
            let input = GroupInput::named(name.clone());
            let g: Group = create_once(
                conn,
                retries,
                retried,
                || c.create_group(&input),
                || named(name.clone()),
            )
            .await?;
            Ok((Some(g), true))
        }
    }
}

/// Creates the attributes the step maps that the target lacks, with their
/// declared types; returns their names (in a dry run: what would be created).
pub(super) async fn attributes(
    conn: &Connected,
    group: Option<&Group>,
    globals: &[AttributeMapping],
    locals: &[AttributeMapping],
    dry_run: bool,
    retries: u32,
    retried: &AtomicU64,
) -> Result<Vec<String>, LoadError> {
    let c = &conn.client;
    let mut created = Vec::new();
    let have_global: HashSet<String> =
        retry::retrying(conn, retries, retried, || c.attributes(None))
            .await?
            .into_iter()
            .map(|a| a.name.to_lowercase())
            .collect();
    for a in globals
        .iter()
        .filter(|a| !have_global.contains(&a.name.to_lowercase()))
    {
        if !dry_run {
            let input = AttributeInput::new(a.name.clone(), a.kind);
            create_once(
                conn,
                retries,
                retried,
                || async { c.create_attribute(&input).await.map(|_| ()) },
                || async {
                    let have =
                        retry::retrying(conn, retries, retried, || c.attributes(None)).await?;
                    same_attribute(&have, a, "global")
                },
            )
            .await?;
        }
        created.push(a.name.clone());
    }
    let have_local: HashSet<String> = match group {
        Some(g) => retry::retrying(conn, retries, retried, || c.group_attributes(g.id))
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
            let input = AttributeInput::new(a.name.clone(), a.kind);
            create_once(
                conn,
                retries,
                retried,
                || async { c.create_group_attribute(g.id, &input).await.map(|_| ()) },
                || async {
                    let have = retry::retrying(conn, retries, retried, || c.group_attributes(g.id))
                        .await?;
                    same_attribute(&have, a, "group")
                },
            )
            .await?;
        }
        created.push(a.name.clone());
    }
    Ok(created)
}

/// Every receiver of the group with tags and orders, by lower-case email,
/// reduced to what the comparison needs: in memory up to `spill_after`
/// receivers, on disk past that ([`TargetIndex`]).
///
/// The pages decide where the group ends: the first page alone (a small
/// group is one request), then up to four side by side until one comes
/// back short (the few asked for past it come back empty and are dropped).
/// The group's count is not asked for: it was only ever a hint, and at 10M
/// receivers the server takes seconds to count them.
pub(super) async fn existing(
    conn: &Connected,
    group: &Group,
    concurrency: usize,
    retries: u32,
    spill_after: usize,
    watched: &Watched,
) -> Result<TargetIndex, LoadError> {
    let retried = AtomicU64::new(0);
    let mut out = TargetIndex::new(spill_after);
    let keys = out.keys();
    // Each page is read, then decoded, keyed and encoded on a blocking
    // thread: the decode is most of a re-import's reading of its group,
    // and done here it keeps a page or two ahead on the machine's other
    // cores while this task only files the entries, in page order.
    let read = |page: i64| {
        let retried = &retried;
        let keys = keys.clone();
        let watched = watched.clone();
        let q = ReceiverQuery {
            pagesize: Some(PAGE),
            page: Some(page),
            detail: Some(detail::TAGS | detail::ORDERS),
            ..Default::default()
        };
        async move {
            let page = retry::retrying(conn, retries, retried, || {
                conn.client.receivers_page(group.id, &q)
            })
            .await?;
            tokio::task::spawn_blocking(move || -> Result<_, LoadError> {
                let rows = page.rows()?;
                let entries: Vec<(u128, Vec<u8>)> = rows
                    .iter()
                    .map(|r| (key_of(&keys, &r.email), Held::of(r, &watched).encode()))
                    .collect();
                Ok(entries)
            })
            .await
            .map_err(|e| LoadError::step(format!("decoding a page of the group failed: {e}")))?
        }
    };
    let mut full = {
        let first = read(0).await?;
        let full = first.len() as i64 >= PAGE;
        out.extend(first)?;
        full
    };
    let mut rest = futures::stream::iter(1..)
        .map(read)
        .buffered(concurrency.clamp(1, 4));
    while full && let Some(page) = rest.next().await {
        let page = page?;
        full = page.len() as i64 >= PAGE;
        out.extend(page)?;
    }
    drop(rest);
    tracing::debug!(target: log_target!(),
        spilled = out.is_spilled(),
        bytes_in_memory = out.memory_bytes(),
        "the target's group read"
    );
    Ok(out)
}

//! Tags of contacts (spec §2.8, §4.9). Tags belong to the person, so a tag
//! added in one group is seen from every group the address is in.

use super::db::{Backend, Db, params};
use super::{AccountId, StoreResult};
use listpipe_api::normalize_tag;
use listpipe_api::tag::tag_origin;

/// Which tags a listing asks for, from its `origin` query.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// `*` or no `origin` parameter.
    Any,
    /// `origin=` (blank): tags without an origin.
    NoOrigin,
    Named(String),
}

impl Origin {
    pub fn from_query(origin: Option<&str>) -> Origin {
        match origin.map(str::trim) {
            None | Some("*") => Origin::Any,
            Some("") => Origin::NoOrigin,
            Some(o) => Origin::Named(o.to_string()),
        }
    }

    fn keeps(&self, tag: &str) -> bool {
        match self {
            Origin::Any => true,
            Origin::NoOrigin => tag_origin(tag).is_empty(),
            Origin::Named(o) => tag_origin(tag).eq_ignore_ascii_case(o),
        }
    }
}

/// The size limits of a tag list: how many in one write, how long each.
pub fn check_sizes(tags: &[String]) -> StoreResult<()> {
    super::check_count("tags", tags.len(), super::MAX_TAGS_PER_WRITE)?;
    for tag in tags {
        super::check_len("a tag", tag.trim(), super::MAX_TAG_CHARS)?;
    }
    Ok(())
}

/// Applies a tag list to a contact: each tag is normalised and added; a tag
/// written `-name` removes `name`. Returns the tags actually added.
pub fn apply(db: &Db, contact_id: i64, tags: &[String]) -> StoreResult<Vec<String>> {
    check_sizes(tags)?;
    let mut added = Vec::new();
    for raw in tags {
        let raw = raw.trim();
        if let Some(stripped) = raw.strip_prefix('-') {
            if let Some(tag) = normalize_tag(stripped) {
                db.exec(
                    "DELETE FROM tags WHERE contact_id = ?1 AND tag = ?2",
                    params![contact_id, tag],
                )?;
            }
        } else if let Some(tag) = normalize_tag(raw)
            && db.exec(
                "INSERT INTO tags (contact_id, tag, origin) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                params![contact_id, tag, tag_origin(&tag)],
            )? > 0
        {
            added.push(tag);
        }
    }
    Ok(added)
}

pub fn of_contact(db: &Db, contact_id: i64, origin: &Origin) -> StoreResult<Vec<String>> {
    // Tags in SQLite's order of text, byte by byte: PostgreSQL sorts in its
    // database's locale unless told `COLLATE "C"`, a name SQLite does not know.
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT tag FROM tags WHERE contact_id = ?1 ORDER BY tag",
        Backend::Postgres => {
            "SELECT tag FROM tags WHERE contact_id = ?1 ORDER BY tag COLLATE \"C\""
        }
    };
    let tags: Vec<String> = db.rows(sql, params![contact_id], |r| r.get(0))?;
    Ok(tags.into_iter().filter(|t| origin.keeps(t)).collect())
}

/// Every distinct tag set on any receiver of the account.
pub fn of_account(db: &Db, account: AccountId, origin: &Origin) -> StoreResult<Vec<String>> {
    // In SQLite's order, as `of_contact`.
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT DISTINCT t.tag FROM tags t JOIN contacts c ON c.id = t.contact_id
             WHERE c.account_id = ?1 ORDER BY t.tag"
        }
        Backend::Postgres => {
            "SELECT DISTINCT t.tag COLLATE \"C\" FROM tags t JOIN contacts c ON c.id = t.contact_id
             WHERE c.account_id = ?1 ORDER BY 1"
        }
    };
    let tags: Vec<String> = db.rows(sql, params![account.0], |r| r.get(0))?;
    Ok(tags.into_iter().filter(|t| origin.keeps(t)).collect())
}

//! What the live service offers on a receiver beyond the spec, which
//! importers and a published PHP client call: the groups a receiver is in,
//! and changing its address. Both act on the contact (the person), so they
//! cover every group the address is in.

use super::super::{AccountId, StoreResult, conflict, groups};
use super::read::{load, locate};
use super::{ReceiverKey, check_email};
use crate::store::db::{Db, params};
use listpipe_api::Group;
use listpipe_api::Receiver;
use listpipe_api::receiver::detail;

/// `GET /v3/receivers/{id}/groups`: every group the receiver's address is
/// in, in id order (the groups list's shape).
pub fn groups_of(conn: &Db, account: AccountId, key: &ReceiverKey) -> StoreResult<Vec<Group>> {
    let (_, _, contact) = locate(conn, account, None, key)?;
    let ids: Vec<i64> = conn.rows(
        "SELECT DISTINCT group_id FROM receivers WHERE contact_id = ?1 AND account_id = ?2 ORDER BY group_id",
        params![contact, account.0],
        |r| r.get(0),
    )?;
    ids.into_iter()
        .map(|g| groups::get(conn, account, g))
        .collect()
}

/// `PUT /v3/receivers/{id}/email` with `{"email": new}`: the address of the
/// receiver's contact becomes `new` in every group, with its attributes,
/// tags, orders and states kept. A new address that another contact of the
/// account has is a 409 (merging two people is not a rename); an invalid
/// one a 400. Answers the receiver as `GET /v3/receivers/{id}` does.
pub fn change_email(
    conn: &Db,
    account: AccountId,
    key: &ReceiverKey,
    new: &str,
) -> StoreResult<Receiver> {
    let new = check_email(new)?;
    let (id, group, contact) = locate(conn, account, None, key)?;
    let taken: Option<i64> = conn.opt_row(
        "SELECT id FROM contacts WHERE account_id = ?1 AND email = ?2",
        params![account.0, new],
        |r| r.get(0),
    )?;
    match taken {
        Some(other) if other != contact => {
            return conflict(format!(
                "Conflict: another receiver has the address \"{new}\" already"
            ));
        }
        Some(_) => {}
        None => {
            conn.exec(
                "UPDATE contacts SET email = ?1 WHERE id = ?2 AND account_id = ?3",
                params![new, contact, account.0],
            )?;
            let now = super::super::now();
            conn.exec(
                "UPDATE receivers SET changed = ?1 WHERE contact_id = ?2",
                params![now, contact],
            )?;
            groups::touch(conn, group)?;
        }
    }
    load(conn, account, id, false, detail::ALL)
}

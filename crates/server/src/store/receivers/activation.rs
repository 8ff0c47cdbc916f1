//! `PUT .../receivers/{id}/activate` and `/deactivate`, extensions of the
//! live service (wire.md). They move the state through its timestamps only,
//! like everything else here:
//!
//! - activate: an explicit (re)activation, so it clears an opt-out: sets
//!   `activated` to now and `deactivated` to 0. A receiver already active
//!   is left as it is (its first activation time is kept). `bounced` is not
//!   touched: a bounced address stays in the bounce state until an update
//!   sends `bounced: 0`, because activation says nothing about delivery.
//! - deactivate: sets `deactivated` to now; a receiver already deactivated
//!   keeps the time of its first opt-out.

use super::super::{AccountId, StoreResult, groups, now};
use super::{ReceiverKey, locate, row};
use crate::store::db::{Db, params};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Activate,
    Deactivate,
}

/// Applies `what` to the receiver `key` of `group_id`: a 404 when the
/// group or the receiver in that group does not exist.
pub fn set_activation(
    conn: &Db,
    account: AccountId,
    group_id: i64,
    key: &ReceiverKey,
    what: Activation,
) -> StoreResult<()> {
    groups::ensure(conn, account, group_id)?;
    let (id, _, _) = locate(conn, account, Some(group_id), key)?;
    let current = row(conn, account, id)?;
    let t = now();
    let (activated, deactivated) = match what {
        Activation::Activate if current.activated > 0 && current.deactivated == 0 => return Ok(()),
        Activation::Activate => (t, 0),
        Activation::Deactivate if current.deactivated > 0 => return Ok(()),
        Activation::Deactivate => (current.activated, t),
    };
    conn.exec(
        "UPDATE receivers SET activated = ?1, deactivated = ?2, changed = ?3 WHERE id = ?4",
        params![activated, deactivated, t, id],
    )?;
    groups::touch(conn, group_id)
}

//! What a receiver batch needs from a database, as one trait.
//!
//! [`super::batch`] holds the rules of a batch (checks, their order,
//! rounds for repeated addresses, answers) and speaks only this trait; the
//! statements behind it are [`super::bulk`]'s, in SQLite's dialect or
//! PostgreSQL's (`json_each` or `jsonb_array_elements`, the same unique
//! keys). Every operation takes a batch's rows at once, so no backend is
//! asked for a round trip per receiver.

use super::super::{AccountId, Db, StoreResult};
use super::bulk::{self, ChangeRow, NewRow};
use listpipe_api::Order;
use std::collections::HashMap;

/// The writes and lookups of a receiver batch. Address keys are
/// [`bulk::email_key`]s (the database's case folding of addresses).
pub trait ReceiverBulk {
    /// The receivers of the group among the addresses: key → (id, contact id).
    fn existing_in_group(
        &self,
        account: AccountId,
        group_id: i64,
        emails: &[&str],
    ) -> StoreResult<HashMap<String, (i64, i64)>>;
    /// The contact of each address, created where missing: key → contact id.
    fn contacts_for(
        &self,
        account: AccountId,
        emails: &[&str],
    ) -> StoreResult<HashMap<String, i64>>;
    /// New receivers of the group stamped `t`: contact id → receiver id.
    fn insert_receivers(
        &self,
        account: AccountId,
        group_id: i64,
        rows: &[NewRow],
        t: i64,
    ) -> StoreResult<HashMap<i64, i64>>;
    fn update_receivers(&self, rows: &[ChangeRow], t: i64) -> StoreResult<()>;
    fn set_values(&self, rows: &[(i64, i64, &str)]) -> StoreResult<()>;
    fn clear_values(&self, rows: &[(i64, i64)]) -> StoreResult<()>;
    fn apply_defaults(
        &self,
        account: AccountId,
        group_id: i64,
        contacts: &[i64],
    ) -> StoreResult<()>;
    fn add_tags(&self, rows: &[(i64, &str, &str)]) -> StoreResult<()>;
    fn remove_tags(&self, rows: &[(i64, &str)]) -> StoreResult<()>;
    fn upsert_orders(&self, rows: &[(i64, &Order, i64)]) -> StoreResult<()>;
}

/// Either backend: the statements of [`bulk`], in the dialect of each.
impl ReceiverBulk for Db<'_> {
    fn existing_in_group(
        &self,
        account: AccountId,
        group_id: i64,
        emails: &[&str],
    ) -> StoreResult<HashMap<String, (i64, i64)>> {
        bulk::existing_in_group(self, account, group_id, emails)
    }
    fn contacts_for(
        &self,
        account: AccountId,
        emails: &[&str],
    ) -> StoreResult<HashMap<String, i64>> {
        bulk::contacts_for(self, account, emails)
    }
    fn insert_receivers(
        &self,
        account: AccountId,
        group_id: i64,
        rows: &[NewRow],
        t: i64,
    ) -> StoreResult<HashMap<i64, i64>> {
        bulk::insert_receivers(self, account, group_id, rows, t)
    }
    fn update_receivers(&self, rows: &[ChangeRow], t: i64) -> StoreResult<()> {
        bulk::update_receivers(self, rows, t)
    }
    fn set_values(&self, rows: &[(i64, i64, &str)]) -> StoreResult<()> {
        bulk::set_values(self, rows)
    }
    fn clear_values(&self, rows: &[(i64, i64)]) -> StoreResult<()> {
        bulk::clear_values(self, rows)
    }
    fn apply_defaults(
        &self,
        account: AccountId,
        group_id: i64,
        contacts: &[i64],
    ) -> StoreResult<()> {
        bulk::apply_defaults(self, account, group_id, contacts)
    }
    fn add_tags(&self, rows: &[(i64, &str, &str)]) -> StoreResult<()> {
        bulk::add_tags(self, rows)
    }
    fn remove_tags(&self, rows: &[(i64, &str)]) -> StoreResult<()> {
        bulk::remove_tags(self, rows)
    }
    fn upsert_orders(&self, rows: &[(i64, &Order, i64)]) -> StoreResult<()> {
        bulk::upsert_orders(self, rows)
    }
}

//! Where pages of a query in id order ended, so the next pages need no
//! OFFSET over everything before them. Process-wide, keyed by the database
//! file, the query and its values; bounded.

use rusqlite::types::Value;
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};

const MAX_QUERIES: usize = 64;

type Pages = BTreeMap<i64, i64>;

fn cache() -> &'static Mutex<HashMap<u64, Pages>> {
    static CACHE: OnceLock<Mutex<HashMap<u64, Pages>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

pub(super) fn key(
    db: &str,
    sql: &str,
    values: &[Value],
    lists: [&Option<String>; 2],
    size: i64,
) -> u64 {
    let mut h = DefaultHasher::new();
    let writes = crate::store::WRITES.load(std::sync::atomic::Ordering::SeqCst);
    (writes, db, sql, lists, size).hash(&mut h);
    for v in values {
        match v {
            Value::Null => 0.hash(&mut h),
            Value::Integer(i) => (1, i).hash(&mut h),
            Value::Real(f) => (2, f.to_bits()).hash(&mut h),
            Value::Text(t) => (3, t).hash(&mut h),
            Value::Blob(b) => (4, b).hash(&mut h),
        }
    }
    h.finish()
}

/// The last id of the nearest page before `page` that was served, and
/// that page's number; `(-1, -1)` when none was.
pub(super) fn before(key: u64, page: i64) -> (i64, i64) {
    let map = cache().lock().unwrap_or_else(|p| p.into_inner());
    map.get(&key)
        .and_then(|pages| pages.range(..page).next_back())
        .map_or((-1, -1), |(p, id)| (*id, *p))
}

pub(super) fn remember(key: u64, page: i64, last_id: i64) {
    let mut map = cache().lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= MAX_QUERIES && !map.contains_key(&key) {
        map.clear();
    }
    map.entry(key).or_default().insert(page, last_id);
}

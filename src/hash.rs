//! Hash maps and sets for the per-row work (a million addresses is normal):
//! foldhash, as polars and hashbrown use, several times faster than std's
//! SipHash on short keys and still seeded at random per process.

pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

//! Hash maps and sets for the per-row work (a million addresses is normal):
//! foldhash, as polars and hashbrown use, several times faster than std's
//! SipHash on short keys and still seeded at random per process.

pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A set of strings held as 128-bit hashes (two independently seeded 64-bit
/// hashes): 16 bytes a key whatever its length, so ten million addresses
/// fit in a few hundred megabytes. Seeded at random per set, two different
/// keys sharing both halves is a chance of about n²/2¹²⁹ (10⁻²⁵ for ten
/// million keys).
///
/// The keys are spread over 16 tables by their top bits: a table that grows
/// copies a sixteenth of the keys, so growing never holds the whole set
/// twice (at ten million keys, 300 MB instead of 430 MB at the peak).
#[derive(Default)]
pub struct KeySet {
    keys: Key128,
    sets: [FastSet<u128>; 16],
}

/// Strings made 128-bit keys (see [`KeySet`]): two independently seeded
/// 64-bit hashes, seeded at random per value of this type.
#[derive(Default, Clone)]
pub struct Key128([foldhash::fast::RandomState; 2]);

impl Key128 {
    pub fn of(&self, s: &str) -> u128 {
        use std::hash::BuildHasher;
        let [a, b] = &self.0;
        (u128::from(a.hash_one(s)) << 64) | u128::from(b.hash_one(s))
    }
}

impl KeySet {
    /// A set keyed as `keys` makes keys (to look up keys made elsewhere).
    pub fn with_keys(keys: Key128) -> Self {
        KeySet {
            keys,
            sets: Default::default(),
        }
    }

    fn key(&self, s: &str) -> u128 {
        self.keys.of(s)
    }

    fn set(&self, key: u128) -> &FastSet<u128> {
        &self.sets[(key >> 124) as usize]
    }

    pub fn contains_key(&self, key: u128) -> bool {
        self.set(key).contains(&key)
    }

    /// Adds `s`; false if it was there.
    pub fn insert(&mut self, s: &str) -> bool {
        let key = self.key(s);
        self.sets[(key >> 124) as usize].insert(key)
    }

    pub fn contains(&self, s: &str) -> bool {
        self.contains_key(self.key(s))
    }

    pub fn len(&self) -> usize {
        self.sets.iter().map(FastSet::len).sum()
    }

    /// The keys, in no order.
    pub fn into_keys(self) -> impl Iterator<Item = u128> {
        self.sets.into_iter().flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.iter().all(FastSet::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::KeySet;

    #[test]
    fn a_key_set_answers_as_a_set_of_strings() {
        let mut keys = KeySet::default();
        assert!(keys.insert("a@x.de"));
        assert!(!keys.insert("a@x.de"));
        assert!(keys.insert("A@x.de"));
        assert!(keys.contains("a@x.de") && !keys.contains("b@x.de"));
        assert_eq!(keys.len(), 2);
        let many: Vec<String> = (0..100_000).map(|i| format!("{i}@x.de")).collect();
        assert!(many.iter().all(|k| keys.insert(k)));
        assert_eq!(keys.len(), 100_002);
    }
}

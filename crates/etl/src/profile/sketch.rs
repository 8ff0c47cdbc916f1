//! Bounded sketches for the report's profile: the most frequent values of a
//! stream in fixed space, and a fixed-size uniform sample of numbers. Each
//! keeps the same few kilobytes whether it sees ten values or ten million.

/// The most frequent values (space-saving, Metwally et al.): at most
/// `capacity` counters; a new value past it takes the place of the least
/// counted and inherits its count as an overestimate.
#[derive(Debug, Clone)]
pub struct TopK {
    capacity: usize,
    /// Value, count, overestimate.
    counters: Vec<(String, u64, u64)>,
}

impl TopK {
    pub fn new(capacity: usize) -> TopK {
        TopK {
            capacity,
            counters: Vec::new(),
        }
    }

    pub fn add(&mut self, v: &str) {
        if let Some(e) = self.counters.iter_mut().find(|e| e.0 == v) {
            e.1 += 1;
            return;
        }
        if self.counters.len() < self.capacity {
            self.counters.push((v.to_string(), 1, 0));
            return;
        }
        if let Some(least) = self.counters.iter_mut().min_by_key(|e| e.1) {
            let floor = least.1;
            *least = (v.to_string(), floor + 1, floor);
        }
    }

    /// The `n` most frequent, most first (ties by value), with their counts
    /// (an upper bound once more values came than the capacity) and whether
    /// the count is exact.
    pub fn top(&self, n: usize) -> Vec<(&str, u64, bool)> {
        let mut top: Vec<_> = self
            .counters
            .iter()
            .map(|(v, n, over)| (v.as_str(), *n, *over == 0))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        top.truncate(n);
        top
    }

    /// Values tracked (at most the capacity).
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }
}

/// A uniform sample of at most [`Reservoir::SIZE`] numbers of a stream
/// (Vitter's algorithm R), with the exact smallest and largest, for a
/// histogram and quantiles. The sampling is seeded: the same input gives the
/// same page.
#[derive(Debug, Clone)]
pub struct Reservoir {
    pub seen: u64,
    pub min: f64,
    pub max: f64,
    sample: Vec<f64>,
    state: u64,
}

impl Default for Reservoir {
    fn default() -> Self {
        Reservoir {
            seen: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            sample: Vec::new(),
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl Reservoir {
    pub const SIZE: usize = 1024;

    pub fn add(&mut self, x: f64) {
        self.seen += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        if self.sample.len() < Self::SIZE {
            self.sample.push(x);
            return;
        }
        // xorshift64: enough to pick a slot uniformly.
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let slot = self.state % self.seen;
        if let Some(s) = self.sample.get_mut(slot as usize) {
            *s = x;
        }
    }

    /// Counts of the sample in `bins` equal bins from `min` to `max`,
    /// scaled to the values seen; one bin when every value is the same.
    pub fn histogram(&self, bins: usize) -> Vec<u64> {
        if self.sample.is_empty() || bins == 0 {
            return Vec::new();
        }
        let width = self.max - self.min;
        if width <= 0.0 || !width.is_finite() {
            return vec![self.seen];
        }
        let mut counts = vec![0u64; bins];
        for x in &self.sample {
            let i = (((x - self.min) / width) * bins as f64) as usize;
            if let Some(c) = counts.get_mut(i.min(bins - 1)) {
                *c += 1;
            }
        }
        let scale = self.seen as f64 / self.sample.len() as f64;
        counts
            .into_iter()
            .map(|c| (c as f64 * scale).round() as u64)
            .collect()
    }

    /// The `q` quantile (0 to 1) of the sample, between its two nearest
    /// values (the median of 3, 10, 25, 100 is 17.5).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let mut sorted = self.sample.clone();
        sorted.sort_by(f64::total_cmp);
        let last = sorted.len().checked_sub(1)?;
        let at = last as f64 * q.clamp(0.0, 1.0);
        let (lo, hi) = (
            sorted.get(at.floor() as usize)?,
            sorted.get(at.ceil() as usize)?,
        );
        Some(lo + (hi - lo) * at.fract())
    }

    /// Whether the sample is all of the values (the figures are exact).
    pub fn exact(&self) -> bool {
        self.seen as usize <= Self::SIZE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_finds_the_heavy_hitters_in_fixed_space() {
        let mut t = TopK::new(8);
        for i in 0..10_000u32 {
            t.add(if i % 3 == 0 { "gmail.com" } else { "x" });
            t.add(&format!("rare{i}"));
        }
        assert!(t.len() <= 8);
        let top = t.top(2);
        assert_eq!(top[0].0, "x");
        assert_eq!(top[1].0, "gmail.com");
        assert!(top[1].1 >= 3334);
    }

    #[test]
    fn the_reservoir_keeps_range_exact_and_shape_close() {
        let mut r = Reservoir::default();
        for i in 0..100_000 {
            r.add(f64::from(i % 100));
        }
        assert_eq!((r.min, r.max, r.seen), (0.0, 99.0, 100_000));
        assert!(!r.exact());
        let h = r.histogram(4);
        assert_eq!(h.len(), 4);
        for c in &h {
            assert!((20_000..30_000).contains(c), "{h:?}");
        }
        let median = r.quantile(0.5).unwrap_or_default();
        assert!((40.0..60.0).contains(&median), "{median}");
        let mut one = Reservoir::default();
        one.add(5.0);
        one.add(5.0);
        assert_eq!(one.histogram(10), vec![2]);
        assert!(one.exact());
    }
}

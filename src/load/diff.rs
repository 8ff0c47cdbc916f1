//! What an import row sends: the difference between the row and the
//! receiver the target holds.
//!
//! What the target holds is kept as a [`Held`]: the timestamps and numbers
//! as they are, every text, attribute, tag and order as a 64-bit hash. A
//! re-import of a million receivers compares against a million of these
//! (about 200 bytes each) instead of a million full receivers with their
//! maps of attributes (kilobytes each). They are kept by address in a
//! [`TargetIndex`](super::held::TargetIndex): in memory up to a budget,
//! past it on disk, as the bytes of [`Held::encode`] (88 bytes and 8 a
//! part: no names, no lengths but the four part ends).

use crate::api::{Order, Receiver, ReceiverInput};
use crate::pipeline::ReceiverField;
use std::hash::{DefaultHasher, Hash, Hasher};

fn hash(v: impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// An order line's identity and values, with and without its time (a row
/// that gives no time matches any).
fn order_hashes(o: &Order) -> (u64, u64) {
    let price = format!("{:.6}", o.price);
    let base = (
        &o.order_id,
        &o.product_id,
        &o.product,
        &price,
        &o.currency,
        o.quantity,
        &o.mailing_id,
    );
    (hash(base), hash((base, o.stamp)))
}

/// A receiver as the target holds it, reduced to what [`changes`] compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// registered, activated, deactivated, imported, bounced.
    stamps: [i64; 5],
    points: i64,
    /// source, last_ip, last_location, last_client.
    texts: [u64; 4],
    /// Sorted hashes: attribute pairs, global attribute pairs, tags, order
    /// lines (with time, then without), one after the other.
    parts: Box<[u64]>,
    ends: [u32; 4],
}

impl From<&Receiver> for Held {
    fn from(r: &Receiver) -> Self {
        let sorted = |mut v: Vec<u64>| {
            v.sort_unstable();
            v
        };
        let attrs = sorted(r.attributes.iter().map(hash).collect());
        let globals = sorted(r.global_attributes.iter().map(hash).collect());
        let tags = sorted(r.tags.iter().flatten().map(hash).collect());
        let orders = r.orders.iter().flatten().map(order_hashes);
        let (without, with): (Vec<u64>, Vec<u64>) = orders.unzip();
        let (with, without) = (sorted(with), sorted(without));
        let mut parts = attrs;
        let mut ends = [0u32; 4];
        for (i, more) in [globals, tags, with].into_iter().enumerate() {
            ends[i] = parts.len() as u32;
            parts.extend(more);
        }
        ends[3] = parts.len() as u32;
        parts.extend(without);
        Held {
            stamps: [
                r.registered,
                r.activated,
                r.deactivated,
                r.imported,
                r.bounced,
            ],
            points: r.points,
            texts: [
                hash(&r.source),
                hash(&r.last_ip),
                hash(&r.last_location),
                hash(&r.last_client),
            ],
            parts: parts.into_boxed_slice(),
            ends,
        }
    }
}

/// The fixed part of an encoded [`Held`]: stamps, points, texts, part ends.
const ENCODED_HEAD: usize = 5 * 8 + 8 + 4 * 8 + 4 * 4;

impl Held {
    /// The bytes of this receiver for a spill (little-endian: the stamps,
    /// the points, the texts, the four part ends, then the parts).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENCODED_HEAD + 8 * self.parts.len());
        let words = self.stamps.iter().chain([&self.points]);
        words.for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        self.texts
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        self.ends
            .iter()
            .for_each(|e| out.extend_from_slice(&e.to_le_bytes()));
        self.parts
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        out
    }

    /// A receiver from the bytes of [`Held::encode`]; `None` when they are
    /// not such bytes (a damaged spill file), so that a lookup never
    /// answers with a receiver that was not written.
    pub fn decode(bytes: &[u8]) -> Option<Held> {
        if bytes.len() < ENCODED_HEAD || !(bytes.len() - ENCODED_HEAD).is_multiple_of(8) {
            return None;
        }
        let (head, parts) = bytes.split_at(ENCODED_HEAD);
        let word = |i: usize| {
            let b: [u8; 8] = head[8 * i..8 * i + 8].try_into().ok()?;
            Some(u64::from_le_bytes(b))
        };
        let mut stamps = [0i64; 5];
        for (i, s) in stamps.iter_mut().enumerate() {
            *s = word(i)? as i64;
        }
        let points = word(5)? as i64;
        let mut texts = [0u64; 4];
        for (i, t) in texts.iter_mut().enumerate() {
            *t = word(6 + i)?;
        }
        let mut ends = [0u32; 4];
        for (i, e) in ends.iter_mut().enumerate() {
            let at = 80 + 4 * i;
            *e = u32::from_le_bytes(head[at..at + 4].try_into().ok()?);
        }
        let parts: Box<[u64]> = parts
            .chunks_exact(8)
            .map(|c| c.try_into().map(u64::from_le_bytes))
            .collect::<Result<_, _>>()
            .ok()?;
        let ordered = ends.windows(2).all(|w| w[0] <= w[1]);
        if !ordered || ends[3] as usize > parts.len() {
            return None;
        }
        Some(Held {
            stamps,
            points,
            texts,
            parts,
            ends,
        })
    }

    /// When the receiver was deactivated (0: not).
    pub fn deactivated(&self) -> i64 {
        self.stamps[2]
    }
    /// The time the target holds for a timestamp field (0: none); 0 for
    /// fields that are not timestamps.
    pub fn stamp(&self, f: ReceiverField) -> i64 {
        match f {
            ReceiverField::Registered => self.stamps[0],
            ReceiverField::Activated => self.stamps[1],
            ReceiverField::Deactivated => self.stamps[2],
            ReceiverField::Imported => self.stamps[3],
            ReceiverField::Bounced => self.stamps[4],
            _ => 0,
        }
    }
    fn part(&self, i: usize) -> &[u64] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends.get(i).map_or(self.parts.len(), |e| *e as usize);
        &self.parts[start..end]
    }
    fn has(&self, part: usize, h: u64) -> bool {
        self.part(part).binary_search(&h).is_ok()
    }
    fn has_order(&self, o: &Order) -> bool {
        let (without, with) = order_hashes(o);
        if o.stamp == 0 {
            self.has(4, without)
        } else {
            self.has(3, with)
        }
    }
}

/// Reduces `input` to what differs from `have`, with the names of what
/// differs; `None` when nothing does.
pub fn changes(
    mut input: ReceiverInput,
    have: &Held,
) -> Option<(ReceiverInput, Vec<&'static str>)> {
    let mut changed: Vec<&'static str> = Vec::new();
    let mut check = |name: &'static str, same: bool| {
        if !same {
            changed.push(name);
        }
    };
    let stamps = [
        ("registered", input.registered),
        ("activated", input.activated),
        ("deactivated", input.deactivated),
        ("imported", input.imported),
        ("bounced", input.bounced),
    ];
    for ((name, v), held) in stamps.into_iter().zip(have.stamps) {
        check(name, v.is_none_or(|v| v == held));
    }
    check("points", input.points.is_none_or(|v| v == have.points));
    let texts = [
        ("source", &input.source),
        ("last_ip", &input.last_ip),
        ("last_location", &input.last_location),
        ("last_client", &input.last_client),
    ];
    for ((name, v), held) in texts.into_iter().zip(have.texts) {
        check(name, v.as_ref().is_none_or(|v| hash(v) == held));
    }
    check(
        "attributes",
        input
            .attributes
            .iter()
            .flatten()
            .all(|kv| have.has(0, hash(kv))),
    );
    check(
        "global_attributes",
        input
            .global_attributes
            .iter()
            .flatten()
            .all(|kv| have.has(1, hash(kv))),
    );
    check(
        "tags",
        input.tags.iter().flatten().all(|t| have.has(2, hash(t))),
    );
    // Only orders the target lacks (or holds differently) are sent.
    if let Some(orders) = input.orders.take() {
        let new: Vec<Order> = orders.into_iter().filter(|o| !have.has_order(o)).collect();
        check("orders", new.is_empty());
        input.orders = (!new.is_empty()).then_some(new);
    }
    (!changed.is_empty()).then_some((input, changed))
}

/// Leaves field `f` out of a receiver body.
pub fn clear(input: &mut ReceiverInput, f: ReceiverField) {
    match f {
        ReceiverField::Registered => input.registered = None,
        ReceiverField::Activated => input.activated = None,
        ReceiverField::Deactivated => input.deactivated = None,
        ReceiverField::Imported => input.imported = None,
        ReceiverField::Bounced => input.bounced = None,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receiver() -> Receiver {
        let mut r: Receiver = serde_json::from_value(serde_json::json!({
            "id": 7, "email": "anna@example.com", "registered": 1714521600,
            "activated": 1714521601, "points": -3, "source": "shop",
            "attributes": {"firstname": "Anna", "city": "Köln"},
            "global_attributes": {"plz": "50667"},
            "tags": ["vip", "newsletter"],
        }))
        .unwrap();
        r.orders = Some(vec![Order {
            order_id: "o1".into(),
            product_id: "p1".into(),
            product: "Tea".into(),
            price: 4.5,
            currency: "EUR".into(),
            quantity: 2,
            stamp: 1714521602,
            ..Default::default()
        }]);
        r
    }

    #[test]
    fn a_held_receiver_reads_back_from_its_bytes_unchanged() {
        for r in [receiver(), Receiver::default()] {
            let held = Held::from(&r);
            let bytes = held.encode();
            assert_eq!(Held::decode(&bytes), Some(held));
        }
    }

    #[test]
    fn bytes_that_are_not_a_held_receiver_are_refused() {
        let bytes = Held::from(&receiver()).encode();
        assert_eq!(Held::decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Held::decode(&bytes[..ENCODED_HEAD - 8]), None);
        // The part ends point past the parts.
        assert_eq!(Held::decode(&bytes[..ENCODED_HEAD]), None);
    }
}

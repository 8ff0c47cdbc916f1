//! What an import row sends: the difference between the row and the
//! receiver the target holds.
//!
//! What the target holds is kept as a [`Held`]: the timestamps and numbers
//! as they are, every text, attribute, tag and order as a 64-bit hash. A
//! re-import of a million receivers compares against a million of these
//! (about 200 bytes each) instead of a million full receivers with their
//! maps of attributes (kilobytes each). They are kept by address in a
//! [`TargetIndex`](super::held::TargetIndex): in memory up to a budget,
//! past it on disk, as the bytes of [`Held::encode`] (about 40 bytes and 8
//! a part: no names, no lengths but the five part ends).

use crate::pipeline::ReceiverField;
use listpipe_api::{Order, ReceiverInput, ReceiverRow};
use std::hash::{BuildHasher, Hash};

mod policy;
pub(super) use policy::{Kept, Policies, Watched};

/// A value's 64-bit hash, the same for the same value within a run (the
/// target's receiver and the row are hashed alike): foldhash's quality
/// hasher, seeded the same for every call. std's SipHash was 3% of a
/// re-import's client time (perf, issue 15); the hashes never leave the run.
fn hash(v: impl Hash) -> u64 {
    foldhash::quality::FixedState::default().hash_one(v)
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

/// A receiver as the target holds it, reduced to what [`changed_fields`] compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// registered, activated, deactivated, imported, bounced.
    stamps: [i64; 5],
    points: i64,
    /// source, last_ip, last_location, last_client.
    texts: [u64; 4],
    /// Sorted hashes: attribute pairs, global attribute pairs, tags, order
    /// lines (with time, then without), then the [`Watched`] attributes
    /// the target holds a value for, one after the other.
    parts: Box<[u64]>,
    ends: [u32; PARTS - 1],
}

/// The parts of a [`Held`]; the last, the watched attributes held, is
/// empty unless a write policy asks (`policy.rs`): a step without
/// policies pays one byte a receiver for it.
const PARTS: usize = 6;
/// The part of the watched attributes the target holds a value for.
const HELD_NAMES: usize = 5;

impl From<&ReceiverRow<'_>> for Held {
    fn from(r: &ReceiverRow<'_>) -> Self {
        Held::of(r, &Watched::default())
    }
}

impl Held {
    /// The receiver `r`, with which of the `watched` attributes it holds a
    /// value for (what `if_empty` and `empty = "clear"` ask).
    pub fn of(r: &ReceiverRow<'_>, watched: &Watched) -> Self {
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
        let names = sorted(watched.held(r));
        let mut parts = attrs;
        let mut ends = [0u32; PARTS - 1];
        for (i, more) in [globals, tags, with, without, names]
            .into_iter()
            .enumerate()
        {
            ends[i] = parts.len() as u32;
            parts.extend(more);
        }
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

/// The hash of an empty text: most receivers have no `last_ip`,
/// `last_location` or `last_client`, and their encoding leaves it out.
static EMPTY_TEXT: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| hash(String::new()));

/// Appends `v` zig-zagged as a LEB128 varint: a timestamp takes 5 bytes,
/// a zero 1.
fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push(z as u8 | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Reads a varint of [`put_varint`] at `*at`, moving past it; `None` past
/// the end or past ten bytes.
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<i64> {
    let mut z = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        z |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some((z >> 1) as i64 ^ -((z & 1) as i64));
        }
    }
    None
}

impl Held {
    /// The bytes of this receiver, for the in-memory index and the spill:
    /// the five stamps and the points as varints, a byte whose bit `i` says
    /// text `i` is empty, the texts that are not (8 bytes little-endian
    /// each), the five part ends as varints, then the parts (8 bytes each).
    /// About 40 bytes and 8 a part, where a fixed layout took 96 and 8.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + 8 * self.parts.len());
        self.stamps
            .iter()
            .chain([&self.points])
            .for_each(|&w| put_varint(&mut out, w));
        let empty = *EMPTY_TEXT;
        let mask = (0..4).fold(0u8, |m, i| m | (u8::from(self.texts[i] == empty) << i));
        out.push(mask);
        for t in self.texts.iter().filter(|&&t| t != empty) {
            out.extend_from_slice(&t.to_le_bytes());
        }
        self.ends
            .iter()
            .for_each(|&e| put_varint(&mut out, i64::from(e)));
        self.parts
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        out
    }

    /// A receiver from the bytes of [`Held::encode`]; `None` when they are
    /// not such bytes (a damaged spill file), so that a lookup never
    /// answers with a receiver that was not written.
    pub fn decode(bytes: &[u8]) -> Option<Held> {
        let mut at = 0;
        let word = |at: &mut usize| -> Option<u64> {
            let b: [u8; 8] = bytes.get(*at..*at + 8)?.try_into().ok()?;
            *at += 8;
            Some(u64::from_le_bytes(b))
        };
        let mut stamps = [0i64; 5];
        for s in stamps.iter_mut() {
            *s = get_varint(bytes, &mut at)?;
        }
        let points = get_varint(bytes, &mut at)?;
        let mask = *bytes.get(at)?;
        at += 1;
        if mask >> 4 != 0 {
            return None;
        }
        let mut texts = [*EMPTY_TEXT; 4];
        for (i, t) in texts.iter_mut().enumerate() {
            if mask & (1 << i) == 0 {
                *t = word(&mut at)?;
            }
        }
        let mut ends = [0u32; PARTS - 1];
        for e in ends.iter_mut() {
            *e = u32::try_from(get_varint(bytes, &mut at)?).ok()?;
        }
        let rest = &bytes[at..];
        if !rest.len().is_multiple_of(8) {
            return None;
        }
        let parts: Box<[u64]> = rest
            .chunks_exact(8)
            .map(|c| c.try_into().map(u64::from_le_bytes))
            .collect::<Result<_, _>>()
            .ok()?;
        let ordered = ends.windows(2).all(|w| w[0] <= w[1]);
        if !ordered || ends[PARTS - 2] as usize > parts.len() {
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

/// The fields in which the row differs from what the target holds, by
/// name: a field the row leaves out never differs, an order line differs
/// when the target lacks it (or holds it differently). Empty: unchanged.
pub(super) fn changed_fields(input: &ReceiverInput, have: &Held) -> Vec<&'static str> {
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
    check(
        "orders",
        input.orders.iter().flatten().all(|o| have.has_order(o)),
    );
    changed
}

/// What an update of a row that differs ([`changed_fields`]) sends: the
/// row without the order lines the target holds already.
pub(super) fn update_body(mut input: ReceiverInput, have: &Held) -> ReceiverInput {
    if let Some(orders) = input.orders.take() {
        let new: Vec<Order> = orders.into_iter().filter(|o| !have.has_order(o)).collect();
        input.orders = (!new.is_empty()).then_some(new);
    }
    input
}

/// Leaves field `f` out of a receiver body.
pub(super) fn clear(input: &mut ReceiverInput, f: ReceiverField) {
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
    use listpipe_api::Receiver;

    fn held(r: &Receiver) -> Held {
        Held::from(&ReceiverRow::from(r))
    }

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
        let extreme = Receiver {
            points: i64::MIN,
            registered: i64::MAX,
            bounced: -1,
            last_ip: "10.0.0.1".into(),
            last_client: "mail".into(),
            ..Default::default()
        };
        for r in [receiver(), Receiver::default(), extreme] {
            let held = held(&r);
            let bytes = held.encode();
            assert_eq!(Held::decode(&bytes), Some(held));
        }
    }

    #[test]
    fn bytes_that_are_not_a_held_receiver_are_refused() {
        let bytes = held(&receiver()).encode();
        assert_eq!(Held::decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Held::decode(&bytes[..10]), None);
        assert_eq!(Held::decode(&[]), None);
        // The part ends point past the parts.
        let head = bytes.len() - 8 * 3;
        assert_eq!(Held::decode(&bytes[..head]), None);
        // A varint that never ends.
        assert_eq!(Held::decode(&[0xff; 16]), None);
    }

    /// A row that says what the target holds is unchanged; one that differs
    /// sends its fields with only the order lines the target lacks.
    #[test]
    fn a_row_differs_by_the_fields_it_states_and_the_orders_the_target_lacks() {
        let r = receiver();
        let have = held(&r);
        let same = ReceiverInput {
            points: Some(-3),
            attributes: Some(r.attributes.clone()),
            tags: Some(vec!["vip".into()]),
            orders: r.orders.clone(),
            ..ReceiverInput::email("anna@example.com")
        };
        assert!(changed_fields(&same, &have).is_empty());
        let mut new_order = r.orders.clone().unwrap()[0].clone();
        new_order.order_id = "o2".into();
        let differs = ReceiverInput {
            points: Some(4),
            tags: Some(vec!["vip".into(), "new".into()]),
            orders: Some(vec![
                r.orders.clone().unwrap()[0].clone(),
                new_order.clone(),
            ]),
            ..same
        };
        assert_eq!(
            changed_fields(&differs, &have),
            ["points", "tags", "orders"]
        );
        let sent = update_body(differs, &have);
        assert_eq!(sent.orders, Some(vec![new_order]));
        assert_eq!(sent.points, Some(4));
    }
}

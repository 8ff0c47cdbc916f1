//! The write policies of a step's mappings (`update`, `empty`; see
//! `pipeline/policy.rs`) applied to an update: the row is changed before
//! [`changed_fields`](super::changed_fields) compares it, so that what a
//! policy keeps is neither sent nor counted as a change, and a re-run of the
//! same file finds nothing to write.
//!
//! A create is never changed here: the row is sent as mapped. On a receiver
//! the target holds, a value the row states is left out when `update =
//! "never"`, or `"if_empty"` and the target holds one; an empty cell with
//! `empty = "clear"` becomes `""` (the API's way to clear a value: the
//! target deletes an attribute value set to `""`) where the target holds a
//! value and the update policy lets it be written. A value left out that
//! would have changed the target is [`Kept`]: the plan names it and the
//! report counts it.

use super::{EMPTY_TEXT, HELD_NAMES, Held, hash};
use crate::pipeline::{
    Empty, ImportStep, PolicyScope as Scope, ReceiverField, Update, WritePolicy,
};
use listpipe_api::{ReceiverInput, ReceiverRow};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One mapping whose policy is not the default.
#[derive(Debug, Clone)]
struct Entry {
    scope: Scope,
    name: String,
    policy: WritePolicy,
    /// How the plan and the report name it: the mapping's name, or
    /// `global.NAME` / `group.NAME` when the step maps the name twice (as
    /// exports name such columns).
    shown: String,
}

/// The step's mappings whose policy is not `always`/`keep`; empty for a
/// step without policies, which then decides every row as before.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policies {
    entries: Vec<Entry>,
}

/// The values of one row a policy kept from an update: indexes into the
/// step's [`Policies`].
pub(crate) type Kept = Vec<usize>;

/// The attributes whose presence on the target a policy asks (`if_empty`
/// and `empty = "clear"`), read with the group into [`Held`]: `(global,
/// name)`.
#[derive(Debug, Clone, Default)]
pub struct Watched(Arc<[(bool, String)]>);

/// The hash under which a held attribute is watched.
fn held_name(global: bool, name: &str) -> u64 {
    hash((global, "held", name))
}

impl Watched {
    /// The hashes of the watched attributes `r` holds a value for.
    pub(super) fn held(&self, r: &ReceiverRow<'_>) -> Vec<u64> {
        let held = |global: bool, name: &str| {
            let map = if global {
                &r.global_attributes
            } else {
                &r.attributes
            };
            map.get(name).is_some_and(|v| !v.is_empty())
        };
        self.0
            .iter()
            .filter(|(global, name)| held(*global, name))
            .map(|(global, name)| held_name(*global, name))
            .collect()
    }
}

/// The value a row gives for a mapping, and what the target holds.
struct Values {
    /// The row states a value (its cell was not empty).
    stated: bool,
    /// The row's value is what the target holds.
    same: bool,
    /// The target holds a value (not empty, not 0).
    held: bool,
}

impl Policies {
    /// The policies of `step`'s mappings, resolved against its defaults.
    pub(crate) fn new(step: &ImportStep) -> Policies {
        let all = step.write_policies();
        let twice = |name: &str| all.iter().filter(|(_, n, _)| *n == name).count() > 1;
        let entries = all
            .iter()
            .filter(|(_, _, p)| !p.is_default())
            .map(|&(scope, name, policy)| Entry {
                scope,
                name: name.to_string(),
                policy,
                shown: match scope {
                    Scope::Global if twice(name) => format!("global.{name}"),
                    Scope::Group if twice(name) => format!("group.{name}"),
                    _ => name.to_string(),
                },
            })
            .collect();
        Policies { entries }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The attributes whose presence the policies ask of the target.
    pub(crate) fn watched(&self) -> Watched {
        let asks = |p: WritePolicy| p.update == Update::IfEmpty || p.empty == Empty::Clear;
        let names: Vec<(bool, String)> = self
            .entries
            .iter()
            .filter(|e| asks(e.policy))
            .filter_map(|e| match e.scope {
                Scope::Global => Some((true, e.name.clone())),
                Scope::Group => Some((false, e.name.clone())),
                Scope::Field(_) => None,
            })
            .collect();
        Watched(names.into())
    }

    /// Applies the policies to `input`, an update of the receiver `have`;
    /// the values a policy kept from the target are added to `kept`.
    pub(crate) fn apply(&self, input: &mut ReceiverInput, have: &Held, kept: &mut Kept) {
        for (i, e) in self.entries.iter().enumerate() {
            let v = values(input, have, e);
            let writes = match e.policy.update {
                Update::Always => true,
                Update::IfEmpty => !v.held,
                Update::Never => false,
            };
            if v.stated && !v.same && !writes {
                leave_out(input, e);
                kept.push(i);
            } else if !v.stated && v.held && e.policy.empty == Empty::Clear {
                if writes {
                    clear_value(input, e);
                } else {
                    kept.push(i);
                }
            }
        }
    }

    /// `kept` as the plan's detail: `kept: firstname (if_empty), city (never)`.
    pub(crate) fn describe(&self, kept: &Kept) -> String {
        let names: Vec<String> = kept
            .iter()
            .filter_map(|&i| self.entries.get(i))
            .map(|e| format!("{} ({})", e.shown, e.policy.update.as_str()))
            .collect();
        format!("kept: {}", names.join(", "))
    }

    /// Per-mapping counts of kept values, by the names the report uses;
    /// `counts` is indexed as the entries.
    pub(crate) fn counted(&self, counts: &[u64]) -> BTreeMap<String, u64> {
        self.entries
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(e, n)| (e.shown.clone(), *n))
            .collect()
    }
}

/// What the row and the target hold for the mapping `e`.
fn values(input: &ReceiverInput, have: &Held, e: &Entry) -> Values {
    match e.scope {
        Scope::Field(f) => field_values(input, have, f),
        Scope::Global | Scope::Group => {
            let global = e.scope == Scope::Global;
            let (map, part) = if global {
                (&input.global_attributes, 1)
            } else {
                (&input.attributes, 0)
            };
            let value = map.as_ref().and_then(|m| m.get_key_value(&e.name));
            Values {
                stated: value.is_some(),
                same: value.is_some_and(|kv| have.has(part, hash(kv))),
                held: have.has(HELD_NAMES, held_name(global, &e.name)),
            }
        }
    }
}

/// What the row and the target hold for a receiver field.
fn field_values(input: &ReceiverInput, have: &Held, f: ReceiverField) -> Values {
    let number = |v: Option<i64>, held: i64| Values {
        stated: v.is_some(),
        same: v == Some(held),
        held: held != 0,
    };
    let text = |v: &Option<String>, held: u64| Values {
        stated: v.is_some(),
        same: v.as_ref().is_some_and(|v| hash(v) == held),
        held: held != *EMPTY_TEXT,
    };
    match f {
        ReceiverField::Registered => number(input.registered, have.stamps[0]),
        ReceiverField::Activated => number(input.activated, have.stamps[1]),
        ReceiverField::Deactivated => number(input.deactivated, have.stamps[2]),
        ReceiverField::Imported => number(input.imported, have.stamps[3]),
        ReceiverField::Bounced => number(input.bounced, have.stamps[4]),
        ReceiverField::Points => number(input.points, have.points),
        ReceiverField::Source => text(&input.source, have.texts[0]),
        ReceiverField::LastIp => text(&input.last_ip, have.texts[1]),
        ReceiverField::LastLocation => text(&input.last_location, have.texts[2]),
        ReceiverField::LastClient => text(&input.last_client, have.texts[3]),
        // The address is the receiver's key: never under a policy.
        ReceiverField::Email => Values {
            stated: false,
            same: true,
            held: true,
        },
    }
}

/// The text field `f` of `input`, if it is one.
fn text_field(input: &mut ReceiverInput, f: ReceiverField) -> Option<&mut Option<String>> {
    match f {
        ReceiverField::Source => Some(&mut input.source),
        ReceiverField::LastIp => Some(&mut input.last_ip),
        ReceiverField::LastLocation => Some(&mut input.last_location),
        ReceiverField::LastClient => Some(&mut input.last_client),
        _ => None,
    }
}

/// The attribute map of `e`'s scope in `input`.
fn attributes<'i>(
    input: &'i mut ReceiverInput,
    e: &Entry,
) -> &'i mut Option<BTreeMap<String, String>> {
    if e.scope == Scope::Global {
        &mut input.global_attributes
    } else {
        &mut input.attributes
    }
}

/// Leaves `e`'s value out of the update.
fn leave_out(input: &mut ReceiverInput, e: &Entry) {
    match e.scope {
        Scope::Field(f) => match text_field(input, f) {
            Some(t) => *t = None,
            None if f == ReceiverField::Points => input.points = None,
            None => super::clear(input, f),
        },
        Scope::Global | Scope::Group => {
            let map = attributes(input, e);
            if let Some(m) = map.as_mut() {
                m.remove(&e.name);
            }
            if map.as_ref().is_some_and(BTreeMap::is_empty) {
                *map = None;
            }
        }
    }
}

/// Sends `e`'s value as `""`: the target clears it. Text only (the parser
/// refuses `empty = "clear"` elsewhere, and a step's default passes the
/// other fields by).
fn clear_value(input: &mut ReceiverInput, e: &Entry) {
    match e.scope {
        Scope::Field(f) => {
            if let Some(t) = text_field(input, f) {
                *t = Some(String::new());
            }
        }
        Scope::Global | Scope::Group => {
            attributes(input, e)
                .get_or_insert_with(BTreeMap::new)
                .insert(e.name.clone(), String::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::diff::changed_fields;
    use listpipe_api::Receiver;

    /// A policy entry of `scope`, `name`, `update` and `empty`.
    fn entry(scope: Scope, name: &str, update: Update, empty: Empty) -> Entry {
        Entry {
            scope,
            name: name.into(),
            policy: WritePolicy { update, empty },
            shown: name.into(),
        }
    }

    fn policies(entries: Vec<Entry>) -> Policies {
        Policies { entries }
    }

    /// The target's receiver: firstname and city held, nickname empty.
    fn held(p: &Policies) -> Held {
        let r: Receiver = serde_json::from_value(serde_json::json!({
            "id": 1, "email": "anna@example.com", "registered": 100, "source": "shop",
            "global_attributes": {"firstname": "Anna", "city": "Köln", "nickname": ""},
        }))
        .unwrap();
        Held::of(&ReceiverRow::from(&r), &p.watched())
    }

    fn row(globals: &[(&str, &str)]) -> ReceiverInput {
        let map: BTreeMap<String, String> = globals
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ReceiverInput {
            global_attributes: (!map.is_empty()).then_some(map),
            ..ReceiverInput::email("anna@example.com")
        }
    }

    fn globals(input: &ReceiverInput) -> Vec<(&str, &str)> {
        input
            .global_attributes
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// `if_empty` writes only where the target holds nothing: a held value
    /// is kept (and named), an empty one (`""`, as no value) is filled.
    #[test]
    fn if_empty_fills_what_the_target_lacks_and_keeps_what_it_holds() {
        let p = policies(vec![
            entry(Scope::Global, "firstname", Update::IfEmpty, Empty::Keep),
            entry(Scope::Global, "nickname", Update::IfEmpty, Empty::Keep),
        ]);
        let have = held(&p);
        let mut input = row(&[("firstname", "Anne"), ("nickname", "Annie")]);
        let mut kept = Kept::new();
        p.apply(&mut input, &have, &mut kept);
        assert_eq!(globals(&input), [("nickname", "Annie")]);
        assert_eq!(p.describe(&kept), "kept: firstname (if_empty)");
        assert_eq!(changed_fields(&input, &have), ["global_attributes"]);
    }

    /// `never` keeps every value of a receiver the target holds; a value
    /// that is the target's already is not counted as kept.
    #[test]
    fn never_keeps_every_value_and_counts_only_those_that_differ() {
        let p = policies(vec![
            entry(Scope::Global, "firstname", Update::Never, Empty::Keep),
            entry(Scope::Global, "city", Update::Never, Empty::Keep),
            entry(
                Scope::Field(ReceiverField::Source),
                "source",
                Update::Never,
                Empty::Keep,
            ),
        ]);
        let have = held(&p);
        let mut input = row(&[("firstname", "Anna"), ("city", "Bonn")]);
        input.source = Some("crm".into());
        let mut kept = Kept::new();
        p.apply(&mut input, &have, &mut kept);
        // The value the target holds already stays: it changes nothing.
        assert_eq!(globals(&input), [("firstname", "Anna")]);
        assert_eq!(input.source, None);
        assert_eq!(p.describe(&kept), "kept: city (never), source (never)");
        assert!(changed_fields(&input, &have).is_empty());
    }

    /// `empty = "clear"` sends `""` for an empty cell where the target holds
    /// a value, and nothing where it holds none: a re-run is unchanged.
    #[test]
    fn clear_empties_what_the_target_holds_and_nothing_else() {
        let p = policies(vec![
            entry(Scope::Global, "city", Update::Always, Empty::Clear),
            entry(Scope::Global, "nickname", Update::Always, Empty::Clear),
            entry(
                Scope::Field(ReceiverField::Source),
                "source",
                Update::Always,
                Empty::Clear,
            ),
        ]);
        let have = held(&p);
        let mut input = row(&[]);
        let mut kept = Kept::new();
        p.apply(&mut input, &have, &mut kept);
        assert_eq!(globals(&input), [("city", "")]);
        assert_eq!(input.source.as_deref(), Some(""));
        assert!(kept.is_empty());
        assert_eq!(
            changed_fields(&input, &have),
            ["source", "global_attributes"]
        );
        // The target after the update: nothing left to clear.
        let r: Receiver = serde_json::from_value(serde_json::json!({
            "id": 1, "email": "anna@example.com", "source": "",
            "global_attributes": {"firstname": "Anna"},
        }))
        .unwrap();
        let after = Held::of(&ReceiverRow::from(&r), &p.watched());
        let mut again = row(&[]);
        p.apply(&mut again, &after, &mut kept);
        assert!(changed_fields(&again, &after).is_empty());
    }

    /// A clear the update policy does not let through keeps the value.
    #[test]
    fn a_clear_under_if_empty_or_never_keeps_the_value() {
        let p = policies(vec![
            entry(Scope::Global, "city", Update::IfEmpty, Empty::Clear),
            entry(Scope::Global, "firstname", Update::Never, Empty::Clear),
        ]);
        let have = held(&p);
        let mut input = row(&[]);
        let mut kept = Kept::new();
        p.apply(&mut input, &have, &mut kept);
        assert_eq!(input.global_attributes, None);
        assert_eq!(
            p.describe(&kept),
            "kept: city (if_empty), firstname (never)"
        );
    }

    /// Timestamps and points are empty at 0: `if_empty` writes `activated`
    /// where the target holds none and keeps a `registered` it holds.
    #[test]
    fn if_empty_on_times_reads_zero_as_empty() {
        let field =
            |f: ReceiverField| entry(Scope::Field(f), f.as_str(), Update::IfEmpty, Empty::Keep);
        let p = policies(vec![
            field(ReceiverField::Registered),
            field(ReceiverField::Activated),
        ]);
        let have = held(&p);
        let mut input = ReceiverInput {
            registered: Some(5),
            activated: Some(6),
            ..ReceiverInput::email("anna@example.com")
        };
        let mut kept = Kept::new();
        p.apply(&mut input, &have, &mut kept);
        assert_eq!((input.registered, input.activated), (None, Some(6)));
        assert_eq!(p.describe(&kept), "kept: registered (if_empty)");
    }

    /// The step's defaults hold for its mappings unless they set their own;
    /// a step's `empty = "clear"` passes consent by, and the address never
    /// has a policy.
    #[test]
    fn a_step_default_is_resolved_per_mapping() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("in.csv"), "email,first,city,act\n").unwrap();
        let path = dir.path().join("p.toml");
        let toml = "[[import]]\nsource = \"in.csv\"\ngroup = \"G\"\nupdate = \"if_empty\"\nempty = \"clear\"\n\
            [import.receiver]\nemail = \"email\"\nactivated = \"act\"\n\
            [import.global_attributes]\nfirstname = { column = \"first\", update = \"always\", empty = \"keep\" }\ncity = \"city\"\n";
        std::fs::write(&path, toml).unwrap();
        let pipeline = crate::pipeline::load(&path).unwrap();
        let crate::pipeline::Step::Import(step) = &pipeline.steps[0] else {
            panic!("an import step");
        };
        let p = Policies::new(step);
        let shown: Vec<(&str, WritePolicy)> = p
            .entries
            .iter()
            .map(|e| (e.shown.as_str(), e.policy))
            .collect();
        let policy = |update, empty| WritePolicy { update, empty };
        assert_eq!(
            shown,
            [
                ("activated", policy(Update::IfEmpty, Empty::Keep)),
                ("city", policy(Update::IfEmpty, Empty::Clear)),
            ]
        );
        assert_eq!(p.watched().0.len(), 1);
    }
}

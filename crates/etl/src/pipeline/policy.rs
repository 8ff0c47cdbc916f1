//! Write policies (issue 62): what an update of a receiver the target
//! already holds may overwrite. `update` says when a mapped value is
//! written (`always`, `if_empty`: only where the target holds none,
//! `never`: only when the receiver is created), `empty` what an empty cell
//! does (`keep` the target's value, or `clear` it). Both are read on an
//! import step, as the default of its mappings, and on each receiver field
//! and attribute mapping, which overrides the step's. A create always sends
//! the row as mapped: the policies decide updates only (`load/diff.rs`).
//!
//! Also `limit` (a canary run): only the first N receivers of the step are
//! written.

use super::parse::Parser;
use super::reader::{Table, Value, choices};
use super::{ImportStep, Mapping, ReceiverField};
use toml::Spanned;

/// When a mapped value is written to a receiver the target holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Update {
    /// Every run writes what differs (the behaviour before policies).
    #[default]
    Always,
    /// Written only where the target holds no value yet: enrichment.
    IfEmpty,
    /// Written only when the receiver is created.
    Never,
}

impl Update {
    pub const CHOICES: &'static [&'static str] = &["always", "if_empty", "never"];

    pub fn parse(s: &str) -> Option<Update> {
        match s {
            "always" => Some(Update::Always),
            "if_empty" => Some(Update::IfEmpty),
            "never" => Some(Update::Never),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Update::Always => "always",
            Update::IfEmpty => "if_empty",
            Update::Never => "never",
        }
    }
}

/// What an empty cell does to a receiver the target holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Empty {
    /// The target's value stays (the behaviour before policies).
    #[default]
    Keep,
    /// The target's value is cleared (sent as `""`).
    Clear,
}

impl Empty {
    pub const CHOICES: &'static [&'static str] = &["keep", "clear"];

    pub fn parse(s: &str) -> Option<Empty> {
        match s {
            "keep" => Some(Empty::Keep),
            "clear" => Some(Empty::Clear),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Empty::Keep => "keep",
            Empty::Clear => "clear",
        }
    }
}

/// A mapping's policies, or a step's defaults for its mappings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WritePolicy {
    pub update: Update,
    pub empty: Empty,
}

impl WritePolicy {
    /// The policy of `m` in a step whose defaults are `self`: the mapping's
    /// own keys win. `clearable` is false for the values an empty cell never
    /// clears (see [`ReceiverField::clearable`]): a step's `empty = "clear"`
    /// passes them by.
    pub fn of(self, m: &Mapping, clearable: bool) -> WritePolicy {
        let empty = m.empty.unwrap_or(self.empty);
        WritePolicy {
            update: m.update.unwrap_or(self.update),
            empty: if clearable { empty } else { Empty::Keep },
        }
    }

    pub fn is_default(self) -> bool {
        self == WritePolicy::default()
    }
}

impl ReceiverField {
    /// Whether an empty cell may clear the field (`empty = "clear"`): text
    /// only. The address is the receiver's key; consent (`registered`,
    /// `activated`, `deactivated`) is never cleared by an empty cell, so an
    /// opt-out stays one; `imported`, `bounced` and `points` are facts of
    /// the target's own, whose "no value" (0) an export of another tool
    /// does not mean.
    pub fn clearable(self) -> bool {
        matches!(
            self,
            Self::Source | Self::LastIp | Self::LastLocation | Self::LastClient
        )
    }
}

/// Where a mapped value goes, for its policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyScope {
    Field(ReceiverField),
    Global,
    Group,
}

impl ImportStep {
    /// Every mapping of the step but the address, with its write policy
    /// resolved against the step's defaults, in the order of the file's
    /// tables: receiver fields, global attributes, group attributes.
    pub fn write_policies(&self) -> Vec<(PolicyScope, &str, WritePolicy)> {
        let d = self.policy;
        let fields = self
            .fields
            .iter()
            .filter(|(f, _)| *f != ReceiverField::Email)
            .map(|(f, m)| (PolicyScope::Field(*f), f.as_str(), d.of(m, f.clearable())));
        let globals = self
            .global_attributes
            .iter()
            .map(|a| (PolicyScope::Global, a.name.as_str(), d.of(&a.mapping, true)));
        let groups = self
            .attributes
            .iter()
            .map(|a| (PolicyScope::Group, a.name.as_str(), d.of(&a.mapping, true)));
        fields.chain(globals).chain(groups).collect()
    }

    /// The mappings whose policy is not the default, as `check` lists them:
    /// `firstname (update = if_empty)`, `city (empty = clear)`.
    pub fn policies_shown(&self) -> Vec<String> {
        self.write_policies()
            .into_iter()
            .filter(|(_, _, p)| !p.is_default())
            .map(|(_, name, p)| {
                let mut keys = Vec::new();
                if p.update != Update::Always {
                    keys.push(format!("update = {}", p.update.as_str()));
                }
                if p.empty != Empty::Keep {
                    keys.push(format!("empty = {}", p.empty.as_str()));
                }
                format!("{name} ({})", keys.join(", "))
            })
            .collect()
    }
}

/// The message refusing `empty = "clear"` on a field that cannot be cleared.
fn not_clearable(field: ReceiverField) -> String {
    let name = field.as_str();
    match field {
        ReceiverField::Registered | ReceiverField::Activated | ReceiverField::Deactivated => {
            format!(
                "`empty = \"clear\"` cannot apply to `{name}`: an empty cell never clears consent (an opt-out stays an opt-out); remove it"
            )
        }
        _ => format!(
            "`empty = \"clear\"` cannot apply to `{name}`: an empty cell clears text only (attributes, `source`, `last_ip`, `last_location`, `last_client`); remove it"
        ),
    }
}

impl Parser<'_> {
    /// `update` of `t`, checked against its choices.
    fn update_key(&mut self, t: &Table) -> Option<Update> {
        let v = t.str(&mut self.ctx, "update")?;
        let parsed = Update::parse(v.get_ref());
        if parsed.is_none() {
            self.unknown_choice("update", &v, Update::CHOICES);
        }
        parsed
    }

    /// `empty` of `t`, checked against its choices, with its span.
    fn empty_key(&mut self, t: &Table) -> Option<Spanned<Empty>> {
        let v = t.str(&mut self.ctx, "empty")?;
        match Empty::parse(v.get_ref()) {
            Some(e) => Some(Spanned::new(v.span(), e)),
            None => {
                self.unknown_choice("empty", &v, Empty::CHOICES);
                None
            }
        }
    }

    fn unknown_choice(&mut self, key: &str, v: &Spanned<String>, valid: &[&str]) {
        let msg = format!(
            "unknown {key} \"{}\"; valid values: {}",
            v.get_ref(),
            choices(valid)
        );
        self.ctx.error(v.span(), msg);
    }

    /// An import step's `update` and `empty`: the defaults of its mappings.
    pub(super) fn step_policy(&mut self, t: &Table) -> WritePolicy {
        WritePolicy {
            update: self.update_key(t).unwrap_or_default(),
            empty: self
                .empty_key(t)
                .map(Spanned::into_inner)
                .unwrap_or_default(),
        }
    }

    /// A mapping's own `update` and `empty` (its table form, `firstname =
    /// { column = "first", update = "if_empty" }`), into `m`. `field` is the
    /// receiver field mapped (`None`: an attribute, which may be cleared).
    pub(super) fn mapping_policy(
        &mut self,
        v: &Value,
        key: &str,
        parent: &str,
        field: Option<ReceiverField>,
        m: &mut Mapping,
    ) {
        let Some(t) = Table::new(v, format!("`{key}` of {parent}")) else {
            return;
        };
        m.update = self.update_key(&t);
        let empty = self.empty_key(&t);
        if let (Some(e), Some(f)) = (&empty, field)
            && *e.get_ref() == Empty::Clear
            && !f.clearable()
        {
            self.ctx.error(e.span(), not_clearable(f));
        }
        m.empty = empty.map(Spanned::into_inner);
    }

    /// An import step's `limit`: only its first N receivers are written.
    /// Refused in mirror mode, which would take a partial source for the
    /// whole and remove every receiver past the first N.
    pub(super) fn limit(&mut self, t: &Table, mirror: bool) -> Option<u64> {
        let n = t.int(&mut self.ctx, "limit", 1..i64::MAX)?;
        if mirror && let Some(v) = t.get("limit") {
            self.ctx.error(v.span(), MIRROR_LIMIT);
        }
        u64::try_from(n).ok()
    }
}

/// Why mirror mode refuses a limit, in the pipeline file and on the command line.
pub const MIRROR_LIMIT: &str = "`limit` writes only the first receivers of the source, and mirror mode removes every receiver the source lacks: with a limit it would remove all the others; remove `limit` (or `--limit`), or run this step without mode = \"mirror\"";

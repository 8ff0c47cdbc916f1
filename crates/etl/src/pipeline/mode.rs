//! An import step's `mode`: `import` (add and update) or `mirror` (also
//! remove what left the source), with mirror mode's `removal` and
//! `max_removal`. The parsed settings are plain data of the pipeline model,
//! defined here; what mirror mode does with them is in `load/mirror.rs`.

use super::parse::Parser;
use super::reader::{Table, choices};

const MODES: &[&str] = &["import", "mirror"];

/// What happens to a receiver that left the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Set `deactivated` (an opt-out): the receiver stays, with its history.
    Deactivate,
    /// Delete it from the group.
    Delete,
}

impl Removal {
    pub const CHOICES: &'static str = "deactivate, delete";
    pub fn parse(s: &str) -> Option<Removal> {
        match s.to_ascii_lowercase().as_str() {
            "deactivate" => Some(Removal::Deactivate),
            "delete" => Some(Removal::Delete),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Removal::Deactivate => "deactivate",
            Removal::Delete => "delete",
        }
    }
}

/// `mode = "mirror"` of an import step.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorSpec {
    pub removal: Removal,
    /// The most removals one run may make, as a share of the group's
    /// receivers (0.1 is 10%), unless `--allow-mass-removal` is given.
    pub max_share: f64,
}

impl Default for MirrorSpec {
    fn default() -> Self {
        MirrorSpec {
            removal: Removal::Deactivate,
            max_share: 0.10,
        }
    }
}

impl Parser<'_> {
    /// `mode`, `removal` and `max_removal` of an import step.
    pub(super) fn mirror(&mut self, t: &Table) -> Option<MirrorSpec> {
        let mode = t.str(&mut self.ctx, "mode");
        let removal = t.str(&mut self.ctx, "removal");
        let max = t.str(&mut self.ctx, "max_removal");
        let mirror = match &mode {
            None => false,
            Some(m) => match m.get_ref().as_str() {
                "mirror" => true,
                "import" => false,
                other => {
                    let msg = format!("unknown mode \"{other}\"; valid values: {}", choices(MODES));
                    self.ctx.error(m.span(), msg);
                    false
                }
            },
        };
        let mut spec = MirrorSpec::default();
        if let Some(r) = &removal {
            match Removal::parse(r.get_ref()) {
                Some(v) => spec.removal = v,
                None => {
                    let msg = format!(
                        "unknown removal \"{}\"; valid values: {}",
                        r.get_ref(),
                        Removal::CHOICES
                    );
                    self.ctx.error(r.span(), msg);
                }
            }
        }
        if let Some(m) = &max {
            let share = m
                .get_ref()
                .trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<f64>().ok())
                .filter(|p| (0.0..=100.0).contains(p));
            match share {
                Some(p) => spec.max_share = p / 100.0,
                None => {
                    let msg = format!(
                        "max_removal \"{}\" must be a percentage of the group from 0% to 100%, such as \"10%\"",
                        m.get_ref()
                    );
                    self.ctx.error(m.span(), msg);
                }
            }
        }
        if !mirror {
            for (key, given) in [("removal", &removal), ("max_removal", &max)] {
                if let Some(v) = given {
                    self.ctx.error(
                        v.span(),
                        format!("`{key}` applies to mode = \"mirror\" only; add mode = \"mirror\" or remove it"),
                    );
                }
            }
        }
        mirror.then_some(spec)
    }
}

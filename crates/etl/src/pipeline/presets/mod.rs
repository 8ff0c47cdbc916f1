//! Migration presets: `preset = "mailchimp"` in an `[[import]]` step maps another tool's
//! documented export for the user. A preset is data, a TOML file beside this one, in the
//! pipeline file's own vocabulary:
//!
//! - `about`: what the preset reads, for messages (`a Mailchimp audience export`);
//! - `[options.NAME]`: keys the step may set (`values`, `default`), such as Mailchimp's
//!   `unsubscribed = "deactivate" | "blacklist"`;
//! - `[import]`: the step's defaults: receiver fields, attributes, tags, orders...;
//! - `[[blacklist]]`: steps run before the import when `when` matches the options, over
//!   the step's own source (named `<step>-<suffix>`).
//!
//! Expansion happens before parsing (see [`resolve`]): the preset is fitted to the source's
//! header, the step's keys are laid over it, and the result is read like any step, so every
//! check and every positioned error still applies. Users see each preset's rules in
//! `pipelines/README.md`.

mod blacklists;
mod resolve;

use super::parse::Parser;
use super::reader::{Table, choices, type_name};
use super::*;
use crate::source;
use resolve::{Header, respan};
use std::collections::{BTreeMap, HashSet};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A preset: its name and its TOML text.
pub struct Preset {
    pub name: &'static str,
    text: &'static str,
}

/// Every preset, by name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "brevo",
        text: include_str!("brevo.toml"),
    },
    Preset {
        name: "hubspot",
        text: include_str!("hubspot.toml"),
    },
    Preset {
        name: "mailchimp",
        text: include_str!("mailchimp.toml"),
    },
    Preset {
        name: "shopify-customers",
        text: include_str!("shopify-customers.toml"),
    },
    Preset {
        name: "shopify-orders",
        text: include_str!("shopify-orders.toml"),
    },
];

/// The names of every preset, for messages.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

impl Preset {
    /// The preset's document. The texts are part of the program and a test parses each,
    /// so a failure here is a bug; it is still reported, never a panic.
    fn document(&self) -> Result<DeTable<'static>, String> {
        DeTable::parse(self.text)
            .map(Spanned::into_inner)
            .map_err(|e| format!("the {} preset is broken: {}", self.name, e.message()))
    }
}

/// `[options.NAME]` of a preset: the values allowed and the one used when the step is silent.
struct PresetOption {
    name: String,
    values: Vec<String>,
    default: String,
}

fn options(doc: &DeTable<'static>) -> Vec<PresetOption> {
    let Some(DeValue::Table(opts)) = doc.get("options").map(Spanned::get_ref) else {
        return Vec::new();
    };
    opts.iter()
        .filter_map(|(k, v)| {
            let DeValue::Table(o) = v.get_ref() else {
                return None;
            };
            let values: Vec<String> = match o.get("values").map(Spanned::get_ref) {
                Some(DeValue::Array(items)) => items
                    .iter()
                    .filter_map(|i| i.get_ref().as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            let default = o.get("default")?.get_ref().as_str()?.to_string();
            Some(PresetOption {
                name: k.get_ref().to_string(),
                values,
                default,
            })
        })
        .collect()
}

fn text<'a>(doc: &'a DeTable<'static>, key: &str) -> Option<&'a str> {
    doc.get(key).and_then(|v| v.get_ref().as_str())
}

impl Parser<'_> {
    /// The steps an `[[import]]` table with `preset` stands for: the preset's blacklist
    /// steps whose `when` matches, then the import step.
    pub(in crate::pipeline) fn preset_steps(
        &mut self,
        t: &Table,
        pipeline: &str,
        n: usize,
    ) -> Vec<Step> {
        let Some(preset_value) = t.get("preset") else {
            return Vec::new();
        };
        let span = preset_value.span();
        let Some(name) = preset_value.get_ref().as_str() else {
            self.ctx.error(
                span,
                format!(
                    "`preset` in {} must be a preset's name ({}), not {}",
                    t.name,
                    choices(&names()),
                    type_name(preset_value.get_ref())
                ),
            );
            return Vec::new();
        };
        let Some(preset) = PRESETS.iter().find(|p| p.name == name) else {
            self.ctx.error(
                span,
                format!(
                    "unknown preset \"{name}\"; valid presets: {}",
                    choices(&names())
                ),
            );
            return Vec::new();
        };
        let doc = match preset.document() {
            Ok(doc) => doc,
            Err(e) => {
                self.ctx.error(span, e);
                return Vec::new();
            }
        };
        let chosen = self.preset_options(t, preset.name, &doc);
        let option_names: Vec<String> = options(&doc).into_iter().map(|o| o.name).collect();

        // The source's header decides which of the preset's columns apply. Problems with
        // the source itself are reported once, when the step is read below.
        let before = self.ctx.diags.len();
        let spec = self.source_spec(t, "source");
        self.ctx.diags.truncate(before);
        let columns = spec.and_then(|s| source::read_columns(&s, &self.base_dir).ok());
        let header = Header(
            columns
                .as_ref()
                .map(|c| c.iter().cloned().collect::<HashSet<_>>()),
        );

        let Some(DeValue::Table(import)) = doc.get("import").map(Spanned::get_ref) else {
            self.ctx.error(
                span,
                format!("the {} preset has no [import] table", preset.name),
            );
            return Vec::new();
        };
        let fitted = resolve::import_table(import, &header);
        let preset_import = match respan(&DeValue::Table(fitted), &span).into_inner() {
            DeValue::Table(t) => t,
            _ => DeTable::new(),
        };
        if let Some(cols) = &columns
            && self.preset_email_missing(t, import, &preset_import, preset.name, &doc, cols, &span)
        {
            return Vec::new();
        }
        let mut drop: Vec<&str> = vec!["preset"];
        drop.extend(option_names.iter().map(String::as_str));
        let merged = Spanned::new(
            t.span.clone(),
            DeValue::Table(resolve::merge(preset_import, t.map, &drop)),
        );

        let step_name = t
            .get("name")
            .and_then(|v| v.get_ref().as_str())
            .map_or_else(|| format!("import-{n}"), str::to_string);
        let mut steps: Vec<Step> =
            blacklists::tables(t, &doc, &chosen, &header, &span, &step_name, preset.name)
                .into_iter()
                .filter_map(|(table_value, label)| {
                    let bt = Table::new(&table_value, label)?;
                    self.blacklist(&bt, pipeline, n).map(Step::Blacklist)
                })
                .collect();
        let Some(mt) = Table::new(&merged, t.name.clone()) else {
            return steps;
        };
        let mut extra: Vec<&str> = vec![];
        extra.extend(option_names.iter().map(String::as_str));
        if let Some(step) = self.import(&mt, pipeline, n, &extra) {
            steps.push(Step::Import(step));
        }
        steps
    }

    /// The preset's options as the step sets them (or their defaults); a value that is not
    /// one of the option's is reported with the valid ones.
    fn preset_options(
        &mut self,
        t: &Table,
        preset: &str,
        doc: &DeTable<'static>,
    ) -> BTreeMap<String, String> {
        let mut chosen = BTreeMap::new();
        for opt in options(doc) {
            let value = match t.str(&mut self.ctx, &opt.name) {
                None => opt.default.clone(),
                Some(v) if opt.values.contains(v.get_ref()) => v.into_inner(),
                Some(v) => {
                    let values: Vec<&str> = opt.values.iter().map(String::as_str).collect();
                    self.ctx.error(
                        v.span(),
                        format!(
                            "unknown {} \"{}\" for the {preset} preset; valid values: {}",
                            opt.name,
                            v.get_ref(),
                            choices(&values)
                        ),
                    );
                    opt.default.clone()
                }
            };
            chosen.insert(opt.name, value);
        }
        chosen
    }

    /// A preset reads the address from a column the file must have, unless the step maps
    /// it itself: without it, say which export the preset expects (and answer true).
    #[allow(clippy::too_many_arguments)]
    fn preset_email_missing(
        &mut self,
        t: &Table,
        import: &DeTable<'static>,
        fitted: &DeTable<'static>,
        preset: &str,
        doc: &DeTable<'static>,
        columns: &[String],
        span: &std::ops::Range<usize>,
    ) -> bool {
        let own = t
            .get("receiver")
            .and_then(|r| match r.get_ref() {
                DeValue::Table(r) => Some(r.contains_key("email")),
                _ => None,
            })
            .unwrap_or(false);
        let receiver_has_email = |table: &DeTable<'static>| {
            matches!(
                table.get("receiver").map(Spanned::get_ref),
                Some(DeValue::Table(r)) if r.contains_key("email")
            )
        };
        if own || receiver_has_email(fitted) || !receiver_has_email(import) {
            return false;
        }
        let wanted: Vec<String> = match import.get("receiver").map(Spanned::get_ref) {
            Some(DeValue::Table(r)) => match r.get("email").map(Spanned::get_ref) {
                Some(DeValue::String(c)) => vec![c.to_string()],
                Some(DeValue::Table(m)) => match m.get("column").map(Spanned::get_ref) {
                    Some(DeValue::String(c)) => vec![c.to_string()],
                    Some(DeValue::Array(cs)) => cs
                        .iter()
                        .filter_map(|c| c.get_ref().as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
        let about = text(doc, "about").unwrap_or("this tool's export");
        let near = columns
            .iter()
            .find(|c| wanted.iter().any(|w| c.trim().eq_ignore_ascii_case(w)))
            .map(|c| format!(" (did you mean \"{c}\"?)"))
            .unwrap_or_default();
        self.ctx.error(
            span.clone(),
            format!(
                "the source has no column {}{near}, where the {preset} preset reads the address (is it {about}?); its columns: {}; or map the address yourself: [import.receiver] email = \"…\"",
                choices(&wanted).replace('`', "\""),
                super::fields::column_list(columns)
            ),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::IMPORT_KEYS;
    use super::*;

    #[test]
    fn every_preset_is_valid_toml_with_an_import_table_and_known_keys() {
        for p in PRESETS {
            let doc = p.document().unwrap();
            let Some(DeValue::Table(import)) = doc.get("import").map(Spanned::get_ref) else {
                panic!("{}: no [import]", p.name);
            };
            for (k, _) in import.iter() {
                assert!(
                    IMPORT_KEYS.contains(&k.get_ref().as_ref()),
                    "{}: unknown key {}",
                    p.name,
                    k.get_ref()
                );
            }
            assert!(text(&doc, "about").is_some(), "{}: no about", p.name);
            for o in options(&doc) {
                assert!(o.values.contains(&o.default), "{}: {}", p.name, o.name);
            }
        }
    }
}

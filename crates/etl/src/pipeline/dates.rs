//! The keys that say how dates and times are read: `format` (one or a list,
//! tried in order), `ambiguous` (what a value two formats read differently
//! becomes), `timezone` (the zone of times without an offset; the file's, or
//! a mapping's own), and a step's `date_format` and `ambiguous` for the
//! mappings without their own. Each is checked here, where its position is
//! known, so a wrong format or zone never reaches the rows.

use super::format_entry;
use super::parse::Parser;
use super::reader::{Table, choices};
use super::timezone;
use super::*;
use toml::Spanned;

const AMBIGUOUS: &[&str] = &["reject", "first", "omit"];

/// A step's `date_format` and `ambiguous`, for its mappings without their own.
#[derive(Debug, Default)]
pub(super) struct StepDates {
    pub formats: Vec<String>,
    pub ambiguous: Option<Ambiguous>,
}

impl Parser<'_> {
    /// `timezone` at the top of the file: every step's times without an offset.
    pub(super) fn file_timezone(&mut self, top: &Table) {
        if let Some(name) = top.str(&mut self.ctx, "timezone") {
            self.timezone = self.zone_named(&name);
        }
    }

    fn zone_named(&mut self, name: &Spanned<String>) -> Option<chrono_tz::Tz> {
        timezone::zone(name.get_ref())
            .map_err(|why| self.ctx.error(name.span(), why))
            .ok()
    }

    /// A `format` key: a string or a list of strings, each a format.
    fn formats(&mut self, t: &Table, key: &str) -> Option<Vec<String>> {
        let v = t.get(key)?;
        let list = t.strings(&mut self.ctx, key)?;
        if list.is_empty() {
            self.ctx.error(
                v.span(),
                format!(
                    "`{key}` in {} lists no format; give one, or several to try in order",
                    t.name
                ),
            );
            return None;
        }
        for f in &list {
            if let Err(why) = format_entry(f.get_ref()) {
                self.ctx.error(f.span(), why);
            }
        }
        Some(list.into_iter().map(Spanned::into_inner).collect())
    }

    fn ambiguous(&mut self, t: &Table) -> Option<(Ambiguous, Spanned<String>)> {
        let a = t.str(&mut self.ctx, "ambiguous")?;
        let value = match a.get_ref().as_str() {
            "reject" => Ambiguous::Reject,
            "first" => Ambiguous::First,
            "omit" => Ambiguous::Omit,
            other => {
                self.ctx.error(
                    a.span(),
                    format!(
                        "unknown ambiguous \"{other}\"; valid values: {}",
                        choices(AMBIGUOUS)
                    ),
                );
                return None;
            }
        };
        Some((value, a))
    }

    /// A step's `date_format` and `ambiguous`, read before its mappings so
    /// that a mapping's `ambiguous` knows whether it decides anything.
    pub(super) fn step_dates(&mut self, t: &Table) -> StepDates {
        let formats = self.formats(t, "date_format").unwrap_or_default();
        let ambiguous = self.ambiguous(t).map(|(value, a)| {
            if formats.len() < 2 {
                self.ctx.error(
                    a.span(),
                    "`ambiguous` decides between the formats of a `date_format` list, and the step lists fewer than two; list them (date_format = [\"%d/%m/%Y\", \"%m/%d/%Y\"]) or remove it",
                );
            }
            value
        });
        self.step_formats = formats.len();
        StepDates { formats, ambiguous }
    }

    /// The date keys of mapping `t` (of `key`, read as `kind`) into `m`. Keys
    /// that apply to no value of `kind` are refused in `check_applies`.
    pub(super) fn mapping_dates(&mut self, t: &Table, key: &str, kind: ValueKind, m: &mut Mapping) {
        let own = self.formats(t, "format");
        let count = own.as_ref().map_or(self.step_formats, Vec::len);
        m.format = own.unwrap_or_default();
        if let Some((value, a)) = self.ambiguous(t) {
            if count < 2 && matches!(kind, ValueKind::Timestamp | ValueKind::Date) {
                self.ctx.error(
                    a.span(),
                    format!("`ambiguous` decides between the formats of a `format` list, and `{key}` has fewer than two; list them (format = [\"%d/%m/%Y\", \"%m/%d/%Y\"]) or remove it"),
                );
            }
            m.ambiguous = Some(value);
        }
        let own_zone = t.str(&mut self.ctx, "timezone");
        let own_zone = own_zone.and_then(|name| self.zone_named(&name));
        if kind == ValueKind::Timestamp {
            m.timezone = own_zone.or(self.timezone);
        }
    }
}

impl StepDates {
    /// `date_format` and `ambiguous` of a step: the formats of every date and
    /// time it reads without its own (an export written in the account's
    /// regional format, such as `%d-%m-%Y`).
    pub(super) fn fill_in(
        &self,
        fields: &mut [(ReceiverField, Mapping)],
        attributes: [&mut Vec<AttributeMapping>; 2],
        orders: Option<&mut OrdersSpec>,
    ) {
        if self.formats.is_empty() {
            return;
        }
        let set = |m: &mut Mapping| {
            if m.format.is_empty() {
                m.format = self.formats.clone();
                m.ambiguous = m.ambiguous.or(self.ambiguous);
            }
        };
        fields
            .iter_mut()
            .filter(|(f, _)| f.kind() == ValueKind::Timestamp)
            .for_each(|(_, m)| set(m));
        attributes
            .into_iter()
            .flat_map(|a| a.iter_mut())
            .filter(|a| a.kind == listpipe_api::AttributeType::Date)
            .for_each(|a| set(&mut a.mapping));
        if let Some(o) = orders {
            o.fields
                .iter_mut()
                .filter(|(f, _)| f.kind() == ValueKind::Timestamp)
                .for_each(|(_, m)| set(m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Ambiguous, PipelineError, ReceiverField, Step, load};

    /// `p.toml` holding `toml`, beside `in.csv` (columns email, joined), loaded.
    fn loaded(toml: &str) -> Result<super::super::Pipeline, PipelineError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("in.csv"),
            "email,joined\na@example.com,5/6/2012\n",
        )
        .unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, toml).unwrap();
        load(&path)
    }

    const STEP: &str =
        "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n";

    #[test]
    fn ambiguous_omit_is_read_and_an_unknown_value_names_the_three() {
        let p = loaded(&format!(
            "{STEP}registered = {{ column = \"joined\", format = [\"%d/%m/%Y\", \"%m/%d/%Y\"], ambiguous = \"omit\" }}\n"
        ))
        .unwrap();
        let Step::Import(s) = &p.steps[0] else {
            panic!("not an import")
        };
        let (_, registered) = s
            .fields
            .iter()
            .find(|(f, _)| *f == ReceiverField::Registered)
            .unwrap();
        assert_eq!(registered.ambiguous, Some(Ambiguous::Omit));

        let e = loaded(&format!(
            "{STEP}registered = {{ column = \"joined\", format = [\"%d/%m/%Y\", \"%m/%d/%Y\"], ambiguous = \"last\" }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.0.len(), 1, "{:?}", e.0);
        assert!(
            e.0[0].ends_with(
                "p.toml:6:82: unknown ambiguous \"last\"; valid values: `reject`, `first` or `omit`"
            ),
            "{}",
            e.0[0]
        );
    }
}

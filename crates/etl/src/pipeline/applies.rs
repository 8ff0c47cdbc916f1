//! A mapping key that would be accepted and then ignored is refused, with
//! why and what is valid: `trim = false` on an address (always trimmed and
//! lower-cased before it is checked), `case` on an address, `format` on a
//! value that is not a date or time, `decimal` on one that is not a number
//! with decimals, `ambiguous` beside no date or time, `timezone` on anything
//! but a time (a date is a calendar date). Each mapping key then does
//! something wherever it is taken.

use super::ValueKind;
use super::parse::Parser;
use super::reader::{Table, Value};
use toml::de::DeValue;

/// What a value of `kind` is, for messages.
fn described(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Text => "text",
        ValueKind::Email => "an address",
        ValueKind::Timestamp => "a time",
        ValueKind::Date => "a date",
        ValueKind::Integer => "a whole number",
        ValueKind::Number => "a number",
        ValueKind::Gender => "a gender",
    }
}

impl Parser<'_> {
    /// Refuses the keys of mapping `v` (of `key`, read as `kind`) that
    /// would have no effect there.
    pub(super) fn check_applies(&mut self, v: &Value, key: &str, kind: ValueKind) {
        let Some(t) = Table::new(v, String::new()) else {
            return;
        };
        let what = described(kind);
        if kind == ValueKind::Email {
            if let Some(trim) = t.get("trim")
                && matches!(trim.get_ref(), DeValue::Boolean(false))
            {
                self.ctx.error(
                    trim.span(),
                    format!("`trim = false` has no effect on `{key}`: an address is always trimmed and lower-cased before it is checked; remove it (`trim_chars` strips other characters)"),
                );
            }
            if let Some(case) = t.get("case") {
                self.ctx.error(
                    case.span(),
                    format!("`case` has no effect on `{key}`: an address is always lower-cased; remove it"),
                );
            }
        }
        if let Some(format) = t.get("format")
            && !matches!(kind, ValueKind::Timestamp | ValueKind::Date)
        {
            self.ctx.error(
                format.span(),
                format!("`format` reads dates and times, and `{key}` is {what}; remove it (an attribute holding dates takes type = \"date\")"),
            );
        }
        if let Some(ambiguous) = t.get("ambiguous")
            && !matches!(kind, ValueKind::Timestamp | ValueKind::Date)
        {
            self.ctx.error(
                ambiguous.span(),
                format!("`ambiguous` decides between the date and time formats of `format`, and `{key}` is {what}; remove it"),
            );
        }
        if let Some(zone) = t.get("timezone") {
            let why = match kind {
                ValueKind::Timestamp => None,
                ValueKind::Date => Some(format!(
                    "`timezone` has no effect on `{key}`: a date is a calendar date, read as written; remove it"
                )),
                _ => Some(format!(
                    "`timezone` reads times, and `{key}` is {what}; remove it"
                )),
            };
            if let Some(why) = why {
                self.ctx.error(zone.span(), why);
            }
        }
        if let Some(decimal) = t.get("decimal")
            && kind != ValueKind::Number
        {
            self.ctx.error(
                decimal.span(),
                format!("`decimal` reads numbers with decimals (type = \"number\", an order's price), and `{key}` is {what}; remove it"),
            );
        }
    }
}

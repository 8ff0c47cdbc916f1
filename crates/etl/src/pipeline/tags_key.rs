//! The cleaning keys of a step's tags table: `separator` (one string, or a list whose
//! every entry splits a cell) and `map`. Decision: a separator such as `",|"`, two or
//! more different symbols written together, reads like "either of these", yet as a
//! string splits only where all of them stand together; it is refused with both ways
//! to say it. A separator with spaces or a repeated symbol (Google's `" ::: "`, `"||"`)
//! is taken as written.

use super::parse::Parser;
use super::reader::Table;
use toml::de::DeValue;

impl Parser<'_> {
    /// `separator`: `","` unless set; refused empty, without `columns`, or ambiguous.
    pub(super) fn tag_separators(&mut self, tags: &Table, no_columns: bool) -> Vec<String> {
        let Some(v) = tags.get("separator") else {
            return vec![",".to_string()];
        };
        let ctx = &mut self.ctx;
        if no_columns {
            ctx.error(
                v.span(),
                "`separator` splits the cells of the tag `columns`, and the tags table names none; add `columns` or remove it",
            );
        }
        let listed = matches!(v.get_ref(), DeValue::Array(_));
        let Some(items) = tags.strings(ctx, "separator") else {
            return vec![",".to_string()];
        };
        if items.is_empty() || items.iter().any(|s| s.get_ref().is_empty()) {
            ctx.error(v.span(), "`separator` in the tags table must not be empty");
        }
        if let (false, [one]) = (listed, items.as_slice())
            && let Some(chars) = symbols_together(one.get_ref())
        {
            let each: Vec<String> = chars.iter().map(|c| format!("\"{c}\"")).collect();
            let s = one.get_ref();
            ctx.error(
                one.span(),
                format!(
                    "separator \"{s}\" splits only where {} stand together; to split at each of them, write separator = [{}]; to split at \"{s}\" as written, separator = [\"{s}\"]",
                    each.join(" and "),
                    each.join(", ")
                ),
            );
        }
        items
            .into_iter()
            .map(|s| s.into_inner())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// `map = { "* My Contacts" = "contacts", "Starred" = "" }`.
    pub(super) fn tag_map(&mut self, tags: &Table) -> Vec<(String, String)> {
        let ctx = &mut self.ctx;
        let Some(map) = tags.table(ctx, "map") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (from, to) in map.map.iter() {
            match to.get_ref().as_str() {
                Some(to) => out.push((from.get_ref().trim().to_string(), to.trim().to_string())),
                None => ctx.error(
                    to.span(),
                    format!(
                        "values in the tags' `map` must be strings (\"{}\" = \"new tag\", or \"\" to drop it)",
                        from.get_ref()
                    ),
                ),
            }
        }
        out
    }
}

/// The symbols of a separator like `",|"`: two or more different punctuation
/// characters and nothing else.
fn symbols_together(s: &str) -> Option<Vec<char>> {
    let chars: Vec<char> = s.chars().collect();
    let distinct = chars
        .iter()
        .enumerate()
        .all(|(i, c)| !chars[..i].contains(c));
    (chars.len() >= 2 && distinct && chars.iter().all(|c| c.is_ascii_punctuation()))
        .then_some(chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_different_symbols_together_read_as_a_choice() {
        assert_eq!(symbols_together(",|"), Some(vec![',', '|']));
        for literal in [",", " ::: ", "||", "; ", "and"] {
            assert_eq!(symbols_together(literal), None, "{literal}");
        }
    }
}

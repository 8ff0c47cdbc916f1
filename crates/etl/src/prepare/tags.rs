//! Tags from a row: split columns, fixed tags, the step's cleaning (`trim_start`, `map`),
//! an origin prefix, then the spec's normalisation (§2.8). Every change is counted so the
//! report can say so: tags normalised, trimmed, mapped and dropped.

use crate::pipeline::TagsSpec;
use listpipe_api::normalize_tag;
use std::borrow::Cow;

/// The separator of tags inside the prepared frame's `tags` column.
pub const JOIN: char = '\u{1f}';

/// What the cleaning and the normalisation did to one row's tags.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct TagChanges {
    /// Changed by the spec's normalisation (`Größe 44` → `Größe_44`).
    pub normalised: usize,
    /// Shortened by `trim_start`.
    pub trimmed: usize,
    /// Spelled anew by `map`.
    pub mapped: usize,
    /// Mapped to `""`, or left empty by `trim_start`.
    pub dropped: usize,
}

/// Splits `cell` at every one of `separators`. A cell that is a JSON array
/// of strings (`["a","b"]`: how a Parquet or JSON-lines source reads a list,
/// such as a typed export's `tags`) holds its items, whatever the separators.
fn split<'c>(cell: &'c str, separators: &[String]) -> Vec<Cow<'c, str>> {
    let trimmed = cell.trim();
    if trimmed.starts_with('[')
        && trimmed.ends_with(']')
        && let Ok(items) = serde_json::from_str::<Vec<String>>(trimmed)
    {
        return items.into_iter().map(Cow::Owned).collect();
    }
    let mut parts = vec![cell];
    for sep in separators {
        parts = parts
            .into_iter()
            .flat_map(|p| p.split(sep.as_str()))
            .collect();
    }
    parts.into_iter().map(Cow::Borrowed).collect()
}

/// The normalised tags of one row and what was changed to make them.
pub fn row_tags(spec: &TagsSpec, cells: &[Option<&str>]) -> (Vec<String>, TagChanges) {
    let mut out: Vec<String> = Vec::new();
    let mut changes = TagChanges::default();
    let parts: Vec<Cow<str>> = cells
        .iter()
        .flatten()
        .flat_map(|cell| split(cell, &spec.separators))
        .chain(spec.fixed.iter().map(|f| Cow::Borrowed(f.as_str())))
        .collect();
    let raw = parts
        .iter()
        // Exports such as Mailchimp's quote each tag inside the cell.
        .map(|t| t.trim().trim_matches('"').trim())
        .filter(|t| !t.is_empty());
    for tag in raw {
        let tag = match &spec.trim_start {
            Some(chars) => {
                let trimmed = tag.trim_start_matches(|c: char| chars.contains(c)).trim();
                if trimmed.len() != tag.len() {
                    changes.trimmed += 1;
                }
                trimmed
            }
            None => tag,
        };
        let tag = match spec.map.iter().find(|(from, _)| from == tag) {
            Some((_, to)) => {
                changes.mapped += 1;
                to.as_str()
            }
            None => tag,
        };
        if tag.is_empty() {
            changes.dropped += 1;
            continue;
        }
        let with_origin = match &spec.origin {
            Some(o) if !tag.contains('.') => format!("{o}.{tag}"),
            _ => tag.to_string(),
        };
        if let Some(n) = normalize_tag(&with_origin) {
            if n != with_origin {
                changes.normalised += 1;
            }
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    (out, changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(separators: &[&str]) -> TagsSpec {
        TagsSpec {
            columns: vec!["t".into()],
            separators: separators.iter().map(|s| s.to_string()).collect(),
            fixed: vec![],
            origin: None,
            trim_start: None,
            map: vec![],
        }
    }

    #[test]
    fn columns_are_split_prefixed_and_normalised() {
        let spec = TagsSpec {
            fixed: vec!["import".into()],
            origin: Some("Shop".into()),
            ..spec(&[","])
        };
        let (tags, changes) = row_tags(&spec, &[Some("Schuhe, Taschen & Co,,Schuhe")]);
        assert_eq!(tags, ["Shop.Schuhe", "Shop.Taschen___Co", "Shop.import"]);
        assert_eq!(changes.normalised, 1);
    }

    #[test]
    fn quotes_around_each_tag_are_dropped() {
        let (tags, _) = row_tags(&spec(&[","]), &[Some("\"Lorem Editors\",\"VIP\"")]);
        assert_eq!(tags, ["Lorem_Editors", "VIP"]);
    }

    #[test]
    fn a_json_array_of_strings_holds_its_items_even_with_a_separator_inside() {
        let (tags, _) = row_tags(&spec(&[","]), &[Some("[\"vip\",\"news\"]")]);
        assert_eq!(tags, ["vip", "news"]);
        let (tags, _) = row_tags(&spec(&[","]), &[Some("[a,b]")]);
        assert_eq!(tags.len(), 2, "not JSON, so split as text: {tags:?}");
    }

    #[test]
    fn a_cell_is_split_at_every_listed_separator() {
        let (tags, _) = row_tags(&spec(&[",", "|"]), &[Some("a,b|c")]);
        assert_eq!(tags, ["a", "b", "c"]);
    }

    #[test]
    fn leading_symbols_are_trimmed_and_tags_mapped_or_dropped_and_counted() {
        let spec = TagsSpec {
            trim_start: Some("* ".into()),
            map: vec![
                ("Starred".into(), "".into()),
                ("kunden".into(), "customer".into()),
            ],
            ..spec(&[" ::: "])
        };
        let (tags, changes) = row_tags(&spec, &[Some("kunden ::: * My Contacts ::: * Starred")]);
        assert_eq!(tags, ["customer", "My_Contacts"]);
        assert_eq!(
            changes,
            TagChanges {
                normalised: 1,
                trimmed: 2,
                mapped: 2,
                dropped: 1
            }
        );
    }
}

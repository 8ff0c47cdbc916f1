//! Tags from a row: split columns, fixed tags, an origin prefix, then the
//! spec's normalisation (§2.8). Tags the normalisation changed are counted
//! so the report can say so.

use crate::api::normalize_tag;
use crate::pipeline::TagsSpec;

/// The separator of tags inside the prepared frame's `tags` column.
pub const JOIN: char = '\u{1f}';

/// The normalised tags of one row and how many the normalisation changed.
pub fn row_tags(spec: &TagsSpec, cells: &[Option<&str>]) -> (Vec<String>, usize) {
    let mut out: Vec<String> = Vec::new();
    let mut changed = 0;
    let raw = cells
        .iter()
        .flatten()
        .flat_map(|cell| cell.split(spec.separator.as_str()))
        .chain(spec.fixed.iter().map(String::as_str))
        // Exports such as Mailchimp's quote each tag inside the cell.
        .map(|t| t.trim().trim_matches('"').trim())
        .filter(|t| !t.is_empty());
    for tag in raw {
        let with_origin = match &spec.origin {
            Some(o) if !tag.contains('.') => format!("{o}.{tag}"),
            _ => tag.to_string(),
        };
        if let Some(n) = normalize_tag(&with_origin) {
            if n != with_origin {
                changed += 1;
            }
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_split_prefixed_and_normalised() {
        let spec = TagsSpec {
            columns: vec!["i".into()],
            separator: ",".into(),
            fixed: vec!["import".into()],
            origin: Some("Shop".into()),
        };
        let (tags, changed) = row_tags(&spec, &[Some("Schuhe, Taschen & Co,,Schuhe")]);
        assert_eq!(tags, ["Shop.Schuhe", "Shop.Taschen___Co", "Shop.import"]);
        assert_eq!(changed, 1);
    }

    #[test]
    fn quotes_around_each_tag_are_dropped() {
        let spec = TagsSpec {
            columns: vec!["t".into()],
            separator: ",".into(),
            fixed: vec![],
            origin: None,
        };
        let (tags, _) = row_tags(&spec, &[Some("\"Lorem Editors\",\"VIP\"")]);
        assert_eq!(tags, ["Lorem_Editors", "VIP"]);
    }
}

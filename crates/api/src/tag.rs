//! Tags, spec §2.8: `<origin>.<tagname>`, normalised on the way in.

use super::lenient as l;
use serde::{Deserialize, Serialize};

/// The longest origin kept; longer ones are cut (spec §8).
pub const MAX_ORIGIN_CHARS: usize = 50;

fn clean(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Normalises a tag exactly as spec §2.8 says: letters (Unicode), digits,
/// `_` and `-` are kept, every other character becomes `_`; everything
/// before the first period is the origin, cut to 50 characters. Surrounding
/// white space is dropped; an empty tag (or an empty name after the origin)
/// is `None`.
pub fn normalize_tag(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let (origin, name) = match raw.split_once('.') {
        Some((origin, name)) => (Some(origin), name),
        None => (None, raw),
    };
    let name = clean(name);
    if name.is_empty() {
        return None;
    }
    match origin {
        Some(origin) if !origin.trim().is_empty() => {
            let origin: String = clean(origin).chars().take(MAX_ORIGIN_CHARS).collect();
            Some(format!("{origin}.{name}"))
        }
        _ => Some(name),
    }
}

/// The origin of a normalised tag (`""` when it has none).
pub fn tag_origin(tag: &str) -> &str {
    tag.split_once('.').map(|(o, _)| o).unwrap_or("")
}

/// Body of the tag add operations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TagsInput {
    #[serde(deserialize_with = "l::opt_string_list", default)]
    pub tags: Option<Vec<String>>,
    #[serde(
        deserialize_with = "l::opt_i64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub group_id: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(normalize_tag("Shop.Buyer!").as_deref(), Some("Shop.Buyer_"));
        assert_eq!(
            normalize_tag("vip customer").as_deref(),
            Some("vip_customer")
        );
    }

    #[test]
    fn unicode_letters_and_digits_are_kept() {
        assert_eq!(
            normalize_tag("Größe.Kunde-2024").as_deref(),
            Some("Größe.Kunde-2024")
        );
    }

    #[test]
    fn only_the_first_period_separates_the_origin() {
        assert_eq!(normalize_tag("a.b.c").as_deref(), Some("a.b_c"));
    }

    #[test]
    fn origin_is_cut_to_fifty_characters() {
        let tag = normalize_tag(&format!("{}.x", "o".repeat(60))).unwrap();
        assert_eq!(tag, format!("{}.x", "o".repeat(50)));
    }

    #[test]
    fn empty_tags_are_dropped() {
        assert_eq!(normalize_tag("  "), None);
        assert_eq!(normalize_tag("shop."), None);
        assert_eq!(normalize_tag(".plain").as_deref(), Some("plain"));
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        /// Text rich in the characters normalisation cares about.
        fn raw_tag() -> impl Strategy<Value = String> {
            prop::collection::vec(
                prop_oneof![
                    Just('.'),
                    Just(' '),
                    Just('_'),
                    Just('-'),
                    Just('\u{3000}'),
                    Just('\u{200b}'),
                    prop::char::range('a', 'e'),
                    any::<char>(),
                ],
                0..80,
            )
            .prop_map(|v| v.into_iter().collect())
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn normalisation_is_idempotent_and_keeps_only_allowed_characters(raw in raw_tag()) {
                let Some(tag) = normalize_tag(&raw) else {
                    return Ok(());
                };
                prop_assert_eq!(normalize_tag(&tag), Some(tag.clone()));
                prop_assert!(tag.matches('.').count() <= 1, "{tag:?}");
                prop_assert!(
                    tag.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.'),
                    "{tag:?}"
                );
                prop_assert!(!tag.starts_with('.') && !tag.ends_with('.'), "{tag:?}");
                prop_assert!(tag_origin(&tag).chars().count() <= MAX_ORIGIN_CHARS, "{tag:?}");
            }
        }
    }
}

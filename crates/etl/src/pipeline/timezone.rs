//! `timezone = "Europe/Berlin"`: an IANA zone name, checked when the file is
//! read, with the close match suggested when the name is misspelt (a wrong
//! case, a missing region, a typo), since a zone that is silently wrong
//! shifts every imported time by hours.

use chrono_tz::{TZ_VARIANTS, Tz};

/// The zone named `name`, or the message saying what is wrong.
pub(super) fn zone(name: &str) -> Result<Tz, String> {
    if let Ok(tz) = name.parse::<Tz>() {
        return Ok(tz);
    }
    Err(match suggestion(name) {
        Some(near) => format!(
            "unknown timezone \"{name}\" (did you mean \"{near}\"?); write an IANA zone name such as \"Europe/Berlin\""
        ),
        None => format!(
            "unknown timezone \"{name}\"; write an IANA zone name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\""
        ),
    })
}

/// The most edits a misspelt name is from the zone it suggests.
const MAX_EDITS: usize = 2;

/// The zone a user most likely meant: the same name in another case or with
/// spaces for underscores, a city without its region, or a name a couple of
/// letters away.
fn suggestion(name: &str) -> Option<&'static str> {
    let wanted = name.trim().replace(' ', "_").to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    let names = || TZ_VARIANTS.iter().map(|tz| tz.name());
    let city = |n: &str| n.rsplit('/').next().unwrap_or(n).to_lowercase();
    if let Some(n) = names().find(|n| n.to_lowercase() == wanted) {
        return Some(n);
    }
    if !wanted.contains('/')
        && let Some(n) = names().find(|n| n.contains('/') && city(n) == wanted)
    {
        return Some(n);
    }
    // Short names are close to too many others to guess from.
    if wanted.len() < 5 {
        return None;
    }
    let distance = |n: &str| {
        let against = if wanted.contains('/') {
            n.to_lowercase()
        } else {
            city(n)
        };
        strsim::damerau_levenshtein(&wanted, &against)
    };
    names()
        .map(|n| (distance(n), n))
        .filter(|(d, _)| *d <= MAX_EDITS)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iana_names_are_zones() {
        assert_eq!(zone("Europe/Berlin"), Ok(chrono_tz::Europe::Berlin));
        assert_eq!(zone("UTC"), Ok(chrono_tz::UTC));
    }

    #[test]
    fn a_misspelt_name_suggests_the_zone_meant() {
        for (typed, meant) in [
            ("europe/berlin", "Europe/Berlin"),
            ("Berlin", "Europe/Berlin"),
            ("Europe/Berln", "Europe/Berlin"),
            ("America/New York", "America/New_York"),
            ("new york", "America/New_York"),
        ] {
            assert_eq!(
                zone(typed),
                Err(format!(
                    "unknown timezone \"{typed}\" (did you mean \"{meant}\"?); write an IANA zone name such as \"Europe/Berlin\""
                )),
                "{typed}"
            );
        }
        assert_eq!(
            zone("+01:00"),
            Err("unknown timezone \"+01:00\"; write an IANA zone name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\"".into())
        );
    }
}

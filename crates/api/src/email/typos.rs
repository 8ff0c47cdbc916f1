//! Likely misspellings of the domains most addresses are at (`gmial.com`
//! for `gmail.com`). A hint, never a reject: `gmal.com` may be a real domain,
//! so the report only names the rows a person should look at.

/// The big mailbox providers, where one wrong letter is almost always a
/// typo rather than another domain. Short names (`me.com`, `web.de`) are
/// left out: one letter off them is too often a real domain.
const POPULAR: &[&str] = &[
    "gmail.com",
    "googlemail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "icloud.com",
    "live.com",
    "aol.com",
    "msn.com",
    "hotmail.de",
    "yahoo.de",
    "outlook.de",
    "gmx.de",
    "gmx.net",
    "gmx.com",
    "gmx.at",
    "gmx.ch",
    "mail.com",
    "t-online.de",
    "freenet.de",
    "protonmail.com",
    "proton.me",
    "yandex.ru",
    "mail.ru",
    "orange.fr",
    "wanadoo.fr",
    "libero.it",
    "comcast.net",
    "verizon.net",
];

/// Real providers one letter off a [`POPULAR`] one (`email.com` beside
/// `gmail.com` and `mail.com`, `ymail.com` is Yahoo's): never a typo.
/// Decision: a list, not a rule; a domain here is as real as the one it is
/// near, and a warning on every row of it would teach people to ignore them.
const ALSO_REAL: &[&str] = &[
    "email.com",
    "ymail.com",
    "hotmail.be",
    "hotmail.dk",
    "hotmail.se",
    "outlook.be",
    "outlook.dk",
    "yahoo.dk",
    "yahoo.ie",
    "yahoo.se",
];

/// The popular domain `domain` is probably a misspelling of: one letter
/// added, dropped, changed, or two swapped (Damerau–Levenshtein distance 1).
pub fn suggest_domain(domain: &str) -> Option<&'static str> {
    if domain.len() < 7 || POPULAR.contains(&domain) || ALSO_REAL.contains(&domain) {
        return None;
    }
    POPULAR
        .iter()
        .copied()
        .find(|p| p.len() >= 7 && one_edit_apart(domain.as_bytes(), p.as_bytes()))
}

fn one_edit_apart(a: &[u8], b: &[u8]) -> bool {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (
        &a[..a.len() - suffix.min(a.len())],
        &b[..b.len() - suffix.min(b.len())],
    );
    match (a.len(), b.len()) {
        // One letter changed, added or dropped.
        (1, 1) | (0, 1) | (1, 0) => true,
        // Two neighbours swapped.
        (2, 2) => a[0] == b[1] && a[1] == b[0],
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_letter_off_a_popular_domain_is_suggested() {
        for (typo, meant) in [
            ("gmial.com", "gmail.com"),
            ("gmal.com", "gmail.com"),
            ("gnail.com", "gmail.com"),
            ("gmail.con", "gmail.com"),
            ("gmail.co", "gmail.com"),
            ("gmaill.com", "gmail.com"),
            ("hotmial.com", "hotmail.com"),
            ("yahooo.com", "yahoo.com"),
            ("outlok.com", "outlook.com"),
            ("t-onlin.de", "t-online.de"),
        ] {
            assert_eq!(suggest_domain(typo), Some(meant), "{typo}");
        }
    }

    #[test]
    fn real_domains_and_far_ones_are_left_alone() {
        for domain in [
            "gmail.com",
            "example.com",
            "gmx.at",
            "mail.com",
            "web.de",
            "me.com",
        ] {
            assert_eq!(suggest_domain(domain), None, "{domain}");
        }
    }

    #[test]
    fn large_real_providers_near_a_popular_one_are_never_flagged() {
        for domain in [
            "email.com",
            "ymail.com",
            "hotmail.se",
            "yahoo.dk",
            "outlook.be",
        ] {
            assert_eq!(suggest_domain(domain), None, "{domain}");
        }
    }
}

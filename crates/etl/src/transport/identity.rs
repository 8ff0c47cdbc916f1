//! The resolved target: which service and which account a run writes to,
//! spelled the same however the user typed it. The run lock, the journal's
//! header and mirror mode's ledger are keyed by it, so that `127.0.0.1` and
//! `localhost`, or `https://host` and `https://host:443/`, are one target,
//! and a journal written against one server is not trusted against another.

/// The canonical form of a base URL: scheme and host lower-cased, the
/// loopback host spelled `localhost` (`127.0.0.1` and `[::1]` too), the
/// port always given (the scheme's default when none was typed), each path
/// segment without a trailing `.json` (a wire habit some clients have), no
/// trailing slash. A URL that does not parse is kept as typed, trimmed.
pub fn canonical_url(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    let Ok(parsed) = reqwest::Url::parse(trimmed) else {
        return trimmed.to_string();
    };
    // The URL parser lower-cases host names and brackets IPv6 addresses.
    let host = match parsed.host_str().unwrap_or_default() {
        "127.0.0.1" | "[::1]" | "localhost" => "localhost".to_string(),
        h => h.to_ascii_lowercase(),
    };
    let port = parsed
        .port_or_known_default()
        .map(|p| format!(":{p}"))
        .unwrap_or_default();
    let path: Vec<&str> = parsed
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.strip_suffix(".json").unwrap_or(s))
        .collect();
    let mut out = format!("{}://{host}{port}", parsed.scheme());
    for segment in path {
        out.push('/');
        out.push_str(segment);
    }
    out
}

/// The resolved target as journals, locks and ledgers name it.
pub fn resolved(name: &str, account: &str) -> String {
    format!("{name} (account {account})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_target_resolve_to_one_url() {
        for spelling in [
            "http://127.0.0.1:8080",
            "http://localhost:8080/",
            "HTTP://LocalHost:8080",
            "http://[::1]:8080",
        ] {
            assert_eq!(
                canonical_url(spelling),
                "http://localhost:8080",
                "{spelling}"
            );
        }
        assert_eq!(
            canonical_url("https://API.Example.com/"),
            "https://api.example.com:443"
        );
        assert_eq!(
            canonical_url("https://api.example.com:443/v3.json/"),
            "https://api.example.com:443/v3"
        );
        assert_ne!(
            canonical_url("http://localhost:8080"),
            canonical_url("http://localhost:8081")
        );
    }
}

//! URLs as sources: which entries of `paths` are URLs, how they are shown (never with their
//! credentials or query, which may hold a signed URL's secret), and what the downloaded
//! copy is named (the URL's last path segment, so `.csv.gz` still says gzip-compressed CSV).

use reqwest::Url;

/// Whether a `paths` entry is an `http://` or `https://` URL (scheme in any case).
pub fn is_url(entry: &str) -> bool {
    let lower = entry.get(..8).unwrap_or(entry).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The URL as messages, reports and state files show it: scheme, host, port and path;
/// the user name, password, query and fragment left out (`?…` marks a dropped query).
pub fn shown(url: &Url) -> String {
    let mut s = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        s.push_str(&format!(":{port}"));
    }
    s.push_str(url.path());
    if url.query().is_some() {
        s.push_str("?…");
    }
    s
}

/// The same for an entry that may not parse: everything before `@` in the authority and
/// everything from `?` or `#` dropped by hand.
pub fn shown_entry(entry: &str) -> String {
    match Url::parse(entry) {
        Ok(url) => shown(&url),
        Err(_) => {
            let without_query = entry.split(['?', '#']).next().unwrap_or(entry);
            let (scheme, rest) = without_query
                .split_once("://")
                .unwrap_or(("", without_query));
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
    }
}

/// The name the downloaded copy gets: the last path segment with anything but letters,
/// digits, `.`, `-` and `_` replaced by `_`; "download" when the path ends in `/`.
pub fn file_name(url: &Url) -> String {
    let last = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(last).decode_utf8_lossy();
    safe_file_name(&decoded, "download")
}

/// `last` as a local file name: anything but letters, digits, `.`, `-` and `_`
/// replaced by `_`, no leading dots, at most 100 characters; `fallback` when
/// nothing is left.
pub fn safe_file_name(last: &str, fallback: &str) -> String {
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        fallback.to_string()
    } else {
        name.chars().take(100).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        assert!(is_url("https://example.com/a.csv"));
        assert!(is_url("HTTP://example.com/a.csv"));
        assert!(!is_url("exports/https.csv"));
        assert!(!is_url("ftp://example.com/a.csv"));
        assert!(!is_url("h"));
    }

    #[test]
    fn shown_urls_keep_the_path_and_drop_credentials_and_query() {
        let url =
            Url::parse("https://ann:s3cret@example.com:8443/exports/a.csv?sig=abc#x").unwrap();
        assert_eq!(shown(&url), "https://example.com:8443/exports/a.csv?…");
        assert_eq!(
            shown_entry("https://ann:s3cret@exa mple.com/a.csv?sig=abc"),
            "https://exa mple.com/a.csv"
        );
    }

    #[test]
    fn the_copy_is_named_after_the_last_path_segment() {
        let name = |u: &str| file_name(&Url::parse(u).unwrap());
        assert_eq!(
            name("https://h/exports/customers.csv.gz?x=1"),
            "customers.csv.gz"
        );
        assert_eq!(name("https://h/a%20b/list%201.csv"), "list_1.csv");
        assert_eq!(name("https://h/exports/"), "download");
        assert_eq!(name("https://h/../.."), "download");
    }
}

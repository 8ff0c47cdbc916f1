//! Route paths, written once in axum's `{param}` syntax: the server mounts
//! them as they are and the client fills them with [`fill`].

pub const TOKEN: &str = "/oauth/token.php";

pub const DEBUG_EXCHANGE: &str = "/v3/debug/exchange";
pub const DEBUG_TTL: &str = "/v3/debug/ttl";
pub const DEBUG_VALIDATE: &str = "/v3/debug/validate";
pub const DEBUG_WHOAMI: &str = "/v3/debug/whoami";

pub const GROUPS: &str = "/v3/groups";
pub const GROUP: &str = "/v3/groups/{group_id}";
pub const GROUP_STATS: &str = "/v3/groups/{group_id}/stats";
pub const GROUP_ADVANCED_STATS: &str = "/v3/groups/{group_id}/advancedstats";
pub const GROUP_CLEAR: &str = "/v3/groups/{group_id}/clear";

pub const GROUP_RECEIVERS: &str = "/v3/groups/{group_id}/receivers";
pub const GROUP_GET_RECEIVERS: &str = "/v3/groups/{group_id}/get_receivers";
pub const GROUP_RECEIVER: &str = "/v3/groups/{group_id}/receivers/{receiver}";
pub const RECEIVER: &str = "/v3/receivers/{receiver}";

pub const ATTRIBUTES: &str = "/v3/attributes";
pub const ATTRIBUTE: &str = "/v3/attributes/{attribute_id}";
pub const ATTRIBUTE_LIMITS: &str = "/v3/attributes/limits";
pub const GROUP_ATTRIBUTES: &str = "/v3/groups/{group_id}/attributes";
pub const GROUP_ATTRIBUTE: &str = "/v3/groups/{group_id}/attributes/{attribute_id}";
pub const RECEIVER_ATTRIBUTES: &str = "/v3/receivers/{receiver}/attributes";
pub const GROUP_RECEIVER_ATTRIBUTE: &str =
    "/v3/groups/{group_id}/receivers/{receiver}/attributes/{attribute_id}";
pub const RECEIVER_ATTRIBUTE: &str = "/v3/receivers/{receiver}/attributes/{attribute_id}";

pub const TAGS: &str = "/v3/receivers/tags";
pub const RECEIVER_TAGS: &str = "/v3/receivers/{receiver}/tags";
pub const GROUP_RECEIVER_TAGS: &str = "/v3/groups/{group_id}/receivers/{receiver}/tags";

pub const BLACKLIST: &str = "/v3/blacklist";
pub const BLACKLIST_ENTRY: &str = "/v3/blacklist/{email}";
pub const BLACKLIST_BATCH: &str = "/v3/blacklist/batch";
pub const BLACKLIST_VALIDATE: &str = "/v3/blacklist/validate";
pub const GROUP_BLOCKLIST: &str = "/v3/groups/{group_id}/blacklist";
pub const GROUP_BLOCKLIST_ENTRY: &str = "/v3/groups/{group_id}/blacklist/{email}";

/// Characters escaped in a path segment: everything but unreserved ones and `@`.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'@');

/// Fills the `{param}`s of a route template in order, percent-encoding each
/// value as a path segment. Extra params are ignored; missing ones stay.
pub fn fill(template: &str, params: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut params = params.iter();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        match params.next() {
            Some(p) => out.extend(percent_encoding::utf8_percent_encode(p, SEGMENT)),
            None => out.push_str(&rest[start..start + len + 1]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_params_in_order_and_escapes_them() {
        assert_eq!(
            fill(GROUP_RECEIVER, &["7", "a b@x.de"]),
            "/v3/groups/7/receivers/a%20b@x.de"
        );
        assert_eq!(fill(GROUPS, &[]), "/v3/groups");
    }
}

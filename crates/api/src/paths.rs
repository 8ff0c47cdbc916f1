//! Route paths, written once in axum's `{param}` syntax: the server mounts
//! them as they are and the client fills them with [`fill`].

pub const TOKEN: &str = "/oauth/token.php";
/// The OpenAPI document of every endpoint (a listpipe extension, no token
/// needed), served as `/v3/openapi.json`: the wire layer strips `.json`.
pub const OPENAPI: &str = "/v3/openapi";
/// The login-and-approve page of the authorization-code flow (wire.md).
pub const AUTHORIZE: &str = "/oauth/authorize.php";

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

// Extensions of the live service (wire.md), not in the spec.
pub const GROUP_RECEIVERS_UPSERT: &str = "/v3/groups/{group_id}/receivers/upsert";
pub const GROUP_RECEIVERS_INSERT: &str = "/v3/groups/{group_id}/receivers/insert";
pub const GROUP_RECEIVERS_UPSERTPLUS: &str = "/v3/groups/{group_id}/receivers/upsertplus";
pub const RECEIVERS_BOUNCED: &str = "/v3/receivers/bounced";
pub const RECEIVER_GROUPS: &str = "/v3/receivers/{receiver}/groups";
pub const RECEIVER_EMAIL: &str = "/v3/receivers/{receiver}/email";
pub const GROUP_RECEIVER_ACTIVATE: &str = "/v3/groups/{group_id}/receivers/{receiver}/activate";
pub const GROUP_RECEIVER_DEACTIVATE: &str = "/v3/groups/{group_id}/receivers/{receiver}/deactivate";

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

pub const GROUP_FILTERS: &str = "/v3/groups/{group_id}/filters";
pub const GROUP_FILTER: &str = "/v3/groups/{group_id}/filters/{filter_id}";
pub const GROUP_FILTER_STATS: &str = "/v3/groups/{group_id}/filters/{filter_id}/stats";
pub const GROUP_FILTER_COUNT: &str = "/v3/groups/{group_id}/filters/{filter_id}/count";
pub const GROUP_FILTER_RECEIVERS: &str = "/v3/groups/{group_id}/filters/{filter_id}/receivers";
pub const RUNTIME_FILTER: &str = "/v3/receivers/filter";

pub const BLACKLIST: &str = "/v3/blacklist";
pub const BLACKLIST_ENTRY: &str = "/v3/blacklist/{email}";
pub const BLACKLIST_BATCH: &str = "/v3/blacklist/batch";
pub const BLACKLIST_VALIDATE: &str = "/v3/blacklist/validate";
pub const GROUP_BLOCKLIST: &str = "/v3/groups/{group_id}/blacklist";
pub const GROUP_BLOCKLIST_ENTRY: &str = "/v3/groups/{group_id}/blacklist/{email}";

pub const CLIENTS: &str = "/v3/clients";
pub const CLIENT: &str = "/v3/clients/{client_id}";
pub const CLIENT_BY_DOMAIN: &str = "/v3/clients/domain/{domain}";
pub const CLIENT_PLAN: &str = "/v3/clients/{client_id}/plan";
pub const CLIENT_LIMITS: &str = "/v3/clients/{client_id}/limits";
pub const CLIENT_INVOICE_ADDRESS: &str = "/v3/clients/{client_id}/invoiceaddress";
pub const CLIENT_NEXT_INVOICE_DATE: &str = "/v3/clients/{client_id}/nextinvoicedate";
pub const CLIENT_CONTINGENT: &str = "/v3/clients/{client_id}/contingent";
pub const CLIENT_RECEIVER_COUNT: &str = "/v3/clients/{client_id}/receivercount";
pub const CLIENT_ACTIVE_RECEIVER_COUNT: &str = "/v3/clients/{client_id}/activereceivercount";
pub const CLIENT_USERS: &str = "/v3/clients/{client_id}/users";

// Forms are deprecated (spec §9) and still served.
pub const FORMS: &str = "/v3/forms";
pub const FORM: &str = "/v3/forms/{form_id}";
pub const FORM_CODE: &str = "/v3/forms/{form_id}/code";
pub const FORM_FROM_TEMPLATE: &str = "/v3/forms/{group_id}/createfromtemplate/{type}";
pub const FORM_SEND: &str = "/v3/forms/{form_id}/send/{type}";
pub const GROUP_FORMS: &str = "/v3/groups/{group_id}/forms";
/// A listpipe extension: the double-opt-in mails the server wrote.
pub const OUTBOX: &str = "/v3/outbox";
/// Public (no token): what an embedded form posts to, and the link in a
/// double-opt-in mail.
pub const FORM_SUBMIT: &str = "/forms/{form_id}/submit";
pub const FORM_CONFIRM: &str = "/forms/confirm/{token}";

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

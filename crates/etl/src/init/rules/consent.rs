//! The consent tables: which columns record consent or its withdrawal, and which of their
//! values mean yes, no or withdrawn (read by `consent`).

/// Date columns that record consent itself (an opt-in confirmation), by name: the best time
/// for `activated`.
pub const CONSENT_TIME_NAMES: &[&str] = &[
    "confirm_time",
    "confirmed_at",
    "confirmed",
    "opted in at",
    "opt in date",
    "optin_time",
    "double opt-in date",
    "doi date",
    "consent date",
    "subscribed_at",
];

/// Date columns that record a withdrawal: a non-empty cell means the person opted out.
pub const WITHDRAWAL_TIME_NAMES: &[&str] = &[
    "unsubscribed_at",
    "unsub_time",
    "unsubscribed date",
    "unsubscribe date",
    "opt-out date",
    "opted out at",
    "abmeldedatum",
    "email disabled",
    "email_disabled_at",
    "disabled at",
    "deleted_at",
];

/// Columns whose values say whether someone agreed to receive mail (a flag), by header part.
pub const CONSENT_FLAG_PARTS: &[&str] = &[
    "newsletter",
    "subscribed",
    "subscription",
    "optin",
    "opt-in",
    "acceptsmarketing",
    "acceptsemailmarketing",
    "emailmarketing",
    "marketingcontactstatus",
    "consent",
    "einwilligung",
    "permission",
];

/// Status columns, by whole name: their values tell subscribed from withdrawn (a part such
/// as `status` alone would take an order's `paymentStatus` for consent).
pub const CONSENT_STATUS_NAMES: &[&str] = &[
    "status",
    "email status",
    "member status",
    "subscriber status",
    "subscription status",
    "newsletter status",
    "marketing status",
];

/// Columns whose yes-values mean the opposite: the person withdrew or is blocked.
pub const WITHDRAWAL_FLAG_PARTS: &[&str] = &[
    "unsubscribed",
    "optout",
    "opt-out",
    "blacklisted",
    "blocklisted",
    "emaildisabled",
    "donotemail",
    "donotcontact",
    "bounced",
];

/// Values that mean yes / subscribed, compared trimmed and without case.
pub const YES_VALUES: &[&str] = &[
    "1",
    "yes",
    "y",
    "true",
    "t",
    "x",
    "ja",
    "j",
    "oui",
    "si",
    "subscribed",
    "active",
    "opted in",
    "opted_in",
    "optedin",
    "confirmed",
    "marketing contact",
    "on",
];

/// Values that mean no, without saying the person withdrew (never asked, not confirmed).
pub const NO_VALUES: &[&str] = &[
    "0",
    "no",
    "n",
    "false",
    "f",
    "nein",
    "non",
    "off",
    "pending",
    "unconfirmed",
    "not subscribed",
    "never subscribed",
    "non-marketing contact",
    "transactional",
];

/// The yes-spelling of a no-spelling, for a flag whose rows read show only "no": `0` → `1`.
/// Rows marked with it are activated; nothing is activated that the file does not mark.
pub const YES_OF_NO: &[(&str, &str)] = &[
    ("0", "1"),
    ("no", "yes"),
    ("No", "Yes"),
    ("NO", "YES"),
    ("false", "true"),
    ("False", "True"),
    ("FALSE", "TRUE"),
    ("n", "y"),
    ("N", "Y"),
    ("nein", "ja"),
    ("Nein", "Ja"),
];

/// Values that record a withdrawal or a bounce: the receiver is deactivated.
pub const WITHDRAWN_VALUES: &[&str] = &[
    "unsubscribed",
    "inactive",
    "opted out",
    "opted_out",
    "optedout",
    "cleaned",
    "bounced",
    "blocked",
    "blocklisted",
    "blacklisted",
    "disabled",
    "deleted",
];

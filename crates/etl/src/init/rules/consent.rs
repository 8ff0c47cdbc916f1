//! The consent tables: which columns record email consent or its withdrawal, which of
//! their values mean yes, no or withdrawn, and which columns only look like consent (read
//! by `consent`). A column grants consent only when what it says is unambiguous: its
//! values are subscription words, or its name speaks of email consent and its values are
//! yes or no. Header names are compared normalised (`rules::normalise`), words as split by
//! `rules::words`.

/// Date columns that record consent itself (an opt-in confirmation), by name: the best time
/// for `activated`.
pub const CONSENT_TIME_NAMES: &[&str] = &[
    "confirm_time",
    "confirmed_at",
    "confirmed",
    "opted in at",
    "opt in date",
    "optin_time",
    "timestamp_opt",
    "double opt-in date",
    "doi date",
    "consent date",
    "subscribed_at",
    "opt-in time",
    "subscribed on",
    "subscription confirmed",
    "opt-in datum",
    "double opt-in datum",
    "bestätigt am",
];

/// Date columns that record a withdrawal: a non-empty cell means the person opted out.
pub const WITHDRAWAL_TIME_NAMES: &[&str] = &[
    "unsubscribed_at",
    "unsub_time",
    "unsubscribed date",
    "unsubscribe date",
    "unsubscribed on",
    "opt-out date",
    "opted out at",
    "opted out on",
    "unsubscribe time",
    "deactivated",
    "deactivated at",
    "deactivation date",
    "abmeldedatum",
    "abgemeldet am",
    "email disabled",
    "email_disabled_at",
    "disabled at",
    "deleted_at",
];

/// Header parts that name newsletter or marketing mail by themselves: a yes/no column
/// named so is the email consent (`Newsletter`, `Accepts Marketing`, `Mailing list`).
pub const NEWSLETTER_PARTS: &[&str] = &[
    "newsletter",
    "mailing",
    "marketing",
    "infolettre",
    "boletin",
    "nieuwsbrief",
    "werbung",
];

/// Header parts that say a column grants or records permission. Alone (`Consent`,
/// `Opt-in`) a yes/no column is the email consent only in a file with no column that names
/// email or newsletter consent; with `email` in the header (`email_opt_in`,
/// `subscribed_to_emails`) it is the email consent.
pub const CONSENT_PARTS: &[&str] = &[
    "consent",
    "optin",
    "optedin",
    "permission",
    "einwilligung",
    "zustimmung",
    "consentement",
    "consentimiento",
    "consenso",
    "toestemming",
    "subscribed",
];

/// Header parts that name consent only beside `email` (`Email Subscription`, `Receive
/// emails`): alone they are as often a product's subscription or a term of sale.
pub const EMAIL_CONSENT_PARTS: &[&str] = &[
    "subscription",
    "subscribe",
    "accepts",
    "receive",
    "allow",
    "agree",
    "wants",
];

/// Header parts that are a permission or a state of something else: another channel, a
/// partner's offers, a paid plan, an account, an order, a score. Such a column is never
/// email consent, whatever its values (`Accepts SMS Marketing`, `Partner offers`,
/// `active_subscription`, `Lifecycle Stage`).
pub const NOT_CONSENT_PARTS: &[&str] = &[
    "sms",
    "phone",
    "call",
    "fax",
    "postal",
    "whatsapp",
    "push",
    "textmessage",
    "partner",
    "thirdparty",
    "3rdparty",
    "dritte",
    "tiers",
    "affiliate",
    "activesubscription",
    "plan",
    "tier",
    "paid",
    "billing",
    "payment",
    "financial",
    "invoice",
    "order",
    "fulfillment",
    "lifecycle",
    "lead",
    "score",
    "rating",
    "campaign",
    "login",
    "account",
    "verified",
    "tax",
    "vip",
    "remote",
    "admin",
    "terms",
    "privacy",
    "cookie",
    "tracking",
    "gdpr",
    "dsgvo",
    "datenschutz",
    "dataprocessing",
    "agb",
];

/// Whole header words that are another channel (`post` is a word here, not a part of
/// `Postleitzahl`).
pub const NOT_CONSENT_WORDS: &[&str] = &["post", "text", "letter", "brief"];

/// Header parts whose yes-values mean the opposite: the person withdrew or is blocked.
pub const WITHDRAWAL_FLAG_PARTS: &[&str] = &[
    "unsubscribed",
    "optout",
    "optedout",
    "blacklist",
    "blocklist",
    "donotemail",
    "donotmail",
    "noemail",
    "nomail",
    "donotcontact",
    "bounced",
    "suppressed",
    "abgemeldet",
    "werbesperre",
    "emailsperre",
];

/// Header parts of a flag whose "no" means the person receives email (`email_disabled` =
/// `false`, as Substack writes it) and whose "yes" is an opt-out.
pub const DISABLED_FLAG_PARTS: &[&str] = &["emaildisabled", "emailsdisabled", "disableemail"];

/// Header names of status columns: their values are read as a subscription status when
/// they are subscription words; when they are not understood, the user is asked.
pub const CONSENT_STATUS_NAMES: &[&str] = &[
    "status",
    "email status",
    "member status",
    "subscriber status",
    "subscription status",
    "newsletter status",
    "marketing status",
    "list status",
    "global status",
];

/// Values that say "yes" in a flag, compared trimmed and without case.
pub const YES_VALUES: &[&str] = &[
    "1", "yes", "y", "true", "t", "x", "ja", "j", "oui", "si", "sí", "on", "wahr",
];

/// Values that say "no" in a flag.
pub const NO_VALUES: &[&str] = &[
    "0", "no", "n", "false", "f", "nein", "non", "off", "nee", "falsch",
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

/// Status values that record a subscription, in the languages of the service's users.
/// Values are compared without case, `_` and `-` read as spaces (`NEVER_SUBSCRIBED`,
/// `opted-in`).
pub const SUBSCRIBED_VALUES: &[&str] = &[
    "subscribed",
    "opted in",
    "opted-in",
    "opted_in",
    "optedin",
    "opt-in",
    "confirmed",
    "double opt-in",
    "explicit",
    "marketing contact",
    "abonniert",
    "angemeldet",
    "eingetragen",
    "bestätigt",
    "abonné",
    "abonnée",
    "abonne",
    "inscrit",
    "inscrite",
    "confirmé",
    "suscrito",
    "suscrita",
    "confirmado",
    "iscritto",
    "iscritta",
    "confermato",
    "ingeschreven",
    "aangemeld",
    "geabonneerd",
    "bevestigd",
];

/// Status values that record a withdrawal, a bounce or a block: the receiver is
/// deactivated.
pub const WITHDRAWN_VALUES: &[&str] = &[
    "unsubscribed",
    "opted out",
    "opted-out",
    "opted_out",
    "optedout",
    "opt-out",
    "cleaned",
    "bounced",
    "hard bounce",
    "hardbounced",
    "complained",
    "spam",
    "junk",
    "blocklisted",
    "blacklisted",
    "suppressed",
    "abgemeldet",
    "ausgetragen",
    "abbestellt",
    "désabonné",
    "désabonnée",
    "desabonne",
    "désinscrit",
    "désinscrite",
    "dado de baja",
    "baja",
    "desuscrito",
    "disiscritto",
    "disiscritta",
    "uitgeschreven",
    "afgemeld",
];

/// Status values that are neither: never asked, not confirmed yet.
pub const NEUTRAL_VALUES: &[&str] = &[
    "pending",
    "unconfirmed",
    "not subscribed",
    "never subscribed",
    "non-subscribed",
    "nonsubscribed",
    "non_subscribed",
    "non-marketing contact",
    "transactional",
    "implicit",
    "no consent",
    "new",
    "ausstehend",
    "unbestätigt",
    "en attente",
    "non confirmé",
    "pendiente",
    "in attesa",
    "in afwachting",
];

/// The words of a record's or an account's state: a column of these says whether a
/// customer, user or donation plan is active, not whether the person wants email. They
/// become consent only where the file is about email subscriptions (it records
/// unsubscribes, or the header names the newsletter); elsewhere the user is asked.
pub const ACTIVE_VALUES: &[&str] = &[
    "active", "enabled", "aktiv", "actif", "activo", "attivo", "actief",
];

/// The other words of a record's or an account's state (see [`ACTIVE_VALUES`]); in an
/// email subscription's status `inactive` means the subscriber no longer receives mail.
pub const INACTIVE_VALUES: &[&str] = &[
    "inactive",
    "disabled",
    "deleted",
    "archived",
    "locked",
    "suspended",
    "blocked",
    "cancelled",
    "canceled",
    "inaktiv",
    "inactif",
    "inactivo",
    "inattivo",
    "inactief",
    "registered",
];

//! Every heuristic `init` applies, as data: which header names mean what, which values mean
//! consent, which headers betray another tool's export. A newcomer teaches `init` a new
//! export by adding a row here (the consent tables in `rules/consent.rs`); the code that
//! reads these tables (`columns`, `consent`, `tools`) holds no names of its own. Header
//! names are compared normalised (see [`normalise`]): lower case, anything but letters and
//! digits dropped, so `E-Mail`, `e_mail` and `EMAIL` are one name.

pub mod consent;
mod tools;

pub use tools::{MONTH_FIRST_TOOLS, MonthFirstTool, TOOL_EXPORTS, ToolExport};

pub use consent::{CONSENT_TIME_NAMES, WITHDRAWAL_TIME_NAMES};

/// A header name reduced to lower-case letters and digits: `"E-Mail Address"` → `emailaddress`.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A header's words, lower case: split at anything but letters and digits and where a
/// lower-case letter meets an upper-case one (`doNotCall` → `do`, `not`, `call`).
pub fn words(header: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in header.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && last_lower);
        if boundary && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        last_lower = c.is_lowercase();
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether `header` is one of `names` (normalised), or ends with one of them after a known
/// prefix such as `billing_` (shop exports repeat fields per address).
pub fn header_is(header: &str, names: &[&str]) -> bool {
    let h = normalise(header);
    names.iter().any(|n| {
        let n = normalise(n);
        h == n
            || PREFIXES
                .iter()
                .any(|p| h.strip_prefix(p) == Some(n.as_str()))
    })
}

/// Whether `header` contains one of `parts` (normalised).
pub fn header_contains(header: &str, parts: &[&str]) -> bool {
    let h = normalise(header);
    parts.iter().any(|p| h.contains(&normalise(p)))
}

/// Prefixes shop and CRM exports put before a field of the same meaning.
const PREFIXES: &[&str] = &[
    "billing",
    "default",
    "defaultaddress",
    "customer",
    "contact",
];

/// Header names of an address column. Content decides too: see `columns`.
pub const EMAIL_NAMES: &[&str] = &[
    "email",
    "e-mail",
    "email address",
    "e-mail address",
    "e-mail-adresse",
    "emailadresse",
    "mail",
    "courriel",
    "correo",
    "e-mail 1 - value",
    "primary email",
];

/// The share of a column's non-empty values that must be valid addresses for the column
/// to count as an address column by its content.
pub const EMAIL_CONTENT_SHARE: f64 = 0.5;

/// Columns never imported, and why (said in the pipeline's comment).
pub struct Secret {
    pub parts: &'static [&'static str],
    pub why: &'static str,
}

/// Secrets by header part; a name containing a part is a secret.
pub const SECRETS: &[Secret] = &[
    Secret {
        parts: &[
            "password", "passwort", "passwd", "pwhash", "salt", "encoder",
        ],
        why: "a password or its hash: never copy credentials into a mailing list",
    },
    Secret {
        parts: &["token", "secret", "apikey", "sessionid"],
        why: "an access token or secret: it grants access to another system",
    },
    Secret {
        parts: &[
            "cardnumber",
            "creditcard",
            "ccnumber",
            "cvv",
            "cvc",
            "iban",
            "cardexp",
        ],
        why: "payment card or bank data: must not be stored outside the payment system",
    },
];

/// A receiver field or global attribute a column goes to by its name.
pub struct NamedField {
    /// `receiver.points`, `global.firstname`, ...
    pub target: Target,
    pub names: &'static [&'static str],
}

/// Where a named column goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A receiver field (`points`, `last_ip`).
    Receiver(&'static str),
    /// A global attribute with its type.
    Global(&'static str, AttrType),
}

/// The type of an attribute, as the pipeline's `type` key spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrType {
    Text,
    Number,
    Gender,
    Date,
}

impl AttrType {
    pub fn as_str(self) -> &'static str {
        match self {
            AttrType::Text => "text",
            AttrType::Number => "number",
            AttrType::Gender => "gender",
            AttrType::Date => "date",
        }
    }
}

/// Columns mapped by name; the first row whose names fit wins, and each target is used once.
pub const NAMED_FIELDS: &[NamedField] = &[
    NamedField {
        target: Target::Global("firstname", AttrType::Text),
        names: &[
            "first name",
            "firstname",
            "first_name",
            "given name",
            "vorname",
            "prenom",
            "fname",
        ],
    },
    NamedField {
        target: Target::Global("lastname", AttrType::Text),
        names: &[
            "last name",
            "lastname",
            "last_name",
            "family name",
            "surname",
            "nachname",
            "nom",
            "lname",
        ],
    },
    NamedField {
        target: Target::Global("salutation", AttrType::Gender),
        names: &[
            "salutation",
            "anrede",
            "gender",
            "sex",
            "geschlecht",
            "civilite",
        ],
    },
    NamedField {
        target: Target::Global("birthday", AttrType::Date),
        names: &[
            "birthday",
            "birthdate",
            "date of birth",
            "dob",
            "geburtsdatum",
            "geburtstag",
        ],
    },
    NamedField {
        target: Target::Global("phone", AttrType::Text),
        names: &[
            "phone",
            "phone number",
            "telephone",
            "telefon",
            "tel",
            "mobile",
            "sms",
            "phone 1 - value",
        ],
    },
    NamedField {
        target: Target::Global("company", AttrType::Text),
        names: &[
            "company",
            "company name",
            "firma",
            "organization",
            "organisation name",
        ],
    },
    NamedField {
        target: Target::Global("street", AttrType::Text),
        names: &[
            "street",
            "address1",
            "street address",
            "strasse",
            "straße",
            "address",
        ],
    },
    NamedField {
        target: Target::Global("zip", AttrType::Text),
        names: &[
            "zip",
            "zipcode",
            "zip code",
            "postal code",
            "postcode",
            "plz",
        ],
    },
    NamedField {
        target: Target::Global("city", AttrType::Text),
        names: &["city", "ort", "stadt", "town"],
    },
    NamedField {
        target: Target::Global("country", AttrType::Text),
        names: &["country", "land", "country code"],
    },
    NamedField {
        target: Target::Receiver("points"),
        names: &["points", "score", "lead score"],
    },
    NamedField {
        target: Target::Receiver("last_ip"),
        names: &[
            "ip",
            "ip address",
            "last ip",
            "signup ip",
            "optin_ip",
            "confirm_ip",
        ],
    },
];

/// Date columns that say when someone signed up (the receiver's `registered`), by name.
pub const REGISTERED_NAMES: &[&str] = &[
    "created_at",
    "create date",
    "created",
    "date created",
    "date added",
    "added",
    "added_time",
    "signup",
    "signup date",
    "sign up date",
    "signed up",
    "registered",
    "registration date",
    "anmeldedatum",
    "subscription date",
    "subscribed_at",
    "joined",
    "optin_time",
    "opt-in date",
];

/// Header parts of a date column that says when the record was made or the person signed
/// up, for files whose header is none of [`REGISTERED_NAMES`] (`Created Time`,
/// `Customer Since`, `Erstellt am`, `Date d'inscription`).
pub const REGISTERED_PARTS: &[&str] = &[
    "created",
    "creation",
    "createdate",
    "signup",
    "signedup",
    "registered",
    "registration",
    "joined",
    "dateadded",
    "since",
    "erstellt",
    "angelegt",
    "registriert",
    "anmeldung",
    "inscription",
    "inscrit",
    "alta",
    "registro",
    "iscrizione",
    "aangemaakt",
    "aanmelding",
];

/// Header parts that make a date something else than the sign-up, whatever else the header
/// says (`Last Modified Date`, `Order Created At`, `Paid at`).
pub const NOT_REGISTERED_PARTS: &[&str] = &[
    "modified", "updated", "changed", "last", "order", "paid", "invoice", "expir", "renew",
    "birth", "geburt", "due", "ship", "unsub", "delete",
];

/// Columns holding tags, by name.
pub const TAG_NAMES: &[&str] = &[
    "tags",
    "tag",
    "labels",
    "label",
    "interests",
    "interessen",
    "groups",
    "group membership",
    "segments",
    "categories",
    "kategorien",
    "lists",
];

/// Separators looked for in a tags column, the first most likely.
pub const TAG_SEPARATORS: &[&str] = &[" ::: ", ";", "|", ","];

/// Columns of order lines: an order id plus at least one of the others makes a file with
/// orders on its rows.
pub const ORDER_FIELDS: &[(&str, &[&str])] = &[
    (
        "order_id",
        &[
            "order id",
            "orderid",
            "order number",
            "ordernumber",
            "order",
            "bestellnummer",
            "order_no",
        ],
    ),
    (
        "product_id",
        &[
            "product id",
            "sku",
            "article number",
            "artikelnummer",
            "product_id",
            "item id",
        ],
    ),
    (
        "product",
        &[
            "product",
            "product name",
            "item",
            "item name",
            "artikel",
            "produkt",
        ],
    ),
    (
        "price",
        &[
            "price",
            "unit price",
            "item price",
            "preis",
            "amount",
            "invoiceamount",
            "total",
        ],
    ),
    ("quantity", &["quantity", "qty", "menge", "anzahl"]),
    ("currency", &["currency", "waehrung", "währung"]),
    (
        "stamp",
        &[
            "order date",
            "ordered_at",
            "ordertime",
            "order time",
            "bestelldatum",
            "date",
        ],
    ),
];

/// Cell values that stand for "nothing" and are read as empty.
pub const NULL_PLACEHOLDERS: &[&str] = &[
    "n/a", "null", "none", "-", "--", "0.0.00", "#n/a", "nil", "(none)",
];

/// Columns left out when nothing else takes them: they describe the export, not the person.
pub const NOISE_PARTS: &[&str] = &[
    "leid",
    "euid",
    "memberrating",
    "lastchanged",
    "modified",
    "updated",
    "gmtoff",
    "dstoff",
    "latitude",
    "longitude",
    "yomi",
];

/// In a file of order lines, columns that describe the order rather than the person
/// (totals, taxes, payment, shipping): left out of the receiver's attributes.
pub const ORDER_DETAIL_PARTS: &[&str] = &[
    "invoice",
    "tax",
    "shipping",
    "payment",
    "transaction",
    "tracking",
    "currencyfactor",
    "orderstatus",
    "ordernumber",
    "net",
    "discount",
    "subtotal",
    "fulfillment",
    "refund",
];

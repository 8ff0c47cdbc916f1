//! `[[export]]` steps: what to read from the target (a group, a saved
//! filter, a runtime filter, the blacklist or a group blocklist), which
//! columns, and how the file is written. The same [`ExportStep`] is built
//! by `listpipe export` from its flags, so both share one model and one set
//! of checks ([`ExportFormat::from_path`], [`Timestamps::parse`], ...).

use super::*;
use listpipe_api::ReceiverType;
use listpipe_api::filter::Rule;

pub(super) const EXPORT_KEYS: &[&str] = &[
    "name",
    "group",
    "filter",
    "rules",
    "operator",
    "activeonly",
    "blacklist",
    "type",
    "out",
    "format",
    "columns",
    "tags_separator",
    "timestamps",
    "delimiter",
    "encoding",
    "bom",
    "quoting",
    "orders_out",
    "incremental",
];
pub(super) const RULE_KEYS: &[&str] = &["field", "logic", "condition"];
pub const FORMAT_CHOICES: &[&str] = &["csv", "xlsx", "parquet", "jsonl"];
pub const OPERATORS: &[&str] = &["AND", "OR"];
pub const ENCODINGS: &[&str] = &["utf-8", "windows-1252"];
pub const QUOTINGS: &[&str] = &["necessary", "always"];
pub const TIMESTAMPS: &[&str] = &["iso", "unix"];
/// Tags are joined with this unless `tags_separator` says otherwise.
pub const DEFAULT_TAGS_SEPARATOR: &str = ",";

/// One export: what, which columns, where and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportStep {
    pub name: String,
    pub what: ExportWhat,
    pub out: PathBuf,
    pub format: ExportFormat,
    /// `None`: every column (fields, global attributes, group attributes,
    /// tags). Otherwise (column, header) pairs in this order.
    pub columns: Option<Vec<(String, String)>>,
    pub tags_separator: String,
    pub timestamps: Timestamps,
    pub csv: CsvOptions,
    /// One row per order, with the receiver's email; same format rules.
    pub orders_out: Option<PathBuf>,
    /// Write only what changed since the last successful run of the same
    /// selection (see [`crate::export::incremental`]).
    pub incremental: bool,
}

/// What an export reads.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportWhat {
    /// A group's receivers of one state (`type`).
    Group { group: GroupRef, kind: ReceiverType },
    /// The receivers a group's saved filter selects.
    Filter { group: GroupRef, filter: FilterRef },
    /// Rules evaluated on the fly over some groups (none: every group).
    Runtime {
        groups: Vec<GroupRef>,
        rules: Vec<Rule>,
        operator: String,
        activeonly: bool,
    },
    /// The account blacklist.
    Blacklist,
    /// A group's blocklist.
    Blocklist { group: GroupRef },
}

/// A saved filter by name or id.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterRef {
    Name(String),
    Id(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Xlsx,
    Parquet,
    Jsonl,
}

impl ExportFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "csv" => Some(Self::Csv),
            "xlsx" => Some(Self::Xlsx),
            "parquet" => Some(Self::Parquet),
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            _ => None,
        }
    }

    /// The format a file name implies: `.csv`/`.txt`/`.tsv`, `.xlsx`,
    /// `.parquet`/`.pq`, `.jsonl`/`.ndjson`.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" | "txt" | "tsv" => Some(Self::Csv),
            "xlsx" => Some(Self::Xlsx),
            "parquet" | "pq" => Some(Self::Parquet),
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Xlsx => "xlsx",
            Self::Parquet => "parquet",
            Self::Jsonl => "jsonl",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timestamps {
    /// `2024-02-01T14:22:00Z` (UTC).
    #[default]
    Iso,
    /// Seconds since 1970.
    Unix,
}

impl Timestamps {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "iso" | "iso8601" => Some(Self::Iso),
            "unix" => Some(Self::Unix),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CsvEncoding {
    #[default]
    Utf8,
    Windows1252,
}

impl CsvEncoding {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(Self::Utf8),
            "windows-1252" | "cp1252" | "latin-1" => Some(Self::Windows1252),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quoting {
    /// Only fields holding the delimiter, a quote or a line break.
    #[default]
    Necessary,
    Always,
}

impl Quoting {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "necessary" => Some(Self::Necessary),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub encoding: CsvEncoding,
    /// A UTF-8 byte order mark first, so Excel reads the file as UTF-8.
    pub bom: bool,
    pub quoting: Quoting,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            encoding: CsvEncoding::Utf8,
            bom: false,
            quoting: Quoting::Necessary,
        }
    }
}

/// `"tab"` or one ASCII character.
pub fn parse_delimiter(s: &str) -> Option<u8> {
    match s {
        "tab" | "\t" => Some(b'\t'),
        s if s.len() == 1 && s.is_ascii() => Some(s.as_bytes()[0]),
        _ => None,
    }
}

/// `FIELD:LOGIC:CONDITION` (the condition may hold colons).
pub fn parse_rule(s: &str) -> Option<Rule> {
    let mut parts = s.splitn(3, ':');
    let field = parts.next()?.trim();
    let logic = parts.next()?.trim();
    let condition = parts.next().unwrap_or("");
    if field.is_empty() || logic.is_empty() {
        return None;
    }
    Some(Rule {
        field: field.to_string(),
        logic: logic.to_string(),
        condition: condition.to_string(),
    })
}

//! Pipeline files (`pipelines/*.toml`): the declarative description of a
//! run. [`load`] turns the file into a validated [`Pipeline`] or into every
//! problem at once, each as `file:line:col: message`. Loading is offline:
//! it reads the sources' header rows to check column names, nothing more.
//!
//! A step may name a [preset](presets) (another tool's export layout), which expands into
//! ordinary keys before the step is read.
//!
//! Every key is documented for users in `pipelines/README.md`.

mod applies;
pub use keys::ACCEPTED_KEYS;
mod concurrency;
pub use concurrency::{ADAPTIVE_MAX, Concurrency, FIXED_MAX};
mod conditions;
pub use listpipe_api::time::date_format::{FormatEntry, format_entry};
mod dates;
pub mod export;
mod export_parse;
mod fields;
mod header_row;
mod json_attributes;
mod keys;
mod mode;
mod order_lines;
pub mod out;
mod parse;
pub mod placeholders;
mod policy;
pub use policy::{Empty, MIRROR_LIMIT, PolicyScope, Update, WritePolicy};
pub mod presets;
pub mod reader;
mod repeated_header;
mod source_key;
mod state;
mod step_columns;
pub use step_columns::{MAX_NAME, attribute_name};
mod step_name;
mod tags_key;
mod timezone;

pub use export::{ExportFormat, ExportStep, ExportWhat};
pub use json_attributes::JsonAttributes;
pub use mode::{MirrorSpec, Removal};
pub use order_lines::DuplicateLines;
pub use state::{state_name, state_name_in};

use crate::source::SourceSpec;
use listpipe_api::AttributeType;
use std::path::{Path, PathBuf};

/// Where the embedded target keeps its database unless `database` says otherwise.
pub const DEFAULT_BUILTIN_DB: &str = ".listpipe/server.db";
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
pub const DEFAULT_RETRIES: u32 = 6;
/// `[target] max_outage_secs` by default: ten minutes (a database restart
/// or a failover is over well within it; a target down longer needs a
/// person).
pub const DEFAULT_MAX_OUTAGE_SECS: u64 = 600;
/// Where rejects, plans and reports go unless a step says otherwise.
pub const STATE_DIR: &str = ".listpipe";

#[derive(Debug, Clone)]
pub struct Pipeline {
    pub file: PathBuf,
    /// Relative paths in the file are relative to its folder.
    pub base_dir: PathBuf,
    /// The file name without extension (`nightly`). State is keyed by
    /// [`Pipeline::state`], never by this alone: two folders can each hold
    /// a `nightly.toml`.
    pub name: String,
    /// Where the run's own state of this pipeline lives under
    /// `.listpipe/<kind>/` (journals, rejects, plans, ledgers, URL
    /// validators): see [`state_name`]. Journals and ledgers are keyed
    /// by the target and group too, below it.
    pub state: String,
    /// The folder the run's state lives in: journals, ledgers, rejects and
    /// plans by default, export cursors, remembered rates. [`STATE_DIR`]
    /// of the working directory when read with [`load`], as the binary
    /// does; [`load_in`] names another (a service running several
    /// pipelines, a test). [`Pipeline::state`] is then the pipeline's
    /// path from the folder holding it.
    pub state_dir: PathBuf,
    pub target: Target,
    /// `[metrics]`: the run's metrics file and Pushgateway.
    pub metrics: Metrics,
    /// `[report]`: the HTML page of `check` and `run`.
    pub report: Report,
    /// In file order.
    pub steps: Vec<Step>,
}

/// `[metrics]` of a pipeline file: what `run --metrics-file` and `run
/// --pushgateway` say, kept with the pipeline (the command line wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// The Prometheus text file (relative to the pipeline's folder).
    pub file: Option<PathBuf>,
    /// The Pushgateway's base URL (`http://` or `https://`).
    pub pushgateway: Option<String>,
}

/// `[report]` of a pipeline file: what `check --html` and `run --html` say,
/// kept with the pipeline (the command line wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The HTML page (relative to the pipeline's folder), rewritten by
    /// each `check` and `run`.
    pub html: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TargetUrl {
    /// The built-in server, run in-process on an embedded database.
    Builtin {
        database: PathBuf,
    },
    Url(String),
    /// No `url` but a `credentials` file: its `base_url`.
    FromCredentials,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub url: TargetUrl,
    /// An environment variable holding an access token.
    pub token_env: Option<String>,
    /// A credentials file (as written by `listpipe serve`): access token,
    /// refresh token and client; refreshed on expiry and saved back.
    pub credentials: Option<PathBuf>,
    /// Requests in flight: found by the run's controller, or pinned.
    pub concurrency: Concurrency,
    /// A client-side limit on requests per second (the target's quota).
    pub max_requests_per_second: Option<u32>,
    pub timeout_secs: u64,
    pub retries: u32,
    /// How long a run waits for a target that is down as a whole (502, 503,
    /// 504 across requests) before it stops with exit 3.
    pub max_outage_secs: u64,
}

/// A pipeline holds a handful of steps, built once: the size of the largest
/// variant costs nothing worth a box around each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Step {
    Import(ImportStep),
    Blacklist(BlacklistStep),
    Export(ExportStep),
}

impl Step {
    pub fn name(&self) -> &str {
        match self {
            Step::Import(s) => &s.name,
            Step::Blacklist(s) => &s.name,
            Step::Export(s) => &s.name,
        }
    }
}

/// A group named by its name or its id.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupRef {
    Name(String),
    Id(i64),
}

impl std::fmt::Display for GroupRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupRef::Name(n) => write!(f, "group \"{n}\""),
            GroupRef::Id(id) => write!(f, "group {id}"),
        }
    }
}

/// What to keep when an address appears more than once in a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dedupe {
    #[default]
    First,
    Last,
    /// The first row, with empty values filled from later rows.
    Merge,
}

#[derive(Debug, Clone)]
pub struct ImportStep {
    pub name: String,
    pub source: SourceSpec,
    pub group: GroupRef,
    pub create_group: bool,
    pub dedupe: Dedupe,
    pub rejects: PathBuf,
    /// Receiver fields (spec §2.7); always holds `email`.
    pub fields: Vec<(ReceiverField, Mapping)>,
    pub global_attributes: Vec<AttributeMapping>,
    pub attributes: Vec<AttributeMapping>,
    pub tags: Option<TagsSpec>,
    pub orders: Option<OrdersSpec>,
    /// `mode = "mirror"`: receivers imported earlier and gone from the source are removed.
    pub mirror: Option<MirrorSpec>,
    /// Cells left empty on follow-up rows (a shop export's order-level fields, written on
    /// an order's first line only) filled from the rows with the same key.
    pub fill_down: Option<FillDown>,
    /// `rejects_bom`: a byte order mark at the start of the rejects file (for Excel);
    /// None: one when the source had one (or is a spreadsheet).
    pub rejects_bom: Option<bool>,
    /// `json_attributes = "attributes"`: a column of JSON objects whose keys are global
    /// attributes (their mappings are in `global_attributes`).
    pub json_attributes: Option<JsonAttributes>,
    /// `update` and `empty` of the step: the write policies of the mappings
    /// that set none of their own ([`WritePolicy::of`]).
    pub policy: WritePolicy,
    /// `limit` (or `run --limit`): only the first N receivers of the step,
    /// in the source's order, are written. Never with mirror mode.
    pub limit: Option<u64>,
}

/// `fill_down = { within = "Name", columns = [...] }`: in each of `columns`, an empty cell
/// takes the first value found on a row with the same `within` value.
#[derive(Debug, Clone, PartialEq)]
pub struct FillDown {
    pub within: String,
    pub columns: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct BlacklistStep {
    pub name: String,
    pub source: SourceSpec,
    pub email: Mapping,
    pub comment: Option<Mapping>,
    /// A group's blocklist instead of the account blacklist.
    pub group: Option<GroupRef>,
    pub rejects: PathBuf,
    /// Only rows where this holds are read; the others are skipped, not rejected.
    pub only_if: Option<Condition>,
    /// As [`ImportStep::rejects_bom`].
    pub rejects_bom: Option<bool>,
}

/// The receiver fields a column can fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReceiverField {
    Email,
    Registered,
    Activated,
    Deactivated,
    Imported,
    Bounced,
    Source,
    Points,
    LastIp,
    LastLocation,
    LastClient,
}

impl ReceiverField {
    pub const ALL: [ReceiverField; 11] = [
        Self::Email,
        Self::Registered,
        Self::Activated,
        Self::Deactivated,
        Self::Imported,
        Self::Bounced,
        Self::Source,
        Self::Points,
        Self::LastIp,
        Self::LastLocation,
        Self::LastClient,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Registered => "registered",
            Self::Activated => "activated",
            Self::Deactivated => "deactivated",
            Self::Imported => "imported",
            Self::Bounced => "bounced",
            Self::Source => "source",
            Self::Points => "points",
            Self::LastIp => "last_ip",
            Self::LastLocation => "last_location",
            Self::LastClient => "last_client",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// What the value must parse as.
    pub fn kind(self) -> ValueKind {
        match self {
            Self::Email => ValueKind::Email,
            Self::Registered
            | Self::Activated
            | Self::Deactivated
            | Self::Imported
            | Self::Bounced => ValueKind::Timestamp,
            Self::Points => ValueKind::Integer,
            _ => ValueKind::Text,
        }
    }
}

/// How a mapped value is checked and converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Text,
    Email,
    /// Unix seconds on the wire.
    Timestamp,
    /// `YYYY-MM-DD` on the wire.
    Date,
    Integer,
    Number,
    /// One of the usual spellings of a gender (see `prepare::value::GENDERS`).
    Gender,
}

impl ValueKind {
    pub fn of_attribute(t: AttributeType) -> Self {
        match t {
            AttributeType::Text => ValueKind::Text,
            AttributeType::Gender => ValueKind::Gender,
            AttributeType::Number => ValueKind::Number,
            AttributeType::Date => ValueKind::Date,
        }
    }
}

/// Where a value comes from and how it is cleaned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mapping {
    pub from: ValueFrom,
    /// Trim surrounding white space (default true).
    pub trim: bool,
    pub case: Case,
    /// Exact replacements after trimming and case (`"Herr" = "m"`).
    pub map: Vec<(String, String)>,
    /// Used when the value is empty.
    pub default: Option<String>,
    /// How dates and times are written, tried in order: chrono formats (`%d.%m.%Y`),
    /// `unix` (seconds) or `excel` (spreadsheet serial days). Empty: the unambiguous
    /// spellings only (ISO 8601, Unix seconds).
    pub format: Vec<String>,
    /// What a value two formats read differently becomes (None: the step's, else reject).
    pub ambiguous: Option<Ambiguous>,
    /// The zone times without an offset are read in (`timezone`); None: UTC.
    /// Timestamps only: a date is a calendar date.
    pub timezone: Option<chrono_tz::Tz>,
    /// The decimal mark of numbers (`,` for `49,90`).
    pub decimal: char,
    /// Keep the value only on rows where this holds; elsewhere it is empty.
    pub only_if: Option<Condition>,
    /// Characters removed from both ends after trimming (Shopify writes `'01067` so that
    /// spreadsheets keep leading zeros).
    pub trim_chars: Option<String>,
    /// The reject reason when a required value (the address) is empty, instead of
    /// "missing email": a guest order has no address by nature, not by mistake.
    pub missing_reason: Option<String>,
    /// Values read as empty (compared trimmed, ignoring ASCII case): placeholders such as
    /// Outlook's `0.0.00` for "no birthday". The step's `null_values` are added here.
    pub null_values: Vec<String>,
    /// The address only: what it may be beyond a dot-atom at a host name
    /// (`allow = ["quoted_local", "ip_literal", "utf8_local"]`).
    pub email_rules: listpipe_api::email::Rules,
    /// The mapping's own `update` policy (None: the step's).
    pub update: Option<Update>,
    /// The mapping's own `empty` policy (None: the step's).
    pub empty: Option<Empty>,
}

pub use listpipe_api::time::Ambiguous;

#[derive(Debug, Clone, PartialEq)]
pub enum ValueFrom {
    Column(String),
    /// The first of these columns that is not empty on the row.
    FirstOf(Vec<String>),
    Constant(String),
}

impl ValueFrom {
    /// The source columns a value is read from.
    pub fn columns(&self) -> &[String] {
        match self {
            ValueFrom::Column(c) => std::slice::from_ref(c),
            ValueFrom::FirstOf(cs) => cs,
            ValueFrom::Constant(_) => &[],
        }
    }
}

impl Default for ValueFrom {
    fn default() -> Self {
        ValueFrom::Constant(String::new())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Case {
    #[default]
    Keep,
    Lower,
    Upper,
    /// First letter of each word upper case, the rest lower.
    Title,
}

/// When a row qualifies (`only_if`). An empty cell counts as `""`.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The column's trimmed value is one of these.
    Equals { column: String, values: Vec<String> },
    /// The column's trimmed value is none of these.
    NotEquals { column: String, values: Vec<String> },
    /// The row's file has (or lacks) the column, whatever the cell holds: a Mailchimp
    /// unsubscribed export is the file with `UNSUB_TIME`.
    InFile { column: String, present: bool },
    /// Every condition holds.
    All(Vec<Condition>),
    /// At least one condition holds.
    Any(Vec<Condition>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttributeMapping {
    pub name: String,
    pub kind: AttributeType,
    pub mapping: Mapping,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TagsSpec {
    /// Columns holding tags, each cell split at every one of `separators`.
    pub columns: Vec<String>,
    /// `separator = ","` or a list, `[",", "|"]`: a cell is split at each of them.
    pub separators: Vec<String>,
    /// Tags every receiver of the step gets.
    pub fixed: Vec<String>,
    /// Put before every tag that has no origin of its own: `Shop` makes `vip` into `Shop.vip`.
    pub origin: Option<String>,
    /// `trim_start`: characters taken off the start of each tag (`"* "` makes Google's
    /// `* My Contacts` into `My Contacts`), counted.
    pub trim_start: Option<String>,
    /// `map`: a tag (after `trim_start`) spelled anew; to `""` it is dropped. Counted.
    pub map: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct OrdersSpec {
    /// A second source joined by email; `None`: the orders are on the receiver rows.
    pub source: Option<SourceSpec>,
    /// The email column of the second source.
    pub email: Option<Mapping>,
    pub fields: Vec<(OrderField, Mapping)>,
    pub rejects: PathBuf,
    /// What lines of one receiver with the same order id and product id become.
    pub duplicate_lines: DuplicateLines,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OrderField {
    OrderId,
    ProductId,
    Product,
    Price,
    Currency,
    Quantity,
    MailingId,
    Stamp,
}

impl OrderField {
    pub const ALL: [OrderField; 8] = [
        Self::OrderId,
        Self::ProductId,
        Self::Product,
        Self::Price,
        Self::Currency,
        Self::Quantity,
        Self::MailingId,
        Self::Stamp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OrderId => "order_id",
            Self::ProductId => "product_id",
            Self::Product => "product",
            Self::Price => "price",
            Self::Currency => "currency",
            Self::Quantity => "quantity",
            Self::MailingId => "mailing_id",
            Self::Stamp => "stamp",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    pub fn kind(self) -> ValueKind {
        match self {
            Self::Price => ValueKind::Number,
            Self::Quantity => ValueKind::Integer,
            Self::Stamp => ValueKind::Timestamp,
            _ => ValueKind::Text,
        }
    }
}

/// A pipeline file that cannot be used: every problem found, rendered.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct PipelineError(pub Vec<String>);

/// Parses and checks a pipeline's text as if read from `path` (its sources are relative to
/// its folder; offline).
pub fn parse_text(path: &Path, text: &str) -> Result<Pipeline, PipelineError> {
    parse::parse(path, text, Path::new(STATE_DIR))
}

/// Reads, parses and checks a pipeline file (offline), its state kept in
/// [`STATE_DIR`] of the working directory.
pub fn load(path: &Path) -> Result<Pipeline, PipelineError> {
    load_in(path, Path::new(STATE_DIR))
}

/// [`load`] with the run's state in `state_dir` (see [`Pipeline::state_dir`]).
pub fn load_in(path: &Path, state_dir: &Path) -> Result<Pipeline, PipelineError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        PipelineError(vec![format!(
            "{}: cannot read the pipeline file: {e}",
            path.display()
        )])
    })?;
    parse::parse(path, &text, state_dir)
}

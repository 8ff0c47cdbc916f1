//! What an import step did, for the run report: filled by the step
//! ([`super::import`]) and by each chunk it writes ([`super::chunk`]).

/// What an import step did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportOutcome {
    pub group_id: Option<String>,
    /// Created by this run: always false in a dry run, which creates nothing.
    pub group_created: bool,
    /// Created by this run: always empty in a dry run.
    pub attributes_created: Vec<String>,
    /// A dry run: the group is missing and a run would create it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub would_create_group: bool,
    /// A dry run: the attributes a run would create.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_create_attributes: Vec<String>,
    pub blocked: u64,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub retries: u64,
    pub orders_sent: u64,
    /// Rows a resumed run found confirmed in the journal and did not send again.
    pub resumed: u64,
    /// Rows an earlier run left in flight, checked against the target.
    pub in_flight_checked: u64,
    /// Lines of the resumed journal that could not be read (a torn last
    /// line, damage): their rows were checked against the target like new ones.
    pub journal_unreadable_lines: u64,
    /// Rows not taken because the run was stopped (Ctrl-C, SIGTERM).
    pub not_started: u64,
    /// Failed rows whose last error was transient (the target unreachable
    /// or overloaded through every retry): a `--resume` may finish them.
    pub failed_transient: u64,
    pub stopped: bool,
    /// Write requests sent (with retries): 0 when nothing changed.
    pub write_requests: u64,
    /// Of those, the ones the target answered 429 Too Many Requests (each
    /// one retried): how often the step's writes met the target's limit,
    /// apart from the set-up's and the lookups' requests.
    pub write_requests_refused: u64,
    /// Values of receivers the target holds that a write policy kept from
    /// an update (`update = "if_empty"` or `"never"`), by mapping: only those
    /// that would have changed the target. Left out when none.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kept_by_policy: std::collections::BTreeMap<String, u64>,
    /// `limit` (or `run --limit`): the first `limit` of the step's `of`
    /// receivers were written, the rest left for a later run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited: Option<Limited>,
    /// Mirror mode: receivers deactivated or deleted (planned, in a dry run).
    pub removed: u64,
    /// Mirror mode: removals the target refused, with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removal_failures: Vec<(String, String)>,
}

/// A limited step: `limit` receivers of `of` taken (issue 62).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Limited {
    pub limit: u64,
    /// The step's receivers: its valid rows after dedupe, in every chunk.
    pub of: u64,
}

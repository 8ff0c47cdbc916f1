//! The one integration-test binary: every test starts the built-in server
//! in-process on port 0 with a temp database and talks to it over HTTP.
//! The tests of the server's endpoints alone are the server crate's own
//! (`crates/server/tests/api`); these are the binary's, the pipelines' and
//! the client's against it.

// A test fails on an unexpected error: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod accounts;
mod adaptive;
mod addresses;
mod authorize;
mod backends;
mod consent;
mod dates;
mod dry_run;
mod export;
mod export_columns;
mod failed_runs;
mod faults;
mod fidelity;
mod fidelity_messages;
mod fidelity_values;
mod forms;
mod hardening;
mod hostile;
mod html_report;
mod import;
mod in_process;
mod incremental;
mod init;
mod init_evidence;
mod job_runners;
mod load_state;
mod logs;
mod metrics;
mod objects;
mod outage;
mod output;
mod pacing;
mod pg;
mod pipeline_errors;
mod pipeline_keys;
mod presets;
mod rejects;
mod reliability;
mod remote;
mod resume;
mod s3;
mod safety;
mod scheduled;
mod sources;
mod state;
mod target_errors;
mod third_party;
mod token_security;
mod two_pass;
mod two_pass_orders;
mod typed_exports;
mod warehouse;
mod write_policies;
mod writes;

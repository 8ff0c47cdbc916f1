//! The one integration-test binary: every test starts the built-in server
//! in-process on port 0 with a temp database and talks to it over HTTP.

mod support;

mod accounts;
mod adaptive;
mod addresses;
mod attributes;
mod authorize;
mod blacklist;
mod clients;
mod consent;
mod dates;
mod dry_run;
mod export;
mod export_columns;
mod extensions;
mod faults;
mod fidelity;
mod filters;
mod forms;
mod groups;
mod hostile;
mod import;
mod job_runners;
mod load_state;
mod oauth;
mod openapi;
mod output;
mod overload;
mod pipeline_errors;
mod pipeline_keys;
mod presets;
mod properties;
mod receivers;
mod reliability;
mod remote;
mod safety;
mod scheduled;
mod sources;
mod state;
mod tags;
mod target_errors;
mod third_party;
mod wire;
mod writes;

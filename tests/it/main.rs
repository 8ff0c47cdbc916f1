//! The one integration-test binary: every test starts the built-in server
//! in-process on port 0 with a temp database and talks to it over HTTP.

mod support;

mod accounts;
mod attributes;
mod authorize;
mod blacklist;
mod clients;
mod export;
mod extensions;
mod faults;
mod filters;
mod forms;
mod groups;
mod hostile;
mod import;
mod oauth;
mod openapi;
mod pipeline_errors;
mod presets;
mod properties;
mod receivers;
mod reliability;
mod safety;
mod scheduled;
mod state;
mod tags;
mod third_party;
mod wire;
mod writes;

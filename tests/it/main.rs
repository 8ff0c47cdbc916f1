//! The one integration-test binary: every test starts the built-in server
//! in-process on port 0 with a temp database and talks to it over HTTP.

mod support;

mod accounts;
mod attributes;
mod blacklist;
mod groups;
mod import;
mod oauth;
mod pipeline_errors;
mod receivers;
mod tags;
mod third_party;
mod wire;

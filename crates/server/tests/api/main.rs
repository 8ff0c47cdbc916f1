//! The server crate's integration tests, one binary: the API over HTTP
//! (each test starts the server in-process on port 0 with a temp database,
//! `listpipe_testkit::TestServer`), the filter engine's properties on the
//! store, one schema for both stores (`schema.rs`), and all of it again on
//! PostgreSQL (`backends.rs`). Nothing here starts the `listpipe` binary or
//! builds the pipelines: `cargo tree -p listpipe-server -e normal,dev` has
//! no polars.

// A test fails on an unexpected error: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attributes;
mod backends;
mod blacklist;
mod clients;
mod extensions;
mod filters;
mod groups;
mod oauth;
mod openapi;
mod overload;
mod properties;
mod receivers;
mod schema;
mod tags;
mod wire;

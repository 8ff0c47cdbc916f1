//! The throwaway PostgreSQL server (issue 18's query sources, issue 19's
//! store), now in the test-support crate (`crates/testkit/src/pg.rs`, with
//! its own test) so the server crate's tests share it.

pub(crate) use listpipe_testkit::pg::*;

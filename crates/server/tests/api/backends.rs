//! Every test of this binary again on PostgreSQL (issue 19, issue 59): one
//! test runs the binary itself (`std::env::current_exe`) in a child process
//! with `LISTPIPE_TEST_BACKEND=postgres`, each test server there on a fresh
//! database of one throwaway PostgreSQL server, stopped after. No list of
//! modules to keep: a test added here runs on both backends.

use listpipe_testkit::on_postgres;
use listpipe_testkit::pg::PgServer;

/// Tests left out of the PostgreSQL run, each for a reason.
const SKIP: &[&str] = &[
    // This test itself: the child run would start another (it returns at
    // once there, but need not be run at all).
    "backends::every_test_passes_on_postgres",
    // It gives its tokens a lifetime of a second or two and then makes many
    // calls on them, which a loaded machine can outrun on PostgreSQL, where
    // no process caches a checked token (SQLite's five-second cache hides it).
    "oauth::every_v3_operation_needs_a_live_token_in_any_of_three_places",
];

#[test]
fn every_test_passes_on_postgres() {
    if on_postgres() {
        return; // the child run itself
    }
    let Some(pg) = PgServer::start() else { return };
    listpipe_testkit::pg::rerun_on_postgres(&pg, &[], SKIP);
}

//! Tests of the store's clock and of its SQLite connections.

use super::*;

/// Every way into a store reads its own clock; another store beside it
/// (another test's server) and code outside a store read the real time.
#[tokio::test]
async fn a_store_runs_its_functions_on_its_own_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::test();
    let ahead = Store::open_with_clock(&dir.path().join("a.db"), clock.clone()).unwrap();
    let real = Store::open(&dir.path().join("r.db")).unwrap();
    clock.advance(1000);
    let before = chrono::Utc::now().timestamp();
    let reads = [
        ahead.read(|_| Ok(now())).await.unwrap(),
        ahead.call(|_| Ok(now())).await.unwrap(),
        ahead.write(|_| Ok(now())).await.unwrap(),
        ahead.clock().now(),
    ];
    for t in reads {
        assert!(
            (before + 1000..before + 1010).contains(&t),
            "{t} vs {before}"
        );
    }
    let reads = [
        real.read(|_| Ok(now())).await.unwrap(),
        real.write(|_| Ok(now())).await.unwrap(),
        now(),
    ];
    for t in reads {
        assert!((before..before + 10).contains(&t), "{t} vs {before}");
    }
    assert_eq!((clock.ahead_secs(), real.clock().ahead_secs()), (1000, 0));
}

/// A statement whose plan SQLite would tie to its values (an `OR` over
/// a parameter, a join on a parameter) is parsed and planned once, not
/// again on each use through the statement cache.
#[test]
fn cached_statements_are_planned_once_whatever_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let conn = store.lite_conn();
    let queries = [
        "SELECT id FROM attributes WHERE account_id = ?1 AND name = ?2
         AND (group_id = 0 OR group_id = ?3)",
        "SELECT r.id FROM receivers r JOIN contacts c ON c.id = r.contact_id
         WHERE r.id = ?1 AND r.account_id = ?2 AND ?3 IS NOT NULL",
    ];
    for sql in queries {
        for n in 0..5 {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let rows = stmt
                .query_map(rusqlite::params![n, format!("name {n}"), n], |_| Ok(()))
                .unwrap();
            assert_eq!(rows.count(), 0);
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        let replanned = stmt.get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(replanned, 0, "{sql}");
    }
}

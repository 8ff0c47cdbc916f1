//! One schema on both stores (issue 59): a fresh SQLite store and a fresh
//! PostgreSQL store, each migrated by the server's own migrations
//! (`Store::open`), have the same tables, columns and indexes but for the
//! differences written down in [`INTENDED`], each with its reason. A table,
//! column or index added to one store only fails here with the list of what
//! differs. Compared are names: of the tables, their columns, their indexes
//! with their columns, unique constraints and primary keys (not types,
//! defaults or foreign keys, which differ by design: PostgreSQL's types,
//! and no foreign keys on the contact tables there, migration 003).

use listpipe_server::store::Store;
use listpipe_testkit::on_postgres;
use listpipe_testkit::pg::PgServer;
use std::collections::BTreeSet;
use std::path::Path;

/// Which store has a thing the other has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Only {
    Sqlite,
    Postgres,
}

/// The differences meant to be: the thing (as [`sqlite_schema`] and
/// [`postgres_schema`] name it; a table stands for its columns and indexes
/// too), the store that has it, and why.
const INTENDED: &[(&str, Only, &str)] = &[
    (
        "listpipe_schema",
        Only::Postgres,
        "the migrations applied: SQLite keeps their number in PRAGMA user_version",
    ),
    (
        "rate_limits",
        Only::Postgres,
        "--rate-limit across the server processes of one database; SQLite's one process keeps it in memory",
    ),
];

#[test]
fn both_stores_have_one_schema_but_for_the_listed_differences() {
    if on_postgres() {
        return; // the PostgreSQL re-run: this test migrates both itself
    }
    let Some(pg) = PgServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("schema.db");
    drop(Store::open(&file).expect("SQLite store migrates"));
    let url = pg.database("schema");
    drop(Store::open(Path::new(&url)).expect("PostgreSQL store migrates"));

    let lite = sqlite_schema(&file);
    let post = postgres_schema(&url);
    let intended: BTreeSet<(String, Only)> = INTENDED
        .iter()
        .map(|(thing, only, _)| (thing.to_string(), *only))
        .collect();
    // What differs, but not the columns and indexes of a table listed whole.
    let mut found: BTreeSet<(String, Only)> = BTreeSet::new();
    found.extend(lite.difference(&post).map(|t| (t.clone(), Only::Sqlite)));
    found.extend(post.difference(&lite).map(|t| (t.clone(), Only::Postgres)));
    found.retain(|(thing, only)| {
        let table = thing.split(' ').next().unwrap_or_default();
        table == thing || !intended.contains(&(table.to_string(), *only))
    });
    let unlisted: Vec<String> = found
        .difference(&intended)
        .map(|(thing, only)| format!("  + {thing}  (only on {only:?})"))
        .collect();
    let gone: Vec<String> = intended
        .difference(&found)
        .map(|(thing, only)| format!("  - {thing}  (listed as only on {only:?})"))
        .collect();
    assert!(
        unlisted.is_empty() && gone.is_empty(),
        "the stores' schemas differ otherwise than INTENDED (schema.rs) says:\n\
         differences not listed (add the thing to the other store's migrations, or \
         list it with a reason):\n{}\n\
         listed differences not found (remove them from the list):\n{}",
        unlisted.join("\n"),
        gone.join("\n"),
    );
    // What was compared, for a reader of a passing run's output.
    eprintln!(
        "SQLite: {} tables, {} columns, {} indexes; PostgreSQL: {} tables, {} columns, {} indexes",
        count(&lite, None),
        count(&lite, Some(" column ")),
        count(&lite, Some(" index ")),
        count(&post, None),
        count(&post, Some(" column ")),
        count(&post, Some(" index ")),
    );
}

/// The tables (`None`), or the things of a kind, in `schema`.
fn count(schema: &BTreeSet<String>, kind: Option<&str>) -> usize {
    schema
        .iter()
        .filter(|t| match kind {
            None => !t.contains(' '),
            Some(kind) => t.contains(kind),
        })
        .count()
}

/// Each table `T` by its name, its columns as `T column c`, its indexes as
/// `T index name(a, b)` (`T unique index ...` for a unique one), and its
/// unique constraints and primary key as `T unique(a, b)` and
/// `T primary key(a)`, named by their columns (each store names the indexes
/// behind them its own way). An index of an expression has `<expr>` for it.
fn sqlite_schema(file: &Path) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(file).unwrap();
    let strings = |sql: &str, args: &[&str]| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map(rusqlite::params_from_iter(args), |r| {
            r.get::<_, Option<String>>(0)
        })
        .unwrap()
        .map(|r| r.unwrap().unwrap_or_else(|| "<expr>".into()))
        .collect()
    };
    let mut schema = BTreeSet::new();
    let tables = strings(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        &[],
    );
    for table in tables {
        schema.insert(table.clone());
        for column in strings(
            "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
            &[&table],
        ) {
            schema.insert(format!("{table} column {column}"));
        }
        // The primary key: an INTEGER PRIMARY KEY is the rowid (no index).
        let key = strings(
            "SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk",
            &[&table],
        );
        if !key.is_empty() {
            schema.insert(format!("{table} primary key({})", key.join(", ")));
        }
        let mut stmt = conn
            .prepare("SELECT name, \"unique\", origin FROM pragma_index_list(?1)")
            .unwrap();
        let indexes: Vec<(String, bool, String)> = stmt
            .query_map([&table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (name, unique, origin) in indexes {
            let columns = strings(
                "SELECT name FROM pragma_index_info(?1) ORDER BY seqno",
                &[&name],
            )
            .join(", ");
            match origin.as_str() {
                "pk" => {} // the primary key, above
                "u" => {
                    schema.insert(format!("{table} unique({columns})"));
                }
                _ => {
                    let unique = if unique { " unique" } else { "" };
                    schema.insert(format!("{table}{unique} index {name}({columns})"));
                }
            }
        }
    }
    schema
}

/// [`sqlite_schema`] of the PostgreSQL database at `url` (its `public`
/// schema), on a thread of its own (the synchronous client).
fn postgres_schema(url: &str) -> BTreeSet<String> {
    let url = url.to_string();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut schema = BTreeSet::new();
        for row in client
            .query(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
                &[],
            )
            .unwrap()
        {
            schema.insert(row.get::<_, String>(0));
        }
        for row in client
            .query(
                "SELECT table_name::text, column_name::text FROM information_schema.columns \
                 WHERE table_schema = 'public'",
                &[],
            )
            .unwrap()
        {
            let (table, column): (String, String) = (row.get(0), row.get(1));
            schema.insert(format!("{table} column {column}"));
        }
        let indexes = client
            .query(
                "SELECT t.relname::text, i.relname::text, x.indisunique, x.indisprimary,
                        EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid),
                        (SELECT string_agg(COALESCE(a.attname::text, '<expr>'), ', ' ORDER BY k.ord)
                           FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
                           LEFT JOIN pg_attribute a
                             ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0
                          WHERE k.ord <= x.indnkeyatts)
                   FROM pg_index x
                   JOIN pg_class i ON i.oid = x.indexrelid
                   JOIN pg_class t ON t.oid = x.indrelid
                   JOIN pg_namespace n ON n.oid = t.relnamespace
                  WHERE n.nspname = 'public'",
                &[],
            )
            .unwrap();
        for row in indexes {
            let (table, name, unique, primary, constraint, columns): (
                String,
                String,
                bool,
                bool,
                bool,
                String,
            ) = (
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get(5),
            );
            let entry = if primary {
                format!("{table} primary key({columns})")
            } else if constraint && unique {
                format!("{table} unique({columns})")
            } else {
                let unique = if unique { " unique" } else { "" };
                format!("{table}{unique} index {name}({columns})")
            };
            schema.insert(entry);
        }
        schema
    })
    .join()
    .unwrap()
}

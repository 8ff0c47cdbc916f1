//! Rows the store wrote, by table and operation, for `serve
//! --metrics-listen` (`listpipe_server_rows_written_total`, issue 61).
//!
//! Counted where every statement passes, [`Db`](super::Db): a statement
//! that writes (`INSERT`, `UPDATE`, `DELETE`, after a `WITH` too) adds the
//! rows it changed (or, with `RETURNING`, the rows it answered) to a tally
//! of the thread running it. The tally reaches the store's counters only
//! once the write's transaction has committed ([`flush`]): a write rolled
//! back (its savepoint in a group commit, a batch's round, a PostgreSQL
//! transaction that lost a race and runs again) counts nothing. An upsert
//! counts as an insert (`ON CONFLICT DO UPDATE`); a row an
//! `INSERT OR IGNORE` skipped does not count.
//!
//! Statements run with `Db::batch` (migrations, savepoints) are not
//! counted: SQLite tells no row count for them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::cell::RefCell;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RowLabels {
    pub table: String,
    pub op: String,
}

/// The store's counters, shared by its clones (and registered as they
/// are by [`crate::metrics::Metrics::with_store`]).
pub type RowsWritten = Family<RowLabels, Counter>;

/// What a thread's statements wrote since its write began: the rows, and
/// where each savepoint open began in them.
#[derive(Default)]
struct Tally {
    rows: Vec<(String, &'static str, u64)>,
    savepoints: Vec<usize>,
}

thread_local! {
    static TALLY: RefCell<Tally> = RefCell::new(Tally::default());
}

fn with<T>(f: impl FnOnce(&mut Tally) -> T) -> T {
    TALLY.with(|t| f(&mut t.borrow_mut()))
}

/// The table and operation of a statement that writes; `None` for one
/// that does not (a `SELECT`, a `BEGIN`).
pub(super) fn target(sql: &str) -> Option<(&str, &'static str)> {
    let mut words = Words(sql);
    let first = words.next()?;
    let verb = if first.eq_ignore_ascii_case("WITH") {
        // The statement after the common table expressions.
        words.find(|w| is_verb(w) || w.eq_ignore_ascii_case("SELECT"))?
    } else {
        first
    };
    let op = if verb.eq_ignore_ascii_case("INSERT") || verb.eq_ignore_ascii_case("REPLACE") {
        "insert"
    } else if verb.eq_ignore_ascii_case("UPDATE") {
        "update"
    } else if verb.eq_ignore_ascii_case("DELETE") {
        "delete"
    } else {
        return None;
    };
    // `INSERT OR IGNORE INTO t`, `DELETE FROM t`, `UPDATE OR ... t`.
    let mut next = words.next()?;
    if next.eq_ignore_ascii_case("OR") {
        words.next()?;
        next = words.next()?;
    }
    if next.eq_ignore_ascii_case("INTO") || next.eq_ignore_ascii_case("FROM") {
        next = words.next()?;
    }
    let table = next.trim_matches('"');
    (!table.is_empty()).then_some((table, op))
}

fn is_verb(w: &str) -> bool {
    ["INSERT", "UPDATE", "DELETE", "REPLACE"]
        .iter()
        .any(|v| w.eq_ignore_ascii_case(v))
}

/// The words of a statement outside parentheses and quotes (a CTE's body
/// is skipped whole): identifiers and keywords, split at anything else.
struct Words<'s>(&'s str);

impl<'s> Iterator for Words<'s> {
    type Item = &'s str;

    fn next(&mut self) -> Option<&'s str> {
        let mut depth = 0usize;
        let mut quote: Option<u8> = None;
        let bytes = self.0.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'\'' => quote = Some(b),
                    b'(' => depth += 1,
                    b')' => depth = depth.saturating_sub(1),
                    _ if depth == 0 && (b.is_ascii_alphanumeric() || b == b'_' || b == b'"') => {
                        let start = i;
                        while i < bytes.len()
                            && (bytes[i].is_ascii_alphanumeric()
                                || bytes[i] == b'_'
                                || bytes[i] == b'"'
                                || bytes[i] == b'.')
                        {
                            i += 1;
                        }
                        let word = &self.0[start..i];
                        self.0 = &self.0[i..];
                        return Some(word);
                    }
                    _ => {}
                },
            }
            i += 1;
        }
        self.0 = "";
        None
    }
}

/// `sql` ran and changed (or answered) `rows` rows.
pub(super) fn record(sql: &str, rows: u64) {
    if rows == 0 {
        return;
    }
    if let Some((table, op)) = target(sql) {
        with(|t| t.rows.push((table.to_string(), op, rows)));
    }
}

/// `Db::batch`'s statements: savepoints open, release and roll back what
/// was tallied since they began.
pub(super) fn savepoints(sql: &str) {
    for statement in sql.split(';') {
        let mut words = Words(statement);
        let (Some(first), second) = (words.next(), words.next()) else {
            continue;
        };
        with(|t| {
            if first.eq_ignore_ascii_case("SAVEPOINT") {
                t.savepoints.push(t.rows.len());
            } else if first.eq_ignore_ascii_case("RELEASE") {
                t.savepoints.pop();
            } else if first.eq_ignore_ascii_case("ROLLBACK")
                && second.is_some_and(|w| w.eq_ignore_ascii_case("TO"))
                && let Some(&at) = t.savepoints.last()
            {
                t.rows.truncate(at);
            }
        });
    }
}

/// Where the tally is now, for [`back_to`].
pub(super) fn mark() -> (usize, usize) {
    with(|t| (t.rows.len(), t.savepoints.len()))
}

/// Forgets what was tallied since `mark` (a write rolled back).
pub(super) fn back_to(mark: (usize, usize)) {
    with(|t| {
        t.rows.truncate(mark.0);
        t.savepoints.truncate(mark.1);
    });
}

/// Forgets the whole tally (a write begins, or was rolled back).
pub(super) fn discard() {
    back_to((0, 0));
}

/// The write committed: its tally goes to `into`.
pub(super) fn flush(into: &RowsWritten) {
    let rows = with(|t| {
        t.savepoints.clear();
        std::mem::take(&mut t.rows)
    });
    for (table, op, n) in rows {
        into.get_or_create(&RowLabels {
            table,
            op: op.to_string(),
        })
        .inc_by(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_and_operation_of_a_statement() {
        assert_eq!(
            target("INSERT INTO receivers (a) VALUES (?1)"),
            Some(("receivers", "insert"))
        );
        assert_eq!(
            target("  insert or ignore into tags (contact_id) SELECT 1"),
            Some(("tags", "insert"))
        );
        assert_eq!(
            target("UPDATE receivers SET changed = ?1"),
            Some(("receivers", "update"))
        );
        assert_eq!(
            target("DELETE FROM blacklist WHERE id = ?1"),
            Some(("blacklist", "delete"))
        );
        assert_eq!(
            target(
                "WITH now AS (SELECT CAST(x AS DOUBLE PRECISION) AS t)\n INSERT INTO rate_limits (key) SELECT 1 FROM now"
            ),
            Some(("rate_limits", "insert"))
        );
        assert_eq!(target("SELECT id FROM receivers"), None);
        assert_eq!(target("WITH a AS (DELETE FROM t) SELECT 1"), None);
        assert_eq!(target("BEGIN IMMEDIATE"), None);
    }

    #[test]
    fn rows_of_a_savepoint_rolled_back_are_not_counted() {
        discard();
        let counts = RowsWritten::default();
        record("INSERT INTO a (x) VALUES (1)", 2);
        savepoints("SAVEPOINT merged");
        record("INSERT INTO b (x) VALUES (1)", 5);
        savepoints("ROLLBACK TO merged; RELEASE merged");
        record("DELETE FROM a", 0);
        let m = mark();
        record("UPDATE a SET x = 1", 3);
        back_to(m);
        flush(&counts);
        let get = |table: &str, op: &str| {
            counts
                .get_or_create(&RowLabels {
                    table: table.into(),
                    op: op.into(),
                })
                .get()
        };
        assert_eq!(get("a", "insert"), 2);
        assert_eq!(get("b", "insert"), 0);
        assert_eq!(get("a", "update"), 0);
    }
}

//! One handle on the store's database, whichever backend holds it: SQLite
//! (embedded, the default) or PostgreSQL (`serve --db postgres://...`).
//!
//! Store modules write their SQL once, in the dialect both accept: `?N`
//! parameters (sent to PostgreSQL as `$N`), `RETURNING id` for a new row's
//! id, `ON CONFLICT` upserts, `CAST(... AS BIGINT)` where a type must be
//! pinned. Where the dialects part (JSON arrays of rows, pattern matching),
//! a module asks [`Db::backend`] and writes each form.
//!
//! Decision: an enum, not a generic connection trait: a store function is
//! compiled once, the cost of a `match` per statement is nothing beside the
//! statement, and a reader sees both backends' calls in one place.

use super::StoreResult;
use postgres::types::Type;
use std::cell::RefCell;
use std::collections::HashMap;

/// The database a store function runs on.
#[derive(Clone, Copy)]
pub enum Db<'c> {
    Lite(&'c rusqlite::Connection),
    Pg(&'c RefCell<PgConn>),
}

/// Which backend a [`Db`] is, for the statements that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// How [`Db::lock`] holds rows: `KeyShare` keeps them from being deleted
/// (others may hold them too), `Update` waits for every holder and keeps
/// them out until the transaction ends.
#[derive(Debug, Clone, Copy)]
pub enum Lock {
    KeyShare,
    Update,
}

/// A PostgreSQL connection and its prepared statements, keyed by the
/// statement's text as the store wrote it and its parameters' types (a
/// statement built at run time may bind a number where it once bound text).
pub struct PgConn {
    pub(super) client: postgres::Client,
    statements: HashMap<String, Vec<(Vec<Type>, postgres::Statement)>>,
}

/// Statement texts kept prepared per connection; past it the cache starts
/// over (filters and selections make new texts without end).
const PG_STATEMENTS: usize = 512;

impl PgConn {
    pub(super) fn new(client: postgres::Client) -> PgConn {
        PgConn {
            client,
            statements: HashMap::new(),
        }
    }

    /// The prepared statement of `sql`, prepared with the parameters' own
    /// types on first use: PostgreSQL then never guesses a type (an
    /// `int4` for a Rust `i64`, no type at all for `?1 IS NULL`).
    fn statement(&mut self, sql: &str, params: &[&dyn Param]) -> StoreResult<postgres::Statement> {
        let types: Vec<Type> = params.iter().map(|p| p.pg_type()).collect();
        if let Some((_, s)) = self
            .statements
            .get(sql)
            .and_then(|prepared| prepared.iter().find(|(t, _)| *t == types))
        {
            return Ok(s.clone());
        }
        let s = self.client.prepare_typed(&dollar_params(sql), &types)?;
        if self.statements.len() >= PG_STATEMENTS {
            self.statements.clear();
        }
        self.statements
            .entry(sql.to_string())
            .or_default()
            .push((types, s.clone()));
        Ok(s)
    }

    fn query(&mut self, sql: &str, params: &[&dyn Param]) -> StoreResult<Vec<postgres::Row>> {
        let s = self.statement(sql, params)?;
        let values: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| *p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        Ok(self.client.query(&s, &values)?)
    }

    fn execute(&mut self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64> {
        let s = self.statement(sql, params)?;
        let values: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| *p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        Ok(self.client.execute(&s, &values)?)
    }
}

/// A value bound to a statement: what both backends can take, and the
/// PostgreSQL type it is sent as.
pub trait Param: rusqlite::ToSql + postgres::types::ToSql + Sync {
    fn pg_type(&self) -> Type;
}

macro_rules! params_of_type {
    ($($t:ty => $pg:expr),* $(,)?) => {$(
        impl Param for $t {
            fn pg_type(&self) -> Type { $pg }
        }
        impl Param for Option<$t> {
            fn pg_type(&self) -> Type { $pg }
        }
    )*};
}
params_of_type! {
    i64 => Type::INT8,
    f64 => Type::FLOAT8,
    bool => Type::BOOL,
    String => Type::TEXT,
    &str => Type::TEXT,
    Vec<u8> => Type::BYTEA,
    &[u8] => Type::BYTEA,
}

impl<T: Param + ?Sized> Param for &T
where
    for<'a> &'a T: rusqlite::ToSql + postgres::types::ToSql,
{
    fn pg_type(&self) -> Type {
        (**self).pg_type()
    }
}

/// A value of a statement built at run time (a filter's rules, a page's
/// selection), held as SQLite's dynamic value, bound on either backend.
#[derive(Debug)]
pub struct Dynamic<'a>(pub &'a rusqlite::types::Value);

impl rusqlite::ToSql for Dynamic<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

impl postgres::types::ToSql for Dynamic<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use rusqlite::types::Value as V;
        match self.0 {
            V::Null => Ok(postgres::types::IsNull::Yes),
            V::Integer(i) => i.to_sql(ty, out),
            V::Real(f) => f.to_sql(ty, out),
            V::Text(t) => t.to_sql(ty, out),
            V::Blob(b) => b.to_sql(ty, out),
        }
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    postgres::types::to_sql_checked!();
}

impl Param for Dynamic<'_> {
    fn pg_type(&self) -> Type {
        use rusqlite::types::Value as V;
        match self.0 {
            V::Integer(_) => Type::INT8,
            V::Real(_) => Type::FLOAT8,
            V::Null | V::Text(_) => Type::TEXT,
            V::Blob(_) => Type::BYTEA,
        }
    }
}

/// The parameters of a statement, as [`Db`] takes them:
/// `db.exec(sql, params![id, name])`.
#[macro_export]
macro_rules! store_params {
    () => { &[] as &[&dyn $crate::store::db::Param] };
    ($($p:expr),+ $(,)?) => { &[$(&$p as &dyn $crate::store::db::Param),+] as &[&dyn $crate::store::db::Param] };
}
// The macro by its name in scope: `#[macro_export]` alone puts it at the
// crate root, and the store does not reach up there.
pub use store_params as params;

/// A value read from a row: what both backends can give.
pub trait Value: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a> {}
impl<T: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>> Value for T {}

/// One row of a result.
pub enum Row<'r> {
    Lite(&'r rusqlite::Row<'r>),
    Pg(&'r postgres::Row),
}

impl<'r> Row<'r> {
    /// Column `i` (from 0) as `T`.
    pub fn get<T: Value>(&self, i: usize) -> StoreResult<T> {
        Ok(match self {
            Row::Lite(r) => r.get(i)?,
            Row::Pg(r) => r.try_get(i)?,
        })
    }

    /// Text column `i`, borrowed from the row (no copy: what a page of
    /// receivers is written from).
    pub fn str(&self, i: usize) -> StoreResult<&'r str> {
        match self {
            Row::Lite(r) => {
                let v = r.get_ref(i)?;
                Ok(v.as_str().map_err(|e| match v {
                    rusqlite::types::ValueRef::Text(_) => {
                        rusqlite::Error::FromSqlConversionFailure(
                            i,
                            rusqlite::types::Type::Text,
                            Box::new(e),
                        )
                    }
                    other => rusqlite::Error::InvalidColumnType(
                        i,
                        format!("column {i}"),
                        other.data_type(),
                    ),
                })?)
            }
            Row::Pg(r) => Ok(r.try_get(i)?),
        }
    }
}

impl<'c> Db<'c> {
    pub fn backend(&self) -> Backend {
        match self {
            Db::Lite(_) => Backend::Sqlite,
            Db::Pg(_) => Backend::Postgres,
        }
    }

    /// Locks the rows `select` finds until the transaction ends, and
    /// answers how many it locked. On PostgreSQL only: SQLite has one
    /// writer, which needs no row locks (0 there).
    pub fn lock(&self, select: &str, params: &[&dyn Param], lock: Lock) -> StoreResult<usize> {
        if self.backend() == Backend::Sqlite {
            return Ok(0);
        }
        let clause = match lock {
            Lock::KeyShare => "FOR KEY SHARE",
            Lock::Update => "FOR UPDATE",
        };
        let mut n = 0;
        self.each(&format!("{select} {clause}"), params, |_| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Runs a statement; the number of rows it changed (counted for the
    /// metrics, [`super::written`]).
    pub fn exec(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64> {
        let n = match self {
            Db::Lite(c) => c.prepare_cached(sql)?.execute(lite(params))? as u64,
            Db::Pg(c) => c.borrow_mut().execute(sql, params)?,
        };
        super::written::record(sql, n);
        Ok(n)
    }

    /// Every row of a query, each read by `f`.
    pub fn rows<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        mut f: impl FnMut(&Row) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>> {
        match self {
            Db::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(lite(params))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&Row::Lite(r))?);
                }
                // An `INSERT ... RETURNING` answers a row for each it wrote.
                super::written::record(sql, out.len() as u64);
                Ok(out)
            }
            Db::Pg(c) => {
                let rows = c.borrow_mut().query(sql, params)?;
                let out: Vec<T> = rows
                    .iter()
                    .map(|r| f(&Row::Pg(r)))
                    .collect::<StoreResult<_>>()?;
                super::written::record(sql, out.len() as u64);
                Ok(out)
            }
        }
    }

    /// Every row of a query given to `f` in turn, none kept.
    pub fn each(
        &self,
        sql: &str,
        params: &[&dyn Param],
        mut f: impl FnMut(&Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        match self {
            Db::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(lite(params))?;
                let mut n = 0;
                while let Some(r) = rows.next()? {
                    f(&Row::Lite(r))?;
                    n += 1;
                }
                super::written::record(sql, n);
                Ok(())
            }
            Db::Pg(c) => {
                let rows = c.borrow_mut().query(sql, params)?;
                rows.iter().try_for_each(|r| f(&Row::Pg(r)))?;
                super::written::record(sql, rows.len() as u64);
                Ok(())
            }
        }
    }

    /// The first row of a query read by `f`, if there is one.
    pub fn opt_row<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: impl FnOnce(&Row) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        let out = match self {
            Db::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(lite(params))?;
                rows.next()?.map(|r| f(&Row::Lite(r))).transpose()?
            }
            Db::Pg(c) => {
                let rows = c.borrow_mut().query(sql, params)?;
                rows.first().map(|r| f(&Row::Pg(r))).transpose()?
            }
        };
        // The store reads one row of an `INSERT ... RETURNING` that writes one.
        super::written::record(sql, u64::from(out.is_some()));
        Ok(out)
    }

    /// The first row of a query read by `f`; a query that always answers
    /// a row (`SELECT EXISTS`, `COUNT`, an insert's `RETURNING`).
    pub fn row<T>(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: impl FnOnce(&Row) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.opt_row(sql, params, f)?
            .ok_or_else(|| super::StoreError::Internal(format!("a query answered no row: {sql}")))
    }

    /// The first column of the first row.
    pub fn value<T: Value>(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<T> {
        self.row(sql, params, |r| r.get(0))
    }

    /// Several statements without parameters (a migration's, a
    /// savepoint's: what a savepoint rolled back wrote is not counted,
    /// [`super::written`]).
    pub fn batch(&self, sql: &str) -> StoreResult<()> {
        match self {
            Db::Lite(c) => c.execute_batch(sql)?,
            Db::Pg(c) => c.borrow_mut().client.batch_execute(sql)?,
        }
        super::written::savepoints(sql);
        Ok(())
    }
}

fn lite<'p>(params: &'p [&dyn Param]) -> impl rusqlite::Params + 'p {
    rusqlite::params_from_iter(params.iter().map(|p| *p as &dyn rusqlite::ToSql))
}

/// `sql` with its `?N` parameters written `$N` (PostgreSQL's spelling),
/// and a bare `?` numbered as SQLite numbers it (one past the largest
/// number so far); text inside quotes is left alone.
pub fn dollar_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut largest = 0usize;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    digits.push(d);
                }
                let n = digits.parse().unwrap_or(largest + 1);
                largest = largest.max(n);
                out.push('$');
                out.push_str(&n.to_string());
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_respelt_outside_quotes_only() {
        assert_eq!(
            dollar_params("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND \"d?\" = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND \"d?\" = $12"
        );
        // Bare ones as SQLite numbers them: one past the largest so far.
        assert_eq!(
            dollar_params("a = ? AND b IN (?, ?) AND c = ?7 AND d = ?"),
            "a = $1 AND b IN ($2, $3) AND c = $7 AND d = $8"
        );
    }

    #[test]
    fn sqlite_runs_statements_through_the_shared_handle() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let db = Db::Lite(&conn);
        db.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER)")
            .unwrap();
        let id: i64 = db
            .value(
                "INSERT INTO t (name, flag) VALUES (?1, ?2) RETURNING id",
                params!["a", true],
            )
            .unwrap();
        let none: Option<String> = None;
        assert_eq!(
            db.exec("UPDATE t SET name = ?1 WHERE id = ?2", params![none, id])
                .unwrap(),
            1
        );
        let rows = db
            .rows("SELECT id, name, flag FROM t", params![], |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<Option<String>>(1)?,
                    r.get::<bool>(2)?,
                ))
            })
            .unwrap();
        assert_eq!(rows, vec![(id, None, true)]);
        assert!(
            db.opt_row("SELECT id FROM t WHERE id = ?1", params![id + 1], |r| r
                .get::<i64>(0))
                .unwrap()
                .is_none()
        );
    }
}

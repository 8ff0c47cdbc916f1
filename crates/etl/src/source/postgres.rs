//! A PostgreSQL query as a source (`source = { postgres = "postgres://...", query = "..." }`):
//! the warehouse table a data team would otherwise export to CSV first, read with the same
//! mapping, validation, dedupe and rejects as that CSV.
//!
//! Decisions:
//! - Rows stream through a server-side cursor (`DECLARE ... NO SCROLL CURSOR`, then `FETCH
//!   FORWARD` [`FETCH_ROWS`] at a time) in a read-only transaction: memory holds a batch and
//!   a chunk, never the result, and listpipe cannot change the warehouse.
//! - Values come as PostgreSQL's own text (the simple query protocol's text format, what
//!   `::text` gives): numbers as stored, dates ISO (`DateStyle = ISO, YMD`), `timestamptz` in
//!   UTC (`TimeZone = UTC`, so a run does not depend on the server's zone), NULL as an empty
//!   cell. The column names of the result are the header.
//! - Row numbers are those of a CSV export of the result with its header line: the first
//!   result row is row 2.
//! - The synchronous `postgres` client runs its own small runtime, which must not start on a
//!   thread inside the CLI's tokio runtime: the client lives on a thread of its own and hands
//!   batches over a channel of one, so the reading thread (and the sink) stay where they are.
//! - Plain TCP (`NoTls`): meant for loopback, a socket or a trusted network; TLS is a
//!   follow-up. The password is never shown: the source is named by [`PgSource::name`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use postgres::{Client, Config, NoTls, SimpleQueryMessage};

use super::builder::{TableBuilder, header, is_blank};
use super::{Dialect, LineEnding, SourceError, SourceFormat, TextEncoding};

/// Rows per `FETCH`: a few thousand, a few hundred kilobytes per round trip.
pub(super) const FETCH_ROWS: usize = 5_000;

/// Rejects of a query are a plain UTF-8 CSV with the query's columns.
const REJECTS_DIALECT: Dialect = Dialect {
    format: SourceFormat::Csv,
    delimiter: b',',
    encoding: TextEncoding::Utf8,
    encoding_guessed: false,
    line_ending: LineEnding::Lf,
};

/// Where the connection URL comes from.
#[derive(Clone, PartialEq)]
pub enum PgUrl {
    /// Written in the pipeline (`postgres = "..."`).
    Given(String),
    /// The name of an environment variable holding it (`postgres_env = "WAREHOUSE_URL"`).
    Env(String),
}

/// A query source.
#[derive(Clone, PartialEq)]
pub struct PgSource {
    pub url: PgUrl,
    pub query: String,
}

/// Never the URL itself: it may hold a password.
impl fmt::Debug for PgSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = match &self.url {
            PgUrl::Given(_) => "<url>".to_string(),
            PgUrl::Env(var) => format!("${var}"),
        };
        f.debug_struct("PgSource")
            .field("url", &url)
            .field("query", &self.query)
            .finish()
    }
}

impl PgSource {
    /// The connection settings, and the source's name without its password
    /// (`postgres://user@host:port/db`).
    fn config(&self) -> Result<(Config, String), SourceError> {
        let (url, origin) = match &self.url {
            PgUrl::Given(url) => (url.clone(), "`postgres`".to_string()),
            PgUrl::Env(var) => (
                std::env::var(var).map_err(|_| SourceError::Postgres {
                    source_name: format!("${var}"),
                    message: format!(
                        "the environment variable {var} (named by `postgres_env`) is not set; set it to the connection URL, postgres://user:password@host:port/database"
                    ),
                })?,
                format!("${var}"),
            ),
        };
        // The parser's message may quote the value: it is not passed on.
        let config = Config::from_str(&url).map_err(|_| SourceError::Postgres {
            source_name: origin,
            message: "not a valid PostgreSQL connection URL; write it as postgres://user:password@host:port/database".into(),
        })?;
        let name = display_name(&config);
        Ok((config, name))
    }

    /// The source's name without its password, for messages and the report.
    pub fn name(&self) -> String {
        match self.config() {
            Ok((_, name)) => name,
            Err(SourceError::Postgres { source_name, .. }) => source_name,
            Err(_) => "postgres".into(),
        }
    }

    /// The query without the trailing `;` a user may leave (it goes inside `DECLARE`).
    fn statement(&self) -> &str {
        self.query
            .trim()
            .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
    }
}

/// `postgres://user@host:port/db`: what names the source in messages.
fn display_name(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{db}")
}

/// What the client thread hands over.
enum Batch {
    Header(Vec<String>),
    Rows(Vec<Vec<Option<String>>>),
}

/// The result's column names (the query is prepared, not run), for the pipeline checker.
pub(crate) fn read_header(src: &PgSource) -> Result<Vec<String>, SourceError> {
    let (config, name) = src.config()?;
    let statement = src.statement().to_string();
    on_own_thread(move || {
        let mut client = connect(&config, &name)?;
        let prepared = client
            .prepare(&statement)
            .map_err(|e| failure(&name, "the query failed", &e))?;
        let names: Vec<Option<String>> = prepared
            .columns()
            .iter()
            .map(|c| Some(c.name().to_string()))
            .collect();
        Ok(header(names.as_slice()).names)
    })
}

/// Streams the query's rows into the table; returns the rejects dialect.
pub(crate) fn read(src: &PgSource, table: &mut TableBuilder) -> Result<Dialect, SourceError> {
    let (config, name) = src.config()?;
    let statement = src.statement().to_string();
    let (tx, rx) = sync_channel(1);
    let thread_name = name.clone();
    std::thread::scope(|scope| {
        let client = scope.spawn(move || fetch(&config, &thread_name, &statement, &tx));
        let pushed = push(rx, &name, table);
        // The receiver is gone now: a client still fetching stops at its next send.
        let fetched = client.join().unwrap_or_else(|_| {
            Err(SourceError::Postgres {
                source_name: name.clone(),
                message: "the PostgreSQL client stopped unexpectedly".into(),
            })
        });
        // The client's own error explains a missing batch better than the consumer's.
        match (fetched, pushed) {
            (Err(e), _) | (Ok(()), Err(e)) => Err(e),
            (Ok(()), Ok(())) => Ok(REJECTS_DIALECT),
        }
    })
}

/// Takes the batches into the table as rows numbered like a CSV export's.
fn push(rx: Receiver<Batch>, name: &str, table: &mut TableBuilder) -> Result<(), SourceError> {
    let mut columns = None;
    let mut row_number = 1u64;
    for batch in rx {
        match batch {
            Batch::Header(names) => {
                let cells: Vec<Option<String>> = names.into_iter().map(Some).collect();
                let head = header(cells.as_slice());
                columns = Some(table.start_file(PathBuf::from(name), &head, REJECTS_DIALECT));
            }
            Batch::Rows(rows) => {
                let Some(file) = &columns else {
                    continue;
                };
                for row in rows {
                    row_number += 1;
                    // As in a CSV file, a row of nothing but empty cells is skipped.
                    if !is_blank(row.as_slice()) {
                        table.push_row(file, row_number, row.as_slice())?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The client side: connect, open the cursor, send the header and each batch. A closed
/// channel (the reader stopped) ends it quietly; an error ends it, and with it the channel.
fn fetch(
    config: &Config,
    name: &str,
    statement: &str,
    tx: &SyncSender<Batch>,
) -> Result<(), SourceError> {
    let mut client = connect(config, name)?;
    let query_failed = |e: postgres::Error| failure(name, "the query failed", &e);
    // The names of the result, even when it has no rows.
    let prepared = client.prepare(statement).map_err(query_failed)?;
    let names: Vec<String> = prepared
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut transaction = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(query_failed)?;
    transaction
        .batch_execute("SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL TimeZone = 'UTC'")
        .map_err(query_failed)?;
    transaction
        .batch_execute(&format!(
            "DECLARE listpipe_source NO SCROLL CURSOR FOR {statement}"
        ))
        .map_err(query_failed)?;
    if tx.send(Batch::Header(names)).is_err() {
        return Ok(());
    }
    let fetch = format!("FETCH FORWARD {FETCH_ROWS} FROM listpipe_source");
    loop {
        let messages = transaction.simple_query(&fetch).map_err(query_failed)?;
        let rows: Vec<Vec<Option<String>>> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        let last = rows.len() < FETCH_ROWS;
        if !rows.is_empty() && tx.send(Batch::Rows(rows)).is_err() {
            return Ok(());
        }
        if last {
            return Ok(());
        }
    }
}

fn connect(config: &Config, name: &str) -> Result<Client, SourceError> {
    config
        .connect(NoTls)
        .map_err(|e| failure(name, "cannot connect", &e))
}

/// PostgreSQL's own words: for a server error its severity, message, detail and hint and
/// SQLSTATE; else the client's error and its cause (refused, timed out, ...).
fn failure(name: &str, what: &str, e: &postgres::Error) -> SourceError {
    let message = match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            format!("{text} [SQLSTATE {}]", db.code().code())
        }
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let c_text = c.to_string();
                if !text.contains(&c_text) {
                    text.push_str(&format!(": {c_text}"));
                }
                cause = c.source();
            }
            text
        }
    };
    SourceError::Postgres {
        source_name: name.to_string(),
        message: format!("{what}: {message}"),
    }
}

/// Runs `work` on a thread outside any tokio runtime (see the module).
fn on_own_thread<T: Send>(
    work: impl FnOnce() -> Result<T, SourceError> + Send,
) -> Result<T, SourceError> {
    std::thread::scope(|scope| {
        scope.spawn(work).join().unwrap_or_else(|_| {
            Err(SourceError::Postgres {
                source_name: "postgres".into(),
                message: "the PostgreSQL client stopped unexpectedly".into(),
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_named_without_its_password() {
        let src = PgSource {
            url: PgUrl::Given("postgres://ann:hunter2@db.example:6543/shop?sslmode=disable".into()),
            query: "select 1;".into(),
        };
        assert_eq!(src.name(), "postgres://ann@db.example:6543/shop");
        assert!(!format!("{src:?}").contains("hunter2"));
        assert_eq!(src.statement(), "select 1");
    }

    #[test]
    fn an_unset_variable_and_a_bad_url_are_named_without_their_value() {
        let src = PgSource {
            url: PgUrl::Env("LISTPIPE_TEST_SURELY_UNSET_URL".into()),
            query: "select 1".into(),
        };
        let err = read_header(&src).unwrap_err().to_string();
        assert!(
            err.starts_with("$LISTPIPE_TEST_SURELY_UNSET_URL: the environment variable"),
            "{err}"
        );
        let bad = PgSource {
            url: PgUrl::Given("postgres://ann:hunter2@db:notaport/x".into()),
            query: "select 1".into(),
        };
        let err = read_header(&bad).unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(
            err.contains("not a valid PostgreSQL connection URL"),
            "{err}"
        );
    }
}

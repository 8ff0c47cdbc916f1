//! `listpipe outbox`: the double-opt-in mails the built-in server wrote
//! instead of sending them, read from the database directly (the server may
//! be running). One JSON object per line, newest first, the shape of
//! `GET /v3/outbox`.

use crate::server::DEFAULT_ACCOUNT;
use crate::server::store::{Store, accounts, forms};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct OutboxArgs {
    /// The server's database: its SQLite file, or its `postgres://` URL.
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    /// The account whose mails to print.
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    pub name: String,
}

/// Any failure here is the arguments' or the database's: exit code 2.
pub async fn run(args: OutboxArgs) -> super::Outcome {
    outbox(args)
        .await
        .map(|_| super::exit::OK)
        .map_err(super::fail(super::exit::USAGE))
}

async fn outbox(args: OutboxArgs) -> anyhow::Result<()> {
    // A PostgreSQL URL names no file; the store says if it cannot connect.
    if !crate::server::store::is_postgres(&args.db) && !args.db.exists() {
        anyhow::bail!(
            "no database at {} (start the server with `listpipe serve --db FILE` first, or pass --db)",
            args.db.display()
        );
    }
    let store = Store::open(&args.db)?;
    let name = args.name.clone();
    let mails = store
        .call(move |c| {
            let account = accounts::app_of(c, &name)?.account;
            forms::outbox::page(c, account, None, -1, 0)
        })
        .await?;
    let mut out = std::io::stdout().lock();
    for mail in mails {
        writeln!(out, "{}", serde_json::to_string(&mail)?)?;
    }
    Ok(())
}

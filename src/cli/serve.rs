//! `listpipe serve`: the built-in target server in the foreground.

use crate::server::{self, DEFAULT_TOKEN_TTL_SECS, ServeOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The SQLite database; created with a default account on first start.
    #[arg(long, default_value = ".listpipe/server.db")]
    pub db: PathBuf,
    /// Address to listen on; port 0 picks a free port (the URL is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Where the first start writes the default account's credentials (JSON, mode 0600).
    #[arg(long)]
    pub credentials: Option<PathBuf>,
    /// Lifetime of access tokens in seconds.
    #[arg(long, default_value_t = DEFAULT_TOKEN_TTL_SECS)]
    pub token_ttl: i64,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let credentials = args.credentials.clone();
    let running = server::start(ServeOptions {
        db: args.db.clone(),
        listen: args.listen,
        credentials: args.credentials,
        token_ttl: args.token_ttl.max(1),
    })
    .await?;
    eprintln!(
        "listpipe: serving the v3 API at {} (database {})",
        running.base_url,
        args.db.display()
    );
    match (&running.credentials, &credentials) {
        (Some(_), Some(path)) => {
            eprintln!(
                "listpipe: first start: credentials of account \"default\" written to {}",
                path.display()
            )
        }
        (Some(creds), None) => {
            eprintln!(
                "listpipe: first start: credentials of account \"default\" (keep them; pass --credentials FILE to save them):"
            );
            println!("{}", serde_json::to_string_pretty(creds)?);
        }
        (None, _) => eprintln!(
            "listpipe: existing database; new credentials: listpipe accounts credentials --db {} --name default",
            args.db.display()
        ),
    }
    tokio::select! {
        r = running.wait() => r?,
        _ = tokio::signal::ctrl_c() => eprintln!("listpipe: stopped"),
    }
    Ok(())
}

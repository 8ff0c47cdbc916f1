//! The built-in target of `run` and `export`: the server started in-process
//! on a free loopback port, for the ETL's [`Builtin`] seam.

use crate::server::{self, ServeOptions, store::accounts};
use crate::transport::ConnectError;
use crate::transport::target::{Builtin, BuiltinTarget};
use futures::future::BoxFuture;
use std::path::Path;

/// The server of this binary as the run's built-in target.
pub struct InProcess;

impl Builtin for InProcess {
    fn start(
        &self,
        database: &Path,
        token: Option<&str>,
    ) -> BoxFuture<'static, Result<BuiltinTarget, ConnectError>> {
        let database = database.to_path_buf();
        let token = token.map(str::to_string);
        Box::pin(async move {
            let mut opts = ServeOptions::new(&database, "127.0.0.1:0");
            opts.remember_url = false;
            let running = server::start(opts).await.map_err(|e| {
                ConnectError::new(
                    format!("cannot start the built-in target on {}", database.display()),
                    Some(e.into()),
                )
            })?;
            let token = match (token, &running.credentials) {
                (Some(t), _) => t,
                (None, Some(c)) => c.access_token.clone(),
                (None, None) => {
                    let issued = running
                        .store
                        .write(|c| {
                            let app = accounts::app_of(c, server::DEFAULT_ACCOUNT)?;
                            accounts::issue_pair(
                                c,
                                app.account,
                                app.id,
                                server::DEFAULT_TOKEN_TTL_SECS,
                            )
                        })
                        .await;
                    match issued {
                        Ok(pair) => pair.access_token,
                        Err(e) => {
                            running.stop().await;
                            return Err(ConnectError::new(
                                "the built-in target cannot issue a token",
                                Some(e.into()),
                            ));
                        }
                    }
                }
            };
            Ok(BuiltinTarget {
                base_url: running.base_url.clone(),
                token,
                stop: Box::new(move || Box::pin(running.stop())),
            })
        })
    }
}

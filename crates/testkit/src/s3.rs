//! A throwaway S3-compatible server for tests (issue 18's object stores): moto's server mode
//! (`python3 -m moto.server`) on a free loopback port, its working directory and log in a
//! temp dir, killed and removed on drop, leaving nothing behind. moto keeps its buckets in
//! memory and, unless told otherwise, takes any credentials.
//!
//! Without moto a test skips saying so; with `CI=true` it fails instead (`.ci/run` installs
//! `moto[server]` with pip). The CLI under test reaches it through its child environment
//! ([`S3Server::env`]), never through this process's environment.
//! (Was `tests/it/s3.rs`; its own test still is.)

use object_store::ObjectStoreExt;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The secret key the tests hand the CLI (what they look for in output).
pub const SECRET: &str = "s3cret-s3-key";

pub struct S3Server {
    child: Child,
    /// moto's working directory and log.
    dir: tempfile::TempDir,
    pub port: u16,
}

impl S3Server {
    /// A running server, or `None` (with a line saying why) when moto is not installed;
    /// with `CI=true` that is a failure, not a skip.
    pub fn start() -> Option<S3Server> {
        if !installed() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "moto's server is not installed on this CI machine: .ci/run must pip install \"moto[server]\""
            );
            eprintln!("skipped: moto's server is not installed; pip install \"moto[server]\"");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mut last = String::new();
        // Another process may take the free port before moto binds it: then another one.
        for _ in 0..5 {
            let port = crate::free_port();
            let log = std::fs::File::create(dir.path().join("moto.log")).expect("log file");
            let mut child = Command::new("python3")
                .args([
                    "-m",
                    "moto.server",
                    "-H",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                ])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log file"))
                .stderr(log)
                .spawn()
                .expect("python3 runs");
            if wait_listening(&mut child, port) {
                return Some(S3Server { child, dir, port });
            }
            let _ = child.kill();
            let _ = child.wait();
            last = std::fs::read_to_string(dir.path().join("moto.log")).unwrap_or_default();
        }
        panic!("moto's server did not start: {last}");
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a CLI run needs to reach this server, as a user sets it for MinIO.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "listpipe-test".into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    pub async fn create_bucket(&self, bucket: &str) {
        let status = client()
            .put(format!("{}/{bucket}", self.endpoint()))
            .send()
            .await
            .expect("moto answers")
            .status();
        assert!(status.is_success(), "bucket {bucket} not created: {status}");
    }

    /// A signed client of the bucket (moto refuses an unsigned overwrite or delete).
    fn bucket(&self, bucket: &str) -> object_store::aws::AmazonS3 {
        listpipe_client::init_tls();
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id("listpipe-test")
            .with_secret_access_key(SECRET)
            .with_bucket_name(bucket)
            .build()
            .expect("an S3 client")
    }

    /// Stores an object (replacing one of that key).
    pub async fn put(&self, bucket: &str, key: &str, bytes: &[u8]) {
        self.bucket(bucket)
            .put(&key.into(), bytes.to_vec().into())
            .await
            .unwrap_or_else(|e| panic!("{key} not stored: {e}"));
    }

    pub async fn delete(&self, bucket: &str, key: &str) {
        self.bucket(bucket)
            .delete(&key.into())
            .await
            .unwrap_or_else(|e| panic!("{key} not deleted: {e}"));
    }

    /// The object's bytes, or `None` when there is no such object.
    pub async fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        match self.bucket(bucket).get(&key.into()).await {
            Ok(got) => Some(got.bytes().await.expect("a body").to_vec()),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("{key} not read: {e}"),
        }
    }

    /// How many multipart uploads to the bucket were started and neither completed nor
    /// aborted.
    pub async fn uploads_in_progress(&self, bucket: &str) -> usize {
        let text = client()
            .get(format!("{}/{bucket}?uploads", self.endpoint()))
            .send()
            .await
            .expect("moto answers")
            .text()
            .await
            .expect("a listing");
        text.matches("<Upload>").count()
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::Client {
    listpipe_client::init_tls();
    reqwest::Client::new()
}

/// Whether `python3 -m moto.server` can run here.
fn installed() -> bool {
    Command::new("python3")
        .args(["-c", "import moto.server"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Waits until the child accepts connections on `port`; `false` when it exited first (the
/// port was taken) or did not listen within a minute.
fn wait_listening(child: &mut Child, port: u16) -> bool {
    for _ in 0..600 {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

//! The test-support crate's throwaway S3-compatible server
//! ([`listpipe_testkit::s3::S3Server`]), itself tested: it stores objects,
//! and leaves nothing behind.

use listpipe_testkit::s3::S3Server;
use std::net::TcpStream;

#[tokio::test]
async fn a_throwaway_s3_server_stores_objects_and_leaves_nothing_behind() {
    let Some(s3) = S3Server::start() else {
        return;
    };
    s3.create_bucket("box").await;
    s3.put("box", "a/b.csv", b"email\nann@example.com\n").await;
    assert_eq!(
        s3.get("box", "a/b.csv").await.as_deref(),
        Some(&b"email\nann@example.com\n"[..])
    );
    assert_eq!(s3.get("box", "a/missing.csv").await, None);
    let (dir, port) = (s3.dir().to_path_buf(), s3.port);
    drop(s3);
    assert!(!dir.exists(), "the temp dir is removed");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on the port any more"
    );
}

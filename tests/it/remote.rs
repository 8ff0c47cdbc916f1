//! Where the data lives (issue 18): compressed files read as the text inside them, and
//! `http://` sources downloaded from a server the test starts on a loopback port, with
//! their ETag remembered, retries, and every failure an exit 2 naming the URL without its
//! credentials.

use crate::import::run;
use crate::support::TestServer;
use std::io::Write;
use std::path::Path;

/// A small CSV as a shop would export it: a header, three customers, one of them twice.
const CUSTOMERS: &str = "email,first name,city\nanna@example.com,Anna,Berlin\nbernd@example.com,Bernd,Bonn\nanna@example.com,Anna,Berlin\ncarla@example.com,Carla,Köln\n";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An import step named `name` reading `source` into the group `group`.
fn import_step(name: &str, source: &str, group: &str) -> String {
    format!(
        "[[import]]\nname = \"{name}\"\nsource = \"{source}\"\ngroup = \"{group}\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.global_attributes]\nfirstname = \"first name\"\ncity = \"city\"\n"
    )
}

/// The group's receivers as (email, global attributes), sorted.
async fn people(t: &TestServer, group: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut people: Vec<_> = t
        .receivers_of(group)
        .await
        .into_iter()
        .map(|r| (r.email, r.global_attributes.into_iter().collect()))
        .collect();
    people.sort();
    people
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[tokio::test]
async fn gzip_and_zstd_files_import_the_same_receivers_as_the_plain_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::create_dir(dir.join("daily")).unwrap();
    write(dir, "customers.csv", CUSTOMERS.as_bytes());
    write(dir, "customers.csv.gz", &gzip(CUSTOMERS.as_bytes()));
    let zst = zstd::encode_all(CUSTOMERS.as_bytes(), 3).unwrap();
    write(&dir.join("daily"), "customers.csv.zst", &zst);
    let tsv = CUSTOMERS.replace(',', "\t");
    write(&dir.join("daily"), "more.tsv.gz", &gzip(tsv.as_bytes()));
    let pipeline = dir.join("p.toml");
    let text = [
        import_step("plain", "customers.csv", "Plain"),
        import_step("gzip", "customers.csv.gz", "Gzip"),
        import_step("glob", "daily/*", "Glob"),
    ]
    .concat();
    std::fs::write(&pipeline, text).unwrap();
    let (code, report, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let plain = people(&t, "Plain").await;
    assert_eq!(plain.len(), 3);
    assert_eq!(people(&t, "Gzip").await, plain);
    assert_eq!(people(&t, "Glob").await, plain);
    assert_eq!(report["steps"][2]["prepare"]["rows_read"], 8);
}

#[tokio::test]
async fn a_corrupt_gzip_file_stops_with_exit_2_naming_the_file() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    let whole = gzip(CUSTOMERS.as_bytes());
    write(dir, "customers.csv.gz", &whole[..whole.len() / 2]);
    let pipeline = dir.join("p.toml");
    std::fs::write(
        &pipeline,
        import_step("gzip", "customers.csv.gz", "Customers"),
    )
    .unwrap();
    let (code, _, stderr) = run(&t, &pipeline, &[]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "p.toml:3:10: {} is not a readable gzip file (",
            dir.join("customers.csv.gz").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("); check the file, or compress it again"),
        "{stderr}"
    );
}

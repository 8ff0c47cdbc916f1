//! How receivers are written: batch upserts where the target has them, one
//! request per receiver where it has only the spec's endpoints (or when
//! asked), with the same result on the target either way.

use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::Receiver;

const ROWS: usize = 120;

/// A source of ROWS receivers (one repeated, one invalid) with attributes,
/// tags and orders, and a pipeline importing it into `group`.
fn pipeline(t: &TestServer, group: &str) -> std::path::PathBuf {
    let dir = t.dir.path();
    let mut csv = String::from("email,name,size,tags,order_id,price,signup\n");
    for i in 0..ROWS {
        csv.push_str(&format!(
            "user{i}@example.com,Name {i},{},\"t{},u\",O{i},{}.25,2024-03-{:02}\n",
            i % 9,
            i % 4,
            i % 30,
            1 + i % 28
        ));
    }
    csv.push_str("USER3@example.com,Again,1,,,,2024-03-01\nnot-an-address,x,1,,,,2024-03-01\n");
    std::fs::write(dir.join("people.csv"), csv).unwrap();
    let path = dir.join(format!("{group}.toml"));
    std::fs::write(
        &path,
        format!(
            r#"[[import]]
name = "people"
source = "people.csv"
group = "{group}"
create_group = true
[import.receiver]
email = "email"
registered = "signup"
activated = "signup"
[import.global_attributes]
firstname = "name"
[import.attributes]
size = {{ column = "size", type = "number" }}
[import.tags]
columns = "tags"
[import.orders]
order_id = "order_id"
price = "price"
"#
        ),
    )
    .unwrap();
    path
}

async fn receivers(t: &TestServer, group: &str) -> Vec<Receiver> {
    let mut all = t.receivers_of(group).await;
    all.sort_by(|a, b| a.email.cmp(&b.email));
    all
}

/// What a receiver holds, without what differs between two writes of it
/// (ids, the write times).
fn content(r: &Receiver) -> String {
    let mut tags = r.tags.clone().unwrap_or_default();
    tags.sort();
    let mut orders: Vec<String> = r
        .orders
        .iter()
        .flatten()
        .map(|o| format!("{}/{}/{}", o.order_id, o.price, o.quantity))
        .collect();
    orders.sort();
    let mut attrs: Vec<_> = r.attributes.iter().collect();
    attrs.sort();
    let mut globals: Vec<_> = r.global_attributes.iter().collect();
    globals.sort();
    format!(
        "{} {} {} {} {attrs:?} {globals:?} {tags:?} {orders:?}",
        r.email, r.registered, r.activated, r.deactivated
    )
}

#[tokio::test]
async fn batch_upserts_and_single_writes_leave_the_same_receivers() {
    let t = TestServer::start().await;
    let (code, batch, stderr) = run_here(&t, &pipeline(&t, "Batch"), &[]).await;
    assert_eq!(code, 1, "the invalid row is rejected\n{stderr}");
    let (code, single, stderr) =
        run_here(&t, &pipeline(&t, "Single"), &["--writes", "single"]).await;
    assert_eq!(code, 1, "{stderr}");
    for report in [&batch, &single] {
        let import = &report["steps"][0]["import"];
        assert_eq!(import["created"], ROWS as u64, "{import}");
        assert_eq!(import["failed"], 0, "{import}");
    }
    // A batch carries up to 1,000 rows: one request here; single writes one each.
    assert_eq!(batch["steps"][0]["import"]["write_requests"], 1);
    assert_eq!(single["steps"][0]["import"]["write_requests"], ROWS as u64);

    let (a, b) = (receivers(&t, "Batch").await, receivers(&t, "Single").await);
    assert_eq!(a.len(), ROWS);
    let (a, b): (Vec<String>, Vec<String>) = (
        a.iter().map(content).collect(),
        b.iter().map(content).collect(),
    );
    assert_eq!(a, b);
    assert!(a[0].contains("\"size\""), "{}", a[0]);

    // Changes go in a batch of their own; a second run sends nothing.
    let (_, again, _) = run_here(&t, &pipeline(&t, "Batch"), &[]).await;
    assert_eq!(again["steps"][0]["import"]["write_requests"], 0);
    assert_eq!(again["steps"][0]["import"]["unchanged"], ROWS as u64);
}

#[tokio::test]
async fn a_target_without_the_batch_extension_gets_one_request_per_receiver() {
    let t = TestServer::start_with(|o| o.spec_only = true).await;
    let (code, report, stderr) = run_here(&t, &pipeline(&t, "News"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(import["created"], ROWS as u64, "{import}");
    assert_eq!(import["failed"], 0, "{import}");
    // The one refused batch (404) is not counted as a row's failure; every
    // row then went alone.
    assert_eq!(import["write_requests"], ROWS as u64 + 1, "{import}");
    let all = receivers(&t, "News").await;
    assert_eq!(all.len(), ROWS);
    assert!(
        all.iter()
            .all(|r| r.orders.as_ref().is_some_and(|o| o.len() == 1))
    );
}

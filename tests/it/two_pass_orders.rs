//! Orders on the receiver rows of a source read twice in small chunks run
//! as the same source read whole: the same plan, counts and rejects, and
//! each receiver is written with every line of its address, wherever the
//! lines are in the file.

use crate::import::run_with;
use crate::support::TestServer;
use crate::two_pass::{CHUNKED, dry_runs_agree};
use std::collections::BTreeMap;

#[tokio::test]
async fn orders_on_receiver_rows_read_twice_in_chunks_go_with_their_receiver() {
    let t = TestServer::start().await;
    // 24 order lines of 6 buyers, each buyer's lines chunks apart; line 21
    // of the data (row 23) has a price that cannot be read.
    let mut csv = String::from("email,order_id,price\n");
    for i in 0..24 {
        let price = if i == 21 { "oops" } else { "2.50" };
        csv.push_str(&format!("b{}@example.com,O{i},{price}\n", i % 6));
    }
    std::fs::write(t.dir.path().join("buyers.csv"), csv).unwrap();
    let path = t.dir.path().join("buyers.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"buyers\"\nsource = \"buyers.csv\"\ngroup = \"Buyers\"\ncreate_group = true\n[import.receiver]\nemail = \"email\"\n[import.orders]\norder_id = \"order_id\"\nprice = \"price\"\n",
    )
    .unwrap();
    let (chunked, _) = dry_runs_agree(&t, &path).await;
    let prepare = &chunked["steps"][0]["prepare"];
    assert_eq!(
        (&prepare["duplicates"], &prepare["orders_accepted"]),
        (&17.into(), &23.into()),
        "{prepare}"
    );

    // Written in chunks: each buyer holds its 4 lines (b3 the 3 valid).
    let (code, _, stderr) = run_with(&t, &path, &[], &CHUNKED).await;
    assert_eq!(code, 1, "{stderr}");
    let held: BTreeMap<String, Vec<String>> = t
        .receivers_of("Buyers")
        .await
        .into_iter()
        .map(|r| {
            let mut ids: Vec<String> = r
                .orders
                .unwrap_or_default()
                .into_iter()
                .map(|o| o.order_id)
                .collect();
            ids.sort_by_key(|id| id[1..].parse::<u32>().unwrap_or(0));
            (r.email, ids)
        })
        .collect();
    let want: BTreeMap<String, Vec<String>> = (0..6)
        .map(|n| {
            let ids = (0..4)
                .map(|k| n + 6 * k)
                .filter(|&i| i != 21)
                .map(|i| format!("O{i}"))
                .collect();
            (format!("b{n}@example.com"), ids)
        })
        .collect();
    assert_eq!(held, want);
}

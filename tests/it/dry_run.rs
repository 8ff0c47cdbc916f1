//! A dry run creates nothing, and says so: its summary, plan and report
//! speak of what a run would create, never of what was created.

use crate::import::run;
use crate::support::TestServer;

#[tokio::test]
async fn a_dry_run_says_what_it_would_create_and_a_run_what_it_created() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::write(
        dir.join("people.csv"),
        "email,first,last\na@example.com,Ann,Lee\nb@example.com,Ben,Ode\n",
    )
    .unwrap();
    let path = dir.join("news.toml");
    std::fs::write(
        &path,
        "[[import]]\nname = \"news\"\nsource = \"people.csv\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n\
         [import.global_attributes]\nfirstname = \"first\"\nlastname = \"last\"\n",
    )
    .unwrap();

    let (code, report, stderr) = run(&t, &path, &["--dry-run"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("news: load: would create the group\nnews: load: would create 2, would update 0, 0 unchanged, 0 blocked, 0 failed, 0 retries, would create attributes: firstname, lastname ("),
        "{stderr}"
    );
    assert!(!stderr.contains("created"), "{stderr}");
    let import = &report["steps"][0]["import"];
    assert_eq!(report["dry_run"], true);
    assert_eq!(import["group_created"], false);
    assert_eq!(import["would_create_group"], true);
    assert_eq!(import["attributes_created"], serde_json::json!([]));
    assert_eq!(
        import["would_create_attributes"],
        serde_json::json!(["firstname", "lastname"])
    );
    let plan = std::fs::read_to_string(dir.join(report["steps"][0]["plan_file"].as_str().unwrap()))
        .unwrap();
    assert!(
        plan.contains("2,a@example.com,create,the group would be created first\n"),
        "{plan}"
    );
    assert!(t.client.groups(None).await.unwrap().is_empty());

    let (code, report, stderr) = run(&t, &path, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("news: load: group created\nnews: load: 2 created, 0 updated, 0 unchanged, 0 blocked, 0 failed, 0 retries, attributes created: firstname, lastname ("),
        "{stderr}"
    );
    assert!(
        report["steps"][0]["import"]
            .get("would_create_group")
            .is_none()
    );
}

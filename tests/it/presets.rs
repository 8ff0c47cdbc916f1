//! Migration presets end to end: each shipped example pipeline (`pipelines/<preset>.toml`
//! over `samples/presets/`) run through the real binary against a server on port 0, then
//! the server's state read back: states, timestamps, attributes, tags, orders, blacklist.

use crate::import::repo;
use crate::in_process::run_here;
use crate::support::TestServer;
use listpipe::api::{Receiver, detail};
use listpipe::client::ApiClient;
use listpipe::pipeline;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Unix seconds of a UTC `YYYY-MM-DD HH:MM:SS`.
fn ts(s: &str) -> i64 {
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
        .unwrap()
        .and_utc()
        .timestamp()
}

async fn group_id(c: &ApiClient, name: &str) -> listpipe::api::Id {
    c.groups(None)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no group {name}"))
        .id
}

async fn receiver(c: &ApiClient, group: &str, email: &str) -> Receiver {
    let g = group_id(c, group).await;
    c.group_receiver(g, email, detail::ALL)
        .await
        .unwrap_or_else(|e| panic!("{email}: {e}"))
}

fn rejects(t: &TestServer, pipeline: &str, step: &str) -> String {
    // The shipped pipelines are outside the run's folder: their state is
    // keyed by name and a hash of their path.
    let file = crate::import::repo(&format!("pipelines/{pipeline}.toml"));
    let state = if file.exists() {
        pipeline::state_name_in(t.dir.path(), &file, pipeline)
    } else {
        pipeline.to_string()
    };
    let path = t
        .dir
        .path()
        .join(format!(".listpipe/rejects/{state}/{step}.rejects.csv"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn import_report<'a>(report: &'a Value, step: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == step)
        .unwrap_or_else(|| panic!("no step {step} in {report}"))
}

/// The Mailchimp samples as the zip Mailchimp hands out, in `dir`.
fn mailchimp_zip(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("audience_export_8d4f2a91c3.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    for entry in std::fs::read_dir(repo("samples/presets/mailchimp")).unwrap() {
        let file = entry.unwrap().path();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&std::fs::read(&file).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    path
}

#[tokio::test]
async fn mailchimp_members_keep_their_state_times_merge_fields_and_tags() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run_here(&t, &repo("pipelines/mailchimp.toml"), &[]).await;
    assert_eq!(code, 1, "one row is rejected\n{stderr}");
    let step = import_report(&report, "mailchimp");
    assert_eq!(step["prepare"]["rows_read"], 7);
    assert_eq!(step["import"]["created"], 6, "{stderr}");
    let c = &t.client;

    // Subscribed: active, opted in at OPTIN_TIME, confirmed at CONFIRM_TIME.
    let anna = receiver(c, "Newsletter", "anna.berg@example.com").await;
    assert!(anna.active);
    assert_eq!(anna.registered, ts("2021-03-01 09:00:00"));
    assert_eq!(anna.activated, ts("2021-03-01 09:05:12"));
    assert_eq!((anna.deactivated, anna.bounced), (0, 0));
    assert_eq!(anna.source, "Mailchimp");
    assert_eq!(anna.last_ip, "203.0.113.5");
    let g = &anna.global_attributes;
    assert_eq!(g["firstname"], "Anna");
    assert_eq!(g["lastname"], "Berg");
    assert_eq!(g["phone"], "+49 30 1234567");
    assert_eq!(g["company"], "Berg GmbH");
    assert_eq!(g["zip_code"], "10115");
    assert_eq!(g["birthday"], "03/14");
    assert_eq!(g["address"], "Hauptstr. 1  Berlin  BE  10115  DE");
    assert!(!g.contains_key("member_rating") && !g.contains_key("leid"));
    assert_eq!(anna.tags.unwrap(), ["Newsletter", "VIP"]);

    // Imported into Mailchimp: no opt-in time, the confirm time stands for both.
    let ben = receiver(c, "Newsletter", "ben.carter@example.com").await;
    assert!(ben.active);
    assert_eq!(ben.registered, ts("2022-07-15 14:30:00"));
    assert_eq!(ben.activated, ben.registered);
    assert_eq!(ben.global_attributes["zip_code"], "01067");
    // Single opt-in: no confirm time, activated at the opt-in.
    let chloe = receiver(c, "Newsletter", "chloe.dubois@example.org").await;
    assert!(chloe.active);
    assert_eq!(chloe.activated, ts("2023-11-20 18:45:00"));
    assert_eq!(chloe.global_attributes["firstname"], "Chloé");

    // Unsubscribed: deactivated at UNSUB_TIME, never activated.
    let dora = receiver(c, "Newsletter", "dora.evans@example.com").await;
    assert!(!dora.active);
    assert_eq!(dora.deactivated, ts("2023-06-01 12:00:00"));
    assert_eq!(dora.activated, 0);
    assert_eq!(dora.registered, ts("2020-05-05 10:00:00"));
    assert_eq!(dora.tags.unwrap(), ["VIP"]);
    let emil = receiver(c, "Newsletter", "emil.fischer@example.net").await;
    assert_eq!(
        (emil.active, emil.activated, emil.deactivated),
        (false, 0, ts("2024-02-29 23:59:59"))
    );

    // Cleaned: bounced at CLEAN_TIME, kept out of mailings.
    let frank = receiver(c, "Newsletter", "frank.gray@example.com").await;
    assert!(!frank.active);
    assert_eq!(frank.bounced, ts("2022-11-20 08:30:00"));
    assert_eq!(frank.activated, 0);
    assert_eq!(frank.tags.unwrap(), ["Lorem_Editors"]);

    let stats = c
        .group_stats(group_id(c, "Newsletter").await)
        .await
        .unwrap();
    assert_eq!(
        (
            stats.total_count,
            stats.active_count,
            stats.inactive_count,
            stats.bounce_count
        ),
        (6, 3, 2, 1)
    );
    let rejected = rejects(&t, "mailchimp", "mailchimp");
    assert!(
        rejected.contains("subscribed_members_export_8d4f2a91c3.csv")
            && rejected
                .contains(",5,email,\"\"\"not-an-address\"\" is not a valid email address: no @\""),
        "{rejected}"
    );
}

#[tokio::test]
async fn the_mailchimp_zip_imports_like_its_files_and_can_blacklist_the_unsubscribed() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    mailchimp_zip(dir);
    std::fs::write(
        dir.join("zip.toml"),
        "[[import]]\npreset = \"mailchimp\"\nsource = \"audience_export_8d4f2a91c3.zip\"\ngroup = \"Newsletter\"\ncreate_group = true\nunsubscribed = \"blacklist\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &dir.join("zip.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    // The blacklist step runs first, over the unsubscribed file only.
    let names: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["import-1-unsubscribed", "import-1"]);
    assert_eq!(report["steps"][0]["blacklist"]["added"], 2, "{report}");
    assert_eq!(report["steps"][0]["prepare"]["skipped"], 5);
    assert_eq!(report["steps"][1]["import"]["created"], 4);
    assert_eq!(report["steps"][1]["import"]["blocked"], 2);

    let c = &t.client;
    let mut blacklist: Vec<(String, String)> = c
        .blacklist()
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.email, e.comment))
        .collect();
    blacklist.sort();
    assert_eq!(
        blacklist,
        [
            ("dora.evans@example.com".to_string(), "NORMAL".to_string()),
            ("emil.fischer@example.net".to_string(), "SPAM".to_string())
        ]
    );
    let g = group_id(c, "Newsletter").await;
    assert_eq!(
        c.group_receiver(g, "dora.evans@example.com", 0)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    let anna = receiver(c, "Newsletter", "anna.berg@example.com").await;
    assert!(anna.active && anna.activated == ts("2021-03-01 09:05:12"));
    assert_eq!(
        receiver(c, "Newsletter", "frank.gray@example.com")
            .await
            .bounced,
        ts("2022-11-20 08:30:00")
    );
    // Members of the zip are named archive/member in the rejects file.
    assert!(
        rejects(&t, "zip", "import-1")
            .contains("audience_export_8d4f2a91c3.zip/subscribed_members_export_8d4f2a91c3.csv")
    );
}

#[tokio::test]
async fn a_mailchimp_file_alone_needs_none_of_the_other_files_columns() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::copy(
        repo("samples/presets/mailchimp/cleaned_members_export_8d4f2a91c3.csv"),
        dir.join("cleaned.csv"),
    )
    .unwrap();
    std::fs::write(
        dir.join("cleaned.toml"),
        "[[import]]\npreset = \"mailchimp\"\nsource = \"cleaned.csv\"\ngroup = \"Old\"\ncreate_group = true\nunsubscribed = \"blacklist\"\n",
    )
    .unwrap();
    let (code, report, stderr) = run_here(&t, &dir.join("cleaned.toml"), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    // No unsubscribed file: no blacklist step.
    assert_eq!(report["steps"].as_array().unwrap().len(), 1);
    let frank = receiver(&t.client, "Old", "frank.gray@example.com").await;
    assert_eq!(
        (frank.active, frank.activated, frank.bounced),
        (false, 0, ts("2022-11-20 08:30:00"))
    );
}

#[tokio::test]
async fn brevo_contacts_are_active_only_with_an_opt_in_and_without_the_blocklist() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run_here(&t, &repo("pipelines/brevo.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(import_report(&report, "brevo")["import"]["created"], 3);
    let c = &t.client;
    let gina = receiver(c, "Newsletter", "gina.hart@example.com").await;
    assert!(gina.active);
    assert_eq!(gina.registered, ts("2022-04-10 08:15:00"));
    assert_eq!(gina.activated, gina.registered);
    assert_eq!(gina.source, "Brevo");
    let g = &gina.global_attributes;
    assert_eq!(
        (
            g["firstname"].as_str(),
            g["lastname"].as_str(),
            g["phone"].as_str(),
            g["city"].as_str(),
            g["interests"].as_str()
        ),
        ("Gina", "Hart", "33612345678", "Paris", "yoga;running")
    );
    assert!(!g.contains_key("email_blacklisted") && !g.contains_key("added_time"));
    // No opt-in on record: consent is not invented.
    let hugo = receiver(c, "Newsletter", "hugo.ivanov@example.com").await;
    assert!(!hugo.active && hugo.activated == 0 && hugo.registered == ts("2022-05-11 09:00:00"));
    // Blocklisted: deactivated at the last change, though opted in once.
    let iris = receiver(c, "Newsletter", "iris.jensen@example.org").await;
    assert_eq!(
        (iris.active, iris.activated, iris.deactivated),
        (false, 0, ts("2023-09-09 09:09:09"))
    );
    // The rejects keep Brevo's dialect: semicolons, BOM, CRLF.
    let rejected = rejects(&t, "brevo", "brevo");
    assert!(
        rejected.starts_with('\u{feff}') && rejected.contains(";5;email;"),
        "{rejected}"
    );
}

#[tokio::test]
async fn hubspot_marketing_contacts_who_did_not_unsubscribe_are_active() {
    let t = TestServer::start().await;
    let (code, _, stderr) = run_here(&t, &repo("pipelines/hubspot.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let c = &t.client;
    let jana = receiver(c, "CRM", "jana.kovac@example.com").await;
    assert!(jana.active);
    assert_eq!(jana.registered, ts("2023-02-14 09:30:00"));
    assert_eq!(jana.activated, jana.registered);
    let g = &jana.global_attributes;
    assert_eq!(g["hubspot_id"], "101");
    assert_eq!(g["lastname"], "Kovač");
    assert_eq!(g["company"], "Kovac Ltd");
    assert_eq!(g["lifecycle_stage"], "Customer");
    assert_eq!(g["contact_owner"], "owner@example.com");
    assert_eq!(g["postal_code"], "01234");
    assert!(!g.contains_key("marketing_contact_status"));
    // A non-marketing contact and one unsubscribed from all email wait for activation.
    for email in ["karl.lund@example.com", "lea.moreau@example.org"] {
        let r = receiver(c, "CRM", email).await;
        assert!(!r.active && r.activated == 0 && r.registered > 0, "{email}");
    }
    assert!(rejects(&t, "hubspot", "hubspot").contains(",5,email,missing email"));
}

#[tokio::test]
async fn shopify_customers_accepting_email_marketing_are_active_with_address_and_tags() {
    let t = TestServer::start().await;
    let (code, _, stderr) = run_here(&t, &repo("pipelines/shopify-customers.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let c = &t.client;
    let mia = receiver(c, "Shop customers", "mia.nowak@example.com").await;
    assert!(mia.active && mia.activated == mia.registered && mia.registered > 0);
    let g = &mia.global_attributes;
    assert_eq!(g["zip"], "01067", "Shopify's leading ' is dropped");
    assert_eq!(g["street"], "Lindenweg 4");
    assert_eq!(g["country"], "DE");
    assert_eq!(g["shopify_id"], "7210448301122");
    assert_eq!(g["total_spent"], "1049.90");
    assert_eq!(g["total_orders"], "7");
    assert_eq!(g["note"], "Prefers email");
    assert!(!g.contains_key("tax_exempt") && !g.contains_key("accepts_sms_marketing"));
    // The pipeline overrides the preset's tags key by key: the columns stay, the origin is its own.
    assert_eq!(mia.tags.unwrap(), ["Shopify.vip", "Shopify.wholesale"]);
    let noah = receiver(c, "Shop customers", "noah.olsen@example.com").await;
    assert!(!noah.active && noah.activated == 0 && noah.registered > 0);
    assert_eq!(noah.global_attributes["street2"], "2. sal");
    assert!(
        receiver(c, "Shop customers", "paul.quinn@example.com")
            .await
            .active
    );
    assert!(
        rejects(&t, "shopify-customers", "shopify-customers").contains(",4,email,missing email")
    );
}

#[tokio::test]
async fn shopify_order_lines_become_orders_of_their_buyer_and_guest_orders_are_rejected() {
    let t = TestServer::start().await;
    let (code, report, stderr) = run_here(&t, &repo("pipelines/shopify-orders.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let step = import_report(&report, "shopify-orders");
    assert_eq!(step["import"]["created"], 2);
    assert_eq!(step["import"]["orders_sent"], 5);
    assert_eq!(step["prepare"]["rejected"]["missing email"], 2);
    let c = &t.client;
    let mia = receiver(c, "Shop buyers", "mia.nowak@example.com").await;
    // Her first row in the (newest first) file is her latest order, where she accepted marketing.
    let latest = ts("2024-05-02 07:15:00");
    assert!(mia.active && mia.registered == latest && mia.activated == latest);
    let mut orders = mia.orders.unwrap();
    orders.sort_by(|a, b| (&a.order_id, &a.product_id).cmp(&(&b.order_id, &b.product_id)));
    let lines: Vec<(&str, &str, &str, f64, &str, i64, i64)> = orders
        .iter()
        .map(|o| {
            (
                o.order_id.as_str(),
                o.product_id.as_str(),
                o.product.as_str(),
                o.price,
                o.currency.as_str(),
                o.quantity,
                o.stamp,
            )
        })
        .collect();
    // Line items of #1001 carry the order's currency and time though only its first row has them.
    let first = ts("2024-03-01 09:00:00");
    assert_eq!(
        lines,
        [
            (
                "#1001",
                "Gift wrapping",
                "Gift wrapping",
                0.0,
                "EUR",
                1,
                first
            ),
            ("#1001", "JACKET-M", "Rain jacket", 19.9, "EUR", 1, first),
            ("#1001", "SHOE-42", "Trail shoes", 129.9, "EUR", 2, first),
            ("#1004", "SOCK-1", "Wool socks", 12.5, "EUR", 1, latest),
        ]
    );
    let noah = receiver(c, "Shop buyers", "noah.olsen@example.com").await;
    assert!(!noah.active && noah.activated == 0);
    assert_eq!(noah.orders.unwrap().len(), 1);
    // Both lines of the guest order, each with the reason.
    let rejected = rejects(&t, "shopify-orders", "shopify-orders");
    let guests: Vec<&str> = rejected
        .lines()
        .filter(|l| l.ends_with(",email,guest order without an email address"))
        .collect();
    assert_eq!(guests.len(), 2, "{rejected}");
    assert!(guests[0].starts_with("#1003,") && guests[1].starts_with("#1003,"));
}

#[tokio::test]
async fn a_second_run_of_every_preset_pipeline_writes_nothing() {
    for name in [
        "mailchimp",
        "brevo",
        "hubspot",
        "shopify-customers",
        "shopify-orders",
    ] {
        let t = TestServer::start().await;
        let pipeline = repo(&format!("pipelines/{name}.toml"));
        run_here(&t, &pipeline, &[]).await;
        let (_, report, stderr) = run_here(&t, &pipeline, &[]).await;
        for s in report["steps"].as_array().unwrap() {
            let load = &s["import"];
            for key in ["created", "updated", "failed"] {
                assert_eq!(load[key], 0, "{name} {key}\n{stderr}");
            }
            assert!(load["unchanged"].as_u64().unwrap() > 0, "{name}");
        }
    }
}

#[tokio::test]
async fn a_step_overrides_its_preset_key_by_key() {
    let t = TestServer::start().await;
    let dir = t.dir.path();
    std::fs::copy(
        repo("samples/presets/brevo-contacts.csv"),
        dir.join("contacts.csv"),
    )
    .unwrap();
    // The whole list consented: activate everyone not blocklisted; names in capitals;
    // no other attributes; a source of its own. Everything else stays the preset's.
    std::fs::write(
        dir.join("own.toml"),
        r#"[[import]]
preset = "brevo"
source = "contacts.csv"
group = "All"
create_group = true
other_columns = "attributes"
ignore_columns = ["EMAIL_BLACKLISTED", "SMS_BLACKLISTED", "ADDED_TIME", "MODIFIED_TIME", "DOUBLE_OPT-IN", "INTERESTS"]

[import.receiver]
activated = { column = "ADDED_TIME", only_if = { column = "EMAIL_BLACKLISTED", equals = "No" } }
source = { value = "Brevo 2024" }

[import.global_attributes]
lastname = { column = "LASTNAME", case = "upper" }
"#,
    )
    .unwrap();
    let (code, _, stderr) = run_here(&t, &dir.join("own.toml"), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let c = &t.client;
    let hugo = receiver(c, "All", "hugo.ivanov@example.com").await;
    assert!(hugo.active && hugo.activated == ts("2022-05-11 09:00:00"));
    assert_eq!(hugo.source, "Brevo 2024");
    assert_eq!(hugo.global_attributes["lastname"], "IVANOV");
    assert_eq!(hugo.global_attributes["firstname"], "Hugo");
    assert_eq!(
        hugo.attributes["city"], "Lyon",
        "other columns as group attributes"
    );
    assert!(!hugo.global_attributes.contains_key("city"));
    let iris = receiver(c, "All", "iris.jensen@example.org").await;
    assert!(!iris.active && iris.deactivated == ts("2023-09-09 09:09:09"));
}

/// Loads `toml` beside the Mailchimp samples and a plain CSV; returns its errors.
fn errors(toml: &str) -> Vec<String> {
    let subscribed = std::fs::read(repo(
        "samples/presets/mailchimp/subscribed_members_export_8d4f2a91c3.csv",
    ))
    .unwrap();
    crate::pipeline_errors::errors_beside(
        &[
            ("subscribed.csv", &subscribed),
            ("plain.csv", b"mail,name\na@example.com,A\n"),
        ],
        toml,
    )
}

#[test]
fn unknown_presets_options_and_foreign_files_are_positioned_errors() {
    assert_eq!(
        errors("[[import]]\npreset = \"mailchimps\"\nsource = \"subscribed.csv\"\ngroup = \"N\"\n"),
        [
            "p.toml:2:10: unknown preset \"mailchimps\"; valid presets: `brevo`, `hubspot`, `mailchimp`, `shopify-customers` or `shopify-orders`"
        ]
    );
    assert_eq!(
        errors(
            "[[import]]\npreset = \"mailchimp\"\nsource = \"subscribed.csv\"\ngroup = \"N\"\nunsubscribed = \"delete\"\nblacklisted = \"blacklist\"\n"
        ),
        [
            "p.toml:5:16: unknown unsubscribed \"delete\" for the mailchimp preset; valid values: `deactivate` or `blacklist`",
            "p.toml:6:1: unknown key `blacklisted` in [[import]] step 1; valid keys: `name`, `source`, `group`, `create_group`, `preset`, `dedupe`, `rejects`, `receiver`, `global_attributes`, `attributes`, `tags`, `orders`, `mode`, `removal`, `max_removal`, `fill_down`, `other_columns`, `ignore_columns`, `json_attributes`, `date_format`, `ambiguous`, `null_values`, `rejects_bom`, `update`, `empty`, `limit` or `unsubscribed`",
        ]
    );
    assert_eq!(
        errors("[[import]]\npreset = \"hubspot\"\nsource = \"plain.csv\"\ngroup = \"N\"\n"),
        [
            "p.toml:2:10: the source has no column \"Email\", where the hubspot preset reads the address (is it a HubSpot contacts export?); its columns: `mail` or `name`; or map the address yourself: [import.receiver] email = \"…\""
        ]
    );
    // Mapping the address itself makes any file fit; the step's own columns are checked as ever.
    assert_eq!(
        errors(
            "[[import]]\npreset = \"hubspot\"\nsource = \"plain.csv\"\ngroup = \"N\"\n[import.receiver]\nemail = \"mail\"\n[import.global_attributes]\nname = \"Name\"\n"
        ),
        [
            "p.toml:8:8: the source has no column \"Name\" (did you mean \"name\"?); its columns: `mail` or `name`"
        ]
    );
}

#[test]
fn date_format_reads_an_exports_regional_dates_for_every_mapping_of_the_step() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("contacts.csv"),
        "EMAIL;DOUBLE_OPT-IN;EMAIL_BLACKLISTED;ADDED_TIME;MODIFIED_TIME\nr@example.com;Yes;No;01-02-2024 10:00;03-02-2024 11:00\nq@example.com;No;Yes;05-06-2023 08:30;07-06-2023 09:45\n",
    )
    .unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        "[[import]]\npreset = \"brevo\"\nsource = \"contacts.csv\"\ngroup = \"N\"\ndate_format = \"%d-%m-%Y %H:%M\"\n",
    )
    .unwrap();
    let p = pipeline::load(&path).unwrap();
    let pipeline::Step::Import(step) = &p.steps[0] else {
        panic!("an import step");
    };
    let prepared =
        listpipe::prepare::prepare_import(step, &p.base_dir, listpipe::prepare::Budget::default())
            .unwrap();
    assert_eq!(prepared.summary.stats.rejected_total(), 0);
    let rows = listpipe::prepare::PreparedRows::new(step, &prepared.chunk.frame).unwrap();
    let r = rows.input(0, None);
    assert_eq!(r.registered, Some(ts("2024-02-01 10:00:00")));
    assert_eq!(r.activated, r.registered);
    let q = rows.input(1, None);
    assert_eq!(
        (q.activated, q.deactivated),
        (None, Some(ts("2023-06-07 09:45:00")))
    );
}

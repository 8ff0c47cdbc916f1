//! Every key the pipeline parser accepts has an effect, or is refused where
//! it would have none. One row per (position, key): a pipeline using it and
//! the effect asserted, in what `check` shows (the bodies it would send, the
//! counts, the rejects), in the step the parser builds (for what only a run
//! against a target shows: target settings, mirror mode, exports), or in the
//! positioned error refusing it. The table must cover
//! `listpipe::pipeline::ACCEPTED_KEYS`: a new key without a row fails here.

use crate::import::listpipe;
use crate::pipeline_errors::errors_beside;
use listpipe::pipeline;

/// Rows 2..5: a duplicate of row 2 (row 3), empty cells (row 4), no address (row 5).
const IN_CSV: &str = "email,name,joined,score,tags,order,price,gender,flag\n\
A@Example.com,anna,01.02.2024,7,x;y,O1,\"1,50\",m,yes\n\
a@example.com,Anne,,8,,O2,2,f,no\n\
b@example.com,  bob  ,,,z,O3,3,m,\n\
,carl,,,,,,,\n";

const FILES: &[(&str, &[u8])] = &[
    ("in.csv", IN_CSV.as_bytes()),
    ("in.data", IN_CSV.as_bytes()),
    ("in2.csv", b"email,name\ne@example.com,eve\n"),
    ("hr.csv", b"exported 2024\nemail,name\ne@example.com,eve\n"),
    ("short.csv", b"email,name\nq@example.com\n"),
    ("orders.csv", b"mail,no\na@example.com,X9\n"),
    ("orders2.csv", b"mail,no,qty\na@example.com,X9,many\n"),
    (
        "hub.csv",
        b"Record ID,Email,Create Date\n1,h@example.com,2024-01-01 10:00\n",
    ),
];

/// `2024-02-01` in Unix seconds.
const FEB_1: &str = "1706745600";
/// `2024-02-01` 00:00 in Berlin (UTC+1) in Unix seconds.
const FEB_1_BERLIN: &str = "1706742000";

enum Effect {
    /// `check` prints this.
    Shows(&'static str),
    /// The line of `check` starting with the first text holds the second.
    Line(&'static str, String),
    /// The line of `check` starting with the first text lacks the second.
    Lacks(&'static str, &'static str),
    /// The step's rejects file holds this.
    Rejects(&'static str),
    /// The parsed pipeline holds this (what only a run shows).
    Parsed(&'static str),
    /// The file is refused with this message.
    Refused(&'static str),
}
use Effect::*;

const STEP: &str = "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\n";
const EMAIL: &str = "[import.receiver]\nemail = \"email\"\n";

fn import(step_keys: &str, tables: &str) -> String {
    format!("{STEP}{step_keys}{EMAIL}{tables}")
}
fn receiver(fields: &str) -> String {
    format!("{STEP}{EMAIL}{fields}\n")
}
fn globals(attrs: &str) -> String {
    format!("{STEP}{EMAIL}[import.global_attributes]\n{attrs}\n")
}
fn tags(keys: &str) -> String {
    format!("{STEP}{EMAIL}[import.tags]\n{keys}\n")
}
fn orders(keys: &str) -> String {
    format!("{STEP}{EMAIL}[import.orders]\n{keys}\n")
}
fn email(mapping: &str) -> String {
    format!("{STEP}[import.receiver]\nemail = {{ column = \"email\", {mapping} }}\n")
}
fn blacklist(keys: &str) -> String {
    format!("[[blacklist]]\nsource = \"in.csv\"\nemail = \"email\"\n{keys}\n")
}
fn export(keys: &str) -> String {
    format!("[[export]]\ngroup = \"News\"\nout = \"o.csv\"\n{keys}\n")
}
fn row(n: u8, has: &str) -> Effect {
    let prefix = match n {
        2 => "  row 2: ",
        3 => "  row 3: ",
        _ => "  row 4: ",
    };
    Line(prefix, has.to_string())
}

fn table() -> Vec<(&'static str, &'static str, String, Effect)> {
    let by = |f: &str| format!("\"{f}\":{FEB_1}");
    vec![
        ("pipeline", "target", format!("[target]\nretries = 2\n{}", import("", "")), Parsed("retries: 2")),
        ("pipeline", "timezone", format!("timezone = \"Europe/Berlin\"\n{}", receiver("registered = { column = \"joined\", format = \"%d.%m.%Y\" }")), row(2, &format!("\"registered\":{FEB_1_BERLIN}"))),
        ("pipeline", "import", import("", ""), Shows("[import-1] import into group \"News\"")),
        ("pipeline", "blacklist", blacklist(""), Shows("[blacklist-1] blacklist\n")),
        ("pipeline", "export", export(""), Shows("export to o.csv (csv)")),
        ("pipeline", "metrics", format!("[metrics]\npushgateway = \"http://pg:9091\"\n{}", import("", "")), Parsed("pushgateway: Some(\"http://pg:9091\")")),
        ("pipeline", "report", format!("[report]\nhtml = \"page.html\"\n{}", import("", "")), Parsed("page.html\") }")),
        // [report]
        ("report", "html", format!("[report]\nhtml = \"out/page.html\"\n{}", import("", "")), Parsed("out/page.html\") }")),
        // [metrics]
        ("metrics", "file", format!("[metrics]\nfile = \"m.prom\"\n{}", import("", "")), Parsed("m.prom\"), pushgateway: None")),
        ("metrics", "pushgateway", format!("[metrics]\npushgateway = \"http://pg:9091\"\n{}", import("", "")), Parsed("Metrics { file: None, pushgateway: Some(\"http://pg:9091\") }")),
        ("metrics", "pushgateway", format!("[metrics]\npushgateway = \"pg:9091\"\n{}", import("", "")), Refused("p.toml:2:15: `pushgateway` in [metrics] must be an http:// or https:// address, not \"pg:9091\"")),
        // [target]
        ("target", "url", format!("[target]\nurl = \"https://api.example.com\"\n{}", import("", "")), Parsed("Url(\"https://api.example.com\")")),
        ("target", "token_env", format!("[target]\ntoken_env = \"MY_TOKEN\"\n{}", import("", "")), Parsed("token_env: Some(\"MY_TOKEN\")")),
        ("target", "credentials", format!("[target]\ncredentials = \"c.json\"\n{}", import("", "")), Parsed("url: FromCredentials")),
        ("target", "database", format!("[target]\ndatabase = \"my.db\"\n{}", import("", "")), Parsed("database: \"my.db\"")),
        ("target", "database", format!("[target]\nurl = \"https://api.example.com\"\ndatabase = \"my.db\"\n{}", import("", "")), Refused("p.toml:3:12: `database` is the built-in target's file, and `url` names another target; remove it, or set url = \"builtin\"")),
        ("target", "concurrency", format!("[target]\nconcurrency = 3\n{}", import("", "")), Parsed("concurrency: 3")),
        ("target", "concurrency", format!("[target]\nconcurrency = \"adaptive\"\n{}", import("", "")), Parsed("concurrency: \"adaptive\"")),
        ("target", "concurrency", import("", ""), Parsed("concurrency: \"adaptive\"")),
        ("target", "concurrency", format!("[target]\nconcurrency = \"fast\"\n{}", import("", "")), Refused("p.toml:2:15: `concurrency` in [target] must be \"adaptive\" or a whole number from 1 to 1024, not \"fast\"")),
        ("target", "max_requests_per_second", format!("[target]\nmax_requests_per_second = 5\n{}", import("", "")), Parsed("max_requests_per_second: Some(5)")),
        ("target", "max_requests_per_second", format!("[target]\nmax_requests_per_second = 0\n{}", import("", "")), Refused("p.toml:2:27: `max_requests_per_second` in [target] must be a whole number from 1 to 100000")),
        ("target", "timeout_secs", format!("[target]\ntimeout_secs = 9\n{}", import("", "")), Parsed("timeout_secs: 9")),
        ("target", "retries", format!("[target]\nretries = 2\n{}", import("", "")), Parsed("retries: 2")),
        ("target", "max_outage_secs", format!("[target]\nmax_outage_secs = 30\n{}", import("", "")), Parsed("max_outage_secs: 30")),
        ("target", "max_outage_secs", format!("[target]\nmax_outage_secs = 0\n{}", import("", "")), Refused("p.toml:2:19: `max_outage_secs` in [target] must be a whole number from 1 to 86400")),
        // [[import]]
        ("import", "name", import("name = \"people\"\n", ""), Shows("[people] import")),
        ("import", "source", import("", ""), Shows("4 rows read")),
        ("import", "group", "[[import]]\nsource = \"in.csv\"\ngroup = \"Other\"\n[import.receiver]\nemail = \"email\"\n".into(), Shows("import into group \"Other\"")),
        ("import", "create_group", import("create_group = true\n", ""), Parsed("create_group: true")),
        ("import", "preset", "[[import]]\npreset = \"hubspot\"\nsource = \"hub.csv\"\ngroup = \"CRM\"\n".into(), Shows("\"source\":\"HubSpot\"")),
        ("import", "dedupe", import("dedupe = \"last\"\n", ""), row(3, "\"email\":\"a@example.com\"")),
        ("import", "rejects", import("rejects = \"bad.csv\"\n", ""), Shows("rejects written to bad.csv")),
        ("import", "receiver", import("", ""), row(2, "{\"email\":\"a@example.com\"")),
        ("import", "global_attributes", globals("firstname = \"name\""), row(2, "\"global_attributes\":{\"firstname\":\"anna\"}")),
        ("import", "attributes", import("", "[import.attributes]\nsize = \"score\"\n"), row(2, "\"attributes\":{\"size\":\"7\"}")),
        ("import", "tags", tags("columns = \"tags\""), row(2, "\"tags\":[\"x_y\"]")),
        ("import", "orders", orders("order_id = \"order\""), row(2, "\"order_id\":\"O1\"")),
        ("import", "mode", import("mode = \"mirror\"\n", ""), Parsed("mirror: Some(")),
        ("import", "removal", import("mode = \"mirror\"\nremoval = \"delete\"\n", ""), Parsed("removal: Delete")),
        ("import", "max_removal", import("mode = \"mirror\"\nmax_removal = \"20%\"\n", ""), Parsed("max_share: 0.2")),
        ("import", "fill_down", import("fill_down = { within = \"gender\", columns = [\"score\"] }\n", "[import.global_attributes]\nscore = \"score\"\n"), row(4, "\"score\":\"7\"")),
        ("import", "other_columns", import("other_columns = \"global_attributes\"\n", ""), row(2, "\"flag\":\"yes\"")),
        ("import", "ignore_columns", import("other_columns = \"global_attributes\"\nignore_columns = [\"flag\"]\n", ""), Lacks("  row 2: ", "\"flag\"")),
        ("import", "ignore_columns", import("ignore_columns = [\"flag\"]\n", ""), Refused("p.toml:4:18: `ignore_columns` has no effect without `other_columns`: it names columns that `other_columns` should leave out; add other_columns = `global_attributes` or `attributes` or remove it")),
        ("import", "json_attributes", import("json_attributes = \"flag\"\n", ""), Rejects("\"\"yes\"\" is not a JSON object")),
        ("import", "null_values", import("null_values = [\"anna\"]\n", "[import.global_attributes]\nn = \"name\"\n"), Lacks("  row 2: ", "global_attributes")),
        ("import", "rejects_bom", import("rejects_bom = true\n", ""), Rejects("\u{feff}")),
        ("import", "date_format", import("date_format = \"%d.%m.%Y\"\n", "registered = \"joined\"\n"), row(2, &by("registered"))),
        ("import", "ambiguous", import("date_format = [\"%d.%m.%Y\", \"%m.%d.%Y\"]\nambiguous = \"first\"\n", "registered = \"joined\"\n"), row(2, &by("registered"))),
        ("import", "ambiguous", import("date_format = \"%d.%m.%Y\"\nambiguous = \"first\"\n", "registered = \"joined\"\n"), Refused("p.toml:5:13: `ambiguous` decides between the formats of a `date_format` list, and the step lists fewer than two; list them (date_format = [\"%d/%m/%Y\", \"%m/%d/%Y\"]) or remove it")),
        ("import", "update", import("update = \"never\"\n", "[import.global_attributes]\nn = \"name\"\n"), Shows("write policies: n (update = never)")),
        ("import", "empty", import("empty = \"clear\"\n", "source = \"name\"\n"), Shows("write policies: source (empty = clear)")),
        ("import", "empty", import("empty = \"clear\"\n", "source = \"name\"\npoints = \"score\"\n"), Lacks("  write policies: ", "points")),
        ("import", "limit", import("limit = 1\n", ""), Shows("limited to 1 of 2 receivers (limit)")),
        ("import", "limit", import("mode = \"mirror\"\nlimit = 1\n", ""), Refused("p.toml:5:9: `limit` writes only the first receivers of the source, and mirror mode removes every receiver the source lacks: with a limit it would remove all the others; remove `limit` (or `--limit`), or run this step without mode = \"mirror\"")),
        // [import.receiver]
        ("import.receiver", "email", import("", ""), row(2, "\"email\":\"a@example.com\"")),
        ("import.receiver", "registered", receiver("registered = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("registered"))),
        ("import.receiver", "activated", receiver("activated = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("activated"))),
        ("import.receiver", "deactivated", receiver("deactivated = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("deactivated"))),
        ("import.receiver", "imported", receiver("imported = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("imported"))),
        ("import.receiver", "bounced", receiver("bounced = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("bounced"))),
        ("import.receiver", "source", receiver("source = { value = \"shop\" }"), row(2, "\"source\":\"shop\"")),
        ("import.receiver", "points", receiver("points = \"score\""), row(2, "\"points\":7")),
        ("import.receiver", "last_ip", receiver("last_ip = { value = \"10.0.0.1\" }"), row(2, "\"last_ip\":\"10.0.0.1\"")),
        ("import.receiver", "last_location", receiver("last_location = { value = \"Berlin\" }"), row(2, "\"last_location\":\"Berlin\"")),
        ("import.receiver", "last_client", receiver("last_client = { value = \"Thunderbird\" }"), row(2, "\"last_client\":\"Thunderbird\"")),
        // The address's mapping
        ("receiver email", "column", email("trim = true"), row(2, "\"email\":\"a@example.com\"")),
        ("receiver email", "value", format!("{STEP}[import.receiver]\nemail = {{ value = \"fixed@example.com\" }}\n"), row(2, "\"email\":\"fixed@example.com\"")),
        ("receiver email", "trim", email("trim = false"), Refused("p.toml:5:36: `trim = false` has no effect on `email`: an address is always trimmed and lower-cased before it is checked; remove it (`trim_chars` strips other characters)")),
        ("receiver email", "trim_chars", email("trim_chars = \"A\""), Shows("    invalid email: 1")),
        ("receiver email", "case", email("case = \"keep\""), Refused("p.toml:5:36: `case` has no effect on `email`: an address is always lower-cased; remove it")),
        ("receiver email", "map", email("map = { \"b@example.com\" = \"c@example.com\" }"), row(4, "\"email\":\"c@example.com\"")),
        ("receiver email", "default", email("default = \"d@example.com\""), Shows("\"email\":\"d@example.com\"")),
        ("receiver email", "format", email("format = \"%d.%m.%Y\""), Refused("p.toml:5:38: `format` reads dates and times, and `email` is an address; remove it (an attribute holding dates takes type = \"date\")")),
        ("receiver email", "decimal", email("decimal = \",\""), Refused("p.toml:5:39: `decimal` reads numbers with decimals (type = \"number\", an order's price), and `email` is an address; remove it")),
        ("receiver email", "only_if", email("only_if = { column = \"flag\", equals = \"yes\" }"), Shows("    missing email: 3")),
        ("receiver email", "missing_reason", email("missing_reason = \"no address given\""), Rejects("no address given")),
        ("receiver email", "null_values", email("null_values = [\"b@example.com\"]"), Shows("    missing email: 2")),
        ("receiver email", "allow", email("allow = [\"ip_literal\"]"), Parsed("email_rules: Rules { quoted_local: false, ip_literal: true, utf8_local: false }")),
        ("receiver email", "allow", email("allow = [\"ip\"]"), Refused("p.toml:5:38: unknown `allow` \"ip\"; valid values: `quoted_local`, `ip_literal` or `utf8_local`")),
        // Any other receiver field's mapping
        ("receiver field", "column", receiver("source = { column = \"name\" }"), row(2, "\"source\":\"anna\"")),
        ("receiver field", "value", receiver("source = { value = \"shop\" }"), row(2, "\"source\":\"shop\"")),
        ("receiver field", "trim", receiver("source = { column = \"name\", trim = false }"), row(4, "\"source\":\"  bob  \"")),
        ("receiver field", "trim_chars", receiver("source = { column = \"name\", trim_chars = \"a\" }"), row(2, "\"source\":\"nn\"")),
        ("receiver field", "case", receiver("source = { column = \"name\", case = \"upper\" }"), row(2, "\"source\":\"ANNA\"")),
        ("receiver field", "map", receiver("source = { column = \"name\", map = { anna = \"Ann\" } }"), row(2, "\"source\":\"Ann\"")),
        ("receiver field", "default", receiver("source = { column = \"flag\", default = \"unknown\" }"), row(4, "\"source\":\"unknown\"")),
        ("receiver field", "format", receiver("registered = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("registered"))),
        ("receiver field", "format", receiver("source = { column = \"name\", format = \"%d.%m.%Y\" }"), Refused("p.toml:6:38: `format` reads dates and times, and `source` is text; remove it (an attribute holding dates takes type = \"date\")")),
        ("receiver field", "ambiguous", receiver("registered = { column = \"joined\", format = [\"%d.%m.%Y\", \"%m.%d.%Y\"], ambiguous = \"first\" }"), row(2, &by("registered"))),
        ("receiver field", "ambiguous", receiver("registered = { column = \"joined\", format = [\"%d.%m.%Y\", \"%m.%d.%Y\"] }"), Rejects("\"\"01.02.2024\"\" is ambiguous: 2024-02-01 with %d.%m.%Y, 2024-01-02 with %m.%d.%Y; list the format that wins first and set ambiguous = \"\"first\"\"")),
        ("receiver field", "timezone", receiver("registered = { column = \"joined\", format = \"%d.%m.%Y\", timezone = \"Europe/Berlin\" }"), row(2, &format!("\"registered\":{FEB_1_BERLIN}"))),
        ("receiver field", "timezone", receiver("source = { column = \"name\", timezone = \"Europe/Berlin\" }"), Refused("p.toml:6:40: `timezone` reads times, and `source` is text; remove it")),
        ("receiver field", "decimal", receiver("points = { column = \"score\", decimal = \",\" }"), Refused("p.toml:6:40: `decimal` reads numbers with decimals (type = \"number\", an order's price), and `points` is a whole number; remove it")),
        ("receiver field", "null_values", receiver("source = { column = \"name\", null_values = [\"ANNA\"] }"), Lacks("  row 2: ", "\"source\"")),
        ("receiver field", "only_if", receiver("source = { value = \"x\", only_if = { column = \"flag\", equals = \"yes\" } }"), Lacks("  row 4: ", "\"source\"")),
        ("receiver field", "update", receiver("source = { column = \"name\", update = \"if_empty\" }"), Shows("write policies: source (update = if_empty)")),
        ("receiver field", "empty", receiver("source = { column = \"name\", empty = \"clear\" }"), Shows("write policies: source (empty = clear)")),
        ("receiver field", "empty", receiver("points = { column = \"score\", empty = \"clear\" }"), Refused("p.toml:6:38: `empty = \"clear\"` cannot apply to `points`: an empty cell clears text only (attributes, `source`, `last_ip`, `last_location`, `last_client`); remove it")),
        // Attributes
        ("attribute", "column", globals("n = { column = \"name\" }"), row(2, "\"n\":\"anna\"")),
        ("attribute", "value", globals("plan = { value = \"gold\" }"), row(2, "\"plan\":\"gold\"")),
        ("attribute", "type", globals("birthday = { column = \"joined\", type = \"date\", format = \"%d.%m.%Y\" }"), row(2, "\"birthday\":\"2024-02-01\"")),
        ("attribute", "trim", globals("n = { column = \"name\", trim = false }"), row(4, "\"n\":\"  bob  \"")),
        ("attribute", "trim_chars", globals("n = { column = \"name\", trim_chars = \"a\" }"), row(2, "\"n\":\"nn\"")),
        ("attribute", "case", globals("n = { column = \"name\", case = \"title\" }"), row(2, "\"n\":\"Anna\"")),
        ("attribute", "map", globals("n = { column = \"name\", map = { anna = \"Ann\" } }"), row(2, "\"n\":\"Ann\"")),
        ("attribute", "default", globals("n = { column = \"flag\", default = \"none\" }"), row(4, "\"n\":\"none\"")),
        ("attribute", "format", globals("d = { column = \"joined\", type = \"date\", format = \"%d.%m.%Y\" }"), row(2, "\"d\":\"2024-02-01\"")),
        ("attribute", "ambiguous", globals("d = { column = \"joined\", type = \"date\", format = [\"%m.%d.%Y\", \"%d.%m.%Y\"], ambiguous = \"first\" }"), row(2, "\"d\":\"2024-01-02\"")),
        ("attribute", "timezone", globals("d = { column = \"joined\", type = \"date\", timezone = \"Europe/Berlin\" }"), Refused("p.toml:7:52: `timezone` has no effect on `d`: a date is a calendar date, read as written; remove it")),
        ("attribute", "decimal", globals("p = { column = \"price\", type = \"number\", decimal = \",\" }"), row(2, "\"p\":\"1.50\"")),
        ("attribute", "only_if", globals("n = { column = \"name\", only_if = { column = \"flag\", equals = \"yes\" } }"), Lacks("  row 4: ", "global_attributes")),
        ("attribute", "null_values", globals("n = { column = \"name\", null_values = [\"anna\"] }"), Lacks("  row 2: ", "global_attributes")),
        ("attribute", "update", globals("n = { column = \"name\", update = \"never\" }"), Shows("write policies: n (update = never)")),
        ("attribute", "empty", globals("n = { column = \"name\", empty = \"clear\" }"), Shows("write policies: n (empty = clear)")),
        // [import.tags]
        ("tags", "columns", tags("columns = \"tags\""), row(2, "\"tags\":[\"x_y\"]")),
        ("tags", "separator", tags("columns = \"tags\"\nseparator = \";\""), row(2, "\"tags\":[\"x\",\"y\"]")),
        ("tags", "separator", tags("fixed = [\"vip\"]\nseparator = \";\""), Refused("p.toml:8:13: `separator` splits the cells of the tag `columns`, and the tags table names none; add `columns` or remove it")),
        ("tags", "fixed", tags("fixed = [\"vip\"]"), row(2, "\"tags\":[\"vip\"]")),
        ("tags", "origin", tags("columns = \"tags\"\nseparator = \";\"\norigin = \"shop\""), row(2, "\"shop.x\"")),
        ("tags", "separator", tags("columns = \"tags\"\nseparator = [\";\", \"y\"]"), row(2, "\"tags\":[\"x\"]")),
        ("tags", "trim_start", tags("columns = \"tags\"\nseparator = \";\"\ntrim_start = \"x\""), row(2, "\"tags\":[\"y\"]")),
        ("tags", "map", tags("columns = \"tags\"\nseparator = \";\"\nmap = { x = \"ex\" }"), row(2, "\"tags\":[\"ex\",\"y\"]")),
        // [import.orders]
        ("orders", "order_id", orders("order_id = \"order\""), row(2, "\"order_id\":\"O1\"")),
        ("orders", "product_id", orders("order_id = \"order\"\nproduct_id = \"name\""), row(2, "\"product_id\":\"anna\"")),
        ("orders", "product", orders("order_id = \"order\"\nproduct = \"name\""), row(2, "\"product\":\"anna\"")),
        ("orders", "price", orders("order_id = \"order\"\nprice = { column = \"price\", decimal = \",\" }"), row(2, "\"price\":1.5")),
        ("orders", "currency", orders("order_id = \"order\"\ncurrency = { value = \"EUR\" }"), row(2, "\"currency\":\"EUR\"")),
        ("orders", "quantity", orders("order_id = \"order\"\nquantity = \"score\""), row(2, "\"quantity\":7")),
        ("orders", "mailing_id", orders("order_id = \"order\"\nmailing_id = { value = \"m1\" }"), row(2, "\"mailing_id\":\"m1\"")),
        ("orders", "stamp", orders("order_id = \"order\"\nstamp = { column = \"joined\", format = \"%d.%m.%Y\" }"), row(2, &by("stamp"))),
        ("orders", "source", orders("source = \"orders.csv\"\nemail = \"mail\"\norder_id = \"no\""), row(2, "\"order_id\":\"X9\"")),
        ("orders", "email", orders("source = \"orders.csv\"\nemail = \"mail\"\norder_id = \"no\""), row(2, "\"order_id\":\"X9\"")),
        ("orders", "rejects", orders("source = \"orders2.csv\"\nemail = \"mail\"\norder_id = \"no\"\nquantity = \"qty\"\nrejects = \"ord.csv\""), Shows("rejects written to ord.csv")),
        ("orders", "duplicate_lines", orders("order_id = { value = \"O\" }\nquantity = \"score\"\nduplicate_lines = \"last\""), row(2, "\"quantity\":8")),
        ("orders", "rejects", orders("order_id = \"order\"\nrejects = \"ord.csv\""), Refused("p.toml:8:11: `rejects` in the orders table is for orders from a second `source`; a bad order on a receiver row rejects that row, into the step's own rejects file; remove it")),
        // fill_down
        ("fill_down", "within", import("fill_down = { within = \"gender\", columns = [\"score\"] }\n", "[import.global_attributes]\nscore = \"score\"\n"), row(4, "\"score\":\"7\"")),
        ("fill_down", "columns", import("fill_down = { within = \"gender\", columns = [\"score\"] }\n", "[import.global_attributes]\nscore = \"score\"\n"), row(4, "\"score\":\"7\"")),
        // source = { ... }
        ("source", "path", "[[import]]\nsource = { path = \"in.csv\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Shows("4 rows read")),
        ("source", "paths", "[[import]]\nsource = { paths = [\"in.csv\", \"in2.csv\"] }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Shows("5 rows read")),
        ("source", "format", "[[import]]\nsource = { path = \"in.data\", format = \"csv\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Shows("4 rows read")),
        ("source", "delimiter", "[[import]]\nsource = { path = \"in.csv\", delimiter = \"|\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email,name,joined,score,tags,order,price,gender,flag\"\n".into(), Shows("    invalid email: 4")),
        ("source", "encoding", "[[import]]\nsource = { path = \"in.csv\", encoding = \"windows-1252\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Parsed("encoding: Some(Windows1252)")),
        ("source", "header_row", "[[import]]\nsource = { path = \"hr.csv\", header_row = 2 }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), row(3, "\"email\":\"e@example.com\"")),
        ("source", "header", "[[import]]\nsource = { path = \"in2.csv\", header = false }\ngroup = \"News\"\n[import.receiver]\nemail = \"column_1\"\n".into(), row(2, "\"email\":\"e@example.com\"")),
        ("source", "sheet", "[[import]]\nsource = { path = \"in.csv\", sheet = 2 }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Parsed("sheets: [Index(2)]")),
        ("source", "sheets", "[[import]]\nsource = { path = \"in.csv\", sheets = [\"a\", 2] }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Parsed("sheets: [Name(\"a\"), Index(2)]")),
        ("source", "pad_short_rows", "[[import]]\nsource = { path = \"short.csv\", pad_short_rows = true }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Shows("1 short row padded with empty fields")),
        ("source", "postgres", "[[import]]\nsource = { postgres = \"postgres://u:pw@127.0.0.1:1/db\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Refused("p.toml:2:10: `source` of [[import]] step 1 needs `query` (the SQL whose rows are the source, such as \"select * from subscribers\")")),
        ("source", "postgres_env", "[[import]]\nsource = { postgres_env = \"LISTPIPE_TEST_UNSET_URL\", query = \"select email\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Refused("p.toml:2:10: $LISTPIPE_TEST_UNSET_URL: the environment variable LISTPIPE_TEST_UNSET_URL (named by `postgres_env`) is not set; set it to the connection URL, postgres://user:password@host:port/database")),
        ("source", "query", "[[import]]\nsource = { path = \"in.csv\", query = \"select email\" }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Refused("p.toml:2:37: `source` of [[import]] step 1 has a `query` but no database; add postgres = \"postgres://user:password@host:port/database\" or postgres_env = \"VARIABLE\"")),
        ("source", "max_quoted_lines", "[[import]]\nsource = { path = \"in.csv\", max_quoted_lines = 5 }\ngroup = \"News\"\n[import.receiver]\nemail = \"email\"\n".into(), Parsed("max_quoted_lines: 5")),
        // only_if = { ... }
        ("only_if", "column", receiver("source = { value = \"x\", only_if = { column = \"flag\", equals = \"yes\" } }"), row(2, "\"source\":\"x\"")),
        ("only_if", "equals", receiver("source = { value = \"x\", only_if = { column = \"flag\", equals = \"yes\" } }"), Lacks("  row 4: ", "\"source\"")),
        ("only_if", "not_equals", receiver("source = { value = \"x\", only_if = { column = \"flag\", not_equals = \"yes\" } }"), Lacks("  row 2: ", "\"source\"")),
        ("only_if", "in_file", receiver("source = { value = \"x\", only_if = { column = \"flag\", in_file = false } }"), Lacks("  row 2: ", "\"source\"")),
        ("only_if", "any", receiver("source = { value = \"x\", only_if = { any = [{ column = \"flag\", equals = \"yes\" }] } }"), Lacks("  row 4: ", "\"source\"")),
        // [[blacklist]]
        ("blacklist", "name", blacklist("name = \"bl\""), Shows("[bl] blacklist")),
        ("blacklist", "source", blacklist(""), Shows("2 entries to send")),
        ("blacklist", "email", blacklist(""), Shows("  a@example.com \n")),
        ("blacklist", "comment", blacklist("comment = \"name\""), Shows("  a@example.com (anna)")),
        ("blacklist", "group", blacklist("group = \"News\""), Shows("blacklist of group \"News\"")),
        ("blacklist", "rejects", blacklist("rejects = \"blr.csv\""), Shows("rejects written to blr.csv")),
        ("blacklist", "only_if", blacklist("only_if = { column = \"flag\", equals = \"yes\" }"), Shows("1 entries to send")),
        ("blacklist", "null_values", blacklist("null_values = [\"A@example.com\"]"), Shows("1 entries to send")),
        ("blacklist", "rejects_bom", "[[blacklist]]\nname = \"import-1\"\nsource = \"in.csv\"\nemail = \"name\"\nrejects_bom = true\n".into(), Rejects("\u{feff}")),
        // [[export]]
        ("export", "name", export("name = \"ex\""), Shows("[ex] export to o.csv")),
        ("export", "group", export(""), Parsed("Group { group: Name(\"News\"), kind: All }")),
        ("export", "filter", export("filter = \"Dresden\""), Parsed("Filter { group: Name(\"News\"), filter: Name(\"Dresden\") }")),
        ("export", "rules", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]"), Parsed("Runtime {")),
        ("export", "operator", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]\noperator = \"OR\""), Parsed("operator: \"OR\"")),
        ("export", "activeonly", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]\nactiveonly = true"), Parsed("activeonly: true")),
        ("export", "blacklist", "[[export]]\nblacklist = true\nout = \"b.csv\"\n".into(), Parsed("what: Blacklist")),
        ("export", "type", export("type = \"active\""), Parsed("kind: Active")),
        ("export", "out", export(""), Shows("export to o.csv (csv)")),
        ("export", "format", "[[export]]\ngroup = \"News\"\nout = \"o.txt\"\nformat = \"jsonl\"\n".into(), Shows("export to o.txt (jsonl)")),
        ("export", "columns", export("columns = [\"email\"]"), Parsed("columns: Some([(\"email\", \"email\")])")),
        ("export", "tags_separator", export("tags_separator = \"|\""), Parsed("tags_separator: \"|\"")),
        ("export", "timestamps", export("timestamps = \"unix\""), Parsed("timestamps: Unix")),
        ("export", "timestamps", "[[export]]\ngroup = \"News\"\nout = \"o.parquet\"\ntimestamps = \"unix\"\n".into(), Refused("p.toml:4:14: `timestamps` has no effect on Parquet, which always writes a time as a TIMESTAMP column (milliseconds, UTC); remove it")),
        ("export", "delimiter", export("delimiter = \";\""), Parsed("delimiter: 59")),
        ("export", "delimiter", "[[export]]\ngroup = \"News\"\nout = \"o.xlsx\"\ndelimiter = \";\"\n".into(), Refused("p.toml:4:13: `delimiter` shapes CSV files, and this export writes xlsx; remove it, or write a .csv")),
        ("export", "encoding", export("encoding = \"windows-1252\""), Parsed("encoding: Windows1252")),
        ("export", "bom", export("bom = true"), Parsed("bom: true")),
        ("export", "quoting", export("quoting = \"always\""), Parsed("quoting: Always")),
        ("export", "orders_out", export("orders_out = \"ord.csv\""), Parsed("orders_out: Some(\"ord.csv\")")),
        ("export", "incremental", export("incremental = true"), Parsed("incremental: true")),
        ("export", "incremental", "[[export]]\nblacklist = true\nout = \"b.csv\"\nincremental = true\n".into(), Refused("p.toml:4:15: `incremental` needs receivers: a blacklist has no change times to follow")),
        ("export", "out", "[[export]]\ngroup = \"News\"\nout = \"o-{day}.csv\"\n".into(), Refused("p.toml:3:7: unknown placeholder \"{day}\" in \"o-{day}.csv\"; the placeholders are: {date} (the run's UTC date, YYYY-MM-DD), {run} (the run's start in UTC, YYYYMMDDTHHMMSSZ)")),
        ("export rule", "field", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]"), Parsed("field: \"email\"")),
        ("export rule", "logic", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]"), Parsed("logic: \"ends\"")),
        ("export rule", "condition", export("rules = [{ field = \"email\", logic = \"ends\", condition = \"x\" }]"), Parsed("condition: \"x\"")),
    ]
}

/// `check --preview 5` of `toml` beside the fixtures: stdout and stderr,
/// with the folder written `DIR`, and the rejects files' text.
fn check(toml: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in FILES {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let path = dir.path().join("p.toml");
    std::fs::write(&path, toml).unwrap();
    let out = listpipe(dir.path(), &["check", "p.toml", "--preview", "5"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace(&dir.path().display().to_string(), "DIR");
    let rejects =
        std::fs::read_to_string(dir.path().join(".listpipe/rejects/p/import-1.rejects.csv"))
            .unwrap_or_default();
    (text, rejects)
}

fn parsed(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in FILES {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let path = dir.path().join("p.toml");
    std::fs::write(&path, toml).unwrap();
    match pipeline::load(&path) {
        Ok(p) => format!("{:?}{:?}{:?}{:?}", p.target, p.metrics, p.report, p.steps),
        Err(e) => panic!("{toml}\n{e}"),
    }
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{text}"))
}

#[test]
fn every_accepted_key_has_an_effect_or_is_refused() {
    let rows = table();
    let mut failed = Vec::new();
    for (position, key, toml, effect) in &rows {
        let at = format!("{position} `{key}`:\n{toml}");
        let outcome = std::panic::catch_unwind(|| match effect {
            Shows(s) => {
                let (text, _) = check(toml);
                assert!(text.contains(s), "{at}\nexpected {s:?} in\n{text}");
            }
            Line(prefix, s) => {
                let (text, _) = check(toml);
                let l = line(&text, prefix);
                assert!(l.contains(s.as_str()), "{at}\nexpected {s:?} in\n{l}");
            }
            Lacks(prefix, s) => {
                let (text, _) = check(toml);
                let l = line(&text, prefix);
                assert!(!l.contains(s), "{at}\nexpected no {s:?} in\n{l}");
            }
            Rejects(s) => {
                let (_, rejects) = check(toml);
                assert!(rejects.contains(s), "{at}\nexpected {s:?} in\n{rejects}");
            }
            Parsed(s) => {
                let p = parsed(toml);
                assert!(p.contains(s), "{at}\nexpected {s:?} in\n{p}");
            }
            Refused(s) => {
                let errors = errors_beside(FILES, toml);
                assert_eq!(errors, [*s], "{at}");
            }
        });
        if outcome.is_err() {
            failed.push(format!("{position} `{key}`"));
        }
    }
    assert!(
        failed.is_empty(),
        "rows whose effect was not seen: {failed:?}"
    );
    // Every key the parser accepts, in every position, has a row.
    let mut missing = Vec::new();
    for (position, keys) in pipeline::ACCEPTED_KEYS {
        for key in *keys {
            if !rows.iter().any(|(p, k, _, _)| p == position && k == key) {
                missing.push(format!("{position} `{key}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys without a test of their effect: {missing:?}"
    );
}

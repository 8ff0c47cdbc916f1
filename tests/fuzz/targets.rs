//! The fuzz targets as plain functions of bytes, shared by the `cargo fuzz`
//! binaries (`fuzz_targets/*.rs`) and the bounded random-input test in
//! `tests/it/hostile.rs`. Each may return an error for bad input; a panic,
//! or a 500 from the server, is the bug they look for.

use std::path::PathBuf;
use std::sync::OnceLock;

/// A folder of this process and thread for the files a target writes
/// (the random-input test runs targets on several threads at once),
/// removed when the thread ends.
fn workdir() -> PathBuf {
    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    thread_local! {
        static DIR: Dir = {
            let dir = std::env::temp_dir().join(format!(
                "listpipe-fuzz-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ).replace(['(', ')'], ""));
            std::fs::create_dir_all(&dir).expect("fuzz work dir");
            Dir(dir)
        };
    }
    DIR.with(|d| d.0.clone())
}

/// A pipeline that maps every kind of value the prepare stage knows.
const PIPELINE: &str = r#"[[import]]
source = "in.FORMAT"
group = "News"
dedupe = "merge"
[import.receiver]
email = "email"
registered = { column = "joined", format = "%d.%m.%Y" }
points = "points"
[import.global_attributes]
firstname = { column = "name", case = "title" }
[import.tags]
columns = ["tags"]
separator = ","
origin = "Shop"
"#;

/// A header that matches [`PIPELINE`], put before the bytes when the first
/// byte is even, so most inputs get past the column check into prepare.
const HEADER: &[u8] = b"email,name,joined,points,tags\n";

/// The source stage and the prepare stage on one file of `format` (csv or xlsx).
pub(super) fn source_and_prepare(format: &str, data: &[u8]) {
    let dir = workdir();
    let file = dir.join(format!("in.{format}"));
    let mut bytes = Vec::with_capacity(data.len() + HEADER.len());
    if format == "csv" && data.first().is_some_and(|b| b % 2 == 0) {
        bytes.extend_from_slice(HEADER);
        bytes.extend_from_slice(&data[1..]);
    } else {
        bytes.extend_from_slice(data);
    }
    std::fs::write(&file, &bytes).expect("write source");
    let path = dir.join(format!("source-{format}.toml"));
    std::fs::write(&path, PIPELINE.replace("FORMAT", format)).expect("write pipeline");
    let Ok(pipeline) = listpipe::pipeline::load(&path) else {
        return;
    };
    for step in &pipeline.steps {
        if let listpipe::pipeline::Step::Import(s) = step {
            let _ = listpipe::prepare::prepare_import(
                s,
                &pipeline.base_dir,
                listpipe::prepare::Budget::default(),
            );
        }
    }
}

/// The pipeline-file parser on arbitrary text, beside a small CSV it may name.
pub(super) fn pipeline_file(data: &[u8]) {
    let dir = workdir();
    std::fs::write(dir.join("in.csv"), "email,name\na@example.com,Ann\n").expect("write csv");
    let path = dir.join("fuzz.toml");
    std::fs::write(&path, data).expect("write pipeline");
    if let Err(e) = listpipe::pipeline::load(&path) {
        assert!(!e.0.is_empty(), "an error names at least one problem");
    }
}

/// The content types a body arrives with.
const CONTENT_TYPES: &[Option<&str>] = &[
    None,
    Some("application/json"),
    Some("application/xml"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=XyZ"),
    Some("multipart/form-data"),
];

/// Request bodies: every reader, then the XML answer of what was read must
/// read back.
pub(super) fn request_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[pick as usize % CONTENT_TYPES.len()];
    let read = futures::executor::block_on(listpipe::server::wire::convert::body_to_json(
        content_type,
        body,
    ));
    if let Ok(value) = read {
        let xml = listpipe::server::wire::convert::json_to_xml(&value);
        let back = futures::executor::block_on(listpipe::server::wire::convert::body_to_json(
            Some("application/xml"),
            xml.as_bytes(),
        ));
        assert!(
            back.is_ok(),
            "our own XML answer must read back: {xml:?} {back:?}"
        );
    }
}

/// One built-in server for the process: its router, a token of its account.
struct Server {
    rt: tokio::runtime::Runtime,
    service: axum::Router,
    token: String,
}

fn server() -> &'static Server {
    use listpipe::server::{self, AppState, store};
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let db = workdir().join("server.db");
        let _ = std::fs::remove_file(&db);
        let st = store::Store::open(&db).expect("store");
        let token = rt
            .block_on(st.write(|c| {
                let (app, _) = store::accounts::create_account(c, "fuzz")?;
                store::groups::create(c, app.account, &listpipe::api::GroupInput::named("G"))?;
                store::accounts::issue_pair(c, app.account, app.id, 86_400)
            }))
            .expect("account")
            .access_token;
        let state = AppState {
            store: st,
            base_url: "http://127.0.0.1:1".into(),
            token_ttl: 3600,
            code_ttl: 600,
            rate_limit: None,
            faults: None,
            tokens: Default::default(),
            auth_failures: Default::default(),
            spec_only: false,
        };
        let service = server::app(state).layer(axum::middleware::from_fn(server::wire::normalize));
        Server { rt, service, token }
    })
}

const URI_UNSAFE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'|')
    .add(b'\\')
    .add(b'^')
    .add(b'[')
    .add(b']');

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH"];
const PREFIXES: &[&str] = &[
    "/v3/groups",
    "/v3/groups/1/receivers",
    "/v3/receivers",
    "/v3/attributes",
    "/v3/groups/1/filters",
    "/v3/blacklist",
    "/v3/",
    "/",
];

/// The whole request path of the built-in server: a path (suffixes,
/// ids, emails), a query string and a body, sent with a valid token.
/// `0xFF` bytes split the input into path, query and body.
pub(super) fn request(data: &[u8]) {
    use tower::ServiceExt;
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(3, |b| *b == 0xFF);
    // Bytes a URI cannot hold are percent-encoded, so that most inputs reach
    // the server rather than the URI parser; `%` itself stays as it is.
    let uri_part = |b: &[u8]| percent_encoding::percent_encode(b, URI_UNSAFE).to_string();
    let path = uri_part(parts.next().unwrap_or_default());
    let query = uri_part(parts.next().unwrap_or_default());
    let body = parts.next().unwrap_or_default().to_vec();
    let method = METHODS[pick as usize % METHODS.len()];
    let prefix = PREFIXES[(pick as usize / METHODS.len()) % PREFIXES.len()];
    let content_type = CONTENT_TYPES[(pick as usize / 40) % CONTENT_TYPES.len()];
    let uri = format!("{prefix}{path}?{query}");
    let s = server();
    let mut builder = axum::http::Request::builder()
        .method(method)
        .uri(uri.as_str())
        .header("authorization", format!("Bearer {}", s.token));
    if let Some(ct) = content_type {
        builder = builder.header("content-type", ct);
    }
    // The HTTP layer refuses URIs it cannot parse before we see them.
    let Ok(req) = builder.body(axum::body::Body::from(body)) else {
        return;
    };
    let status =
        s.rt.block_on(s.service.clone().oneshot(req))
            .expect("infallible")
            .status();
    assert!(
        !status.is_server_error(),
        "{method} {uri:?} answered {status}"
    );
}

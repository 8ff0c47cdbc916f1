//! `GET /v3/openapi.json` is made from the route table: every endpoint of
//! the spec is in it, and every operation in it answers (is routed).

use listpipe_testkit::TestServer;
use serde_json::Value;

/// Every operation of `api-v3.md` §4, as (method, path) with `{}` for parameters.
const SPEC: &[(&str, &str)] = &[
    ("get", "/v3/debug/exchange"),
    ("get", "/v3/debug/ttl"),
    ("get", "/v3/debug/validate"),
    ("get", "/v3/debug/whoami"),
    ("get", "/v3/clients"),
    ("get", "/v3/clients/{}"),
    ("get", "/v3/clients/domain/{}"),
    ("get", "/v3/clients/{}/plan"),
    ("get", "/v3/clients/{}/limits"),
    ("get", "/v3/clients/{}/invoiceaddress"),
    ("get", "/v3/clients/{}/nextinvoicedate"),
    ("get", "/v3/clients/{}/contingent"),
    ("get", "/v3/clients/{}/receivercount"),
    ("get", "/v3/clients/{}/activereceivercount"),
    ("get", "/v3/clients/{}/users"),
    ("get", "/v3/blacklist"),
    ("post", "/v3/blacklist"),
    ("put", "/v3/blacklist"),
    ("get", "/v3/blacklist/{}"),
    ("delete", "/v3/blacklist/{}"),
    ("post", "/v3/blacklist/batch"),
    ("post", "/v3/blacklist/validate"),
    ("get", "/v3/groups/{}/blacklist"),
    ("post", "/v3/groups/{}/blacklist"),
    ("delete", "/v3/groups/{}/blacklist/{}"),
    ("get", "/v3/groups"),
    ("post", "/v3/groups"),
    ("get", "/v3/groups/{}"),
    ("put", "/v3/groups/{}"),
    ("delete", "/v3/groups/{}"),
    ("get", "/v3/groups/{}/stats"),
    ("get", "/v3/groups/{}/advancedstats"),
    ("delete", "/v3/groups/{}/clear"),
    ("get", "/v3/forms"),
    ("get", "/v3/forms/{}"),
    ("delete", "/v3/forms/{}"),
    ("get", "/v3/groups/{}/forms"),
    ("get", "/v3/forms/{}/code"),
    ("post", "/v3/forms/{}/createfromtemplate/{}"),
    ("post", "/v3/forms/{}/send/{}"),
    ("get", "/v3/attributes"),
    ("post", "/v3/attributes"),
    ("get", "/v3/attributes/{}"),
    ("put", "/v3/attributes/{}"),
    ("delete", "/v3/attributes/{}"),
    ("get", "/v3/attributes/limits"),
    ("get", "/v3/groups/{}/attributes"),
    ("post", "/v3/groups/{}/attributes"),
    ("put", "/v3/groups/{}/attributes/{}"),
    ("delete", "/v3/groups/{}/attributes/{}"),
    ("get", "/v3/receivers/{}/attributes"),
    ("put", "/v3/groups/{}/receivers/{}/attributes/{}"),
    ("put", "/v3/receivers/{}/attributes/{}"),
    ("get", "/v3/groups/{}/filters"),
    ("post", "/v3/groups/{}/filters"),
    ("get", "/v3/groups/{}/filters/{}"),
    ("put", "/v3/groups/{}/filters/{}"),
    ("delete", "/v3/groups/{}/filters/{}"),
    ("get", "/v3/groups/{}/filters/{}/stats"),
    ("get", "/v3/groups/{}/filters/{}/count"),
    ("post", "/v3/receivers/filter"),
    ("get", "/v3/groups/{}/filters/{}/receivers"),
    ("get", "/v3/groups/{}/receivers"),
    ("post", "/v3/groups/{}/get_receivers"),
    ("post", "/v3/groups/{}/receivers"),
    ("get", "/v3/groups/{}/receivers/{}"),
    ("put", "/v3/groups/{}/receivers/{}"),
    ("delete", "/v3/groups/{}/receivers/{}"),
    ("get", "/v3/receivers/{}"),
    ("delete", "/v3/receivers/{}"),
    ("get", "/v3/receivers/tags"),
    ("get", "/v3/receivers/{}/tags"),
    ("post", "/v3/receivers/{}/tags"),
    ("post", "/v3/groups/{}/receivers/{}/tags"),
    ("post", "/oauth/token.php"),
];

fn normalise(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn the_openapi_document_lists_every_endpoint_of_the_spec() {
    let t = TestServer::start().await;
    let (http, base, token) = t.raw();
    let doc: Value = http
        .get(format!("{base}/v3/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    let paths = doc["paths"].as_object().unwrap();
    let documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(p, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.clone(), normalise(p)))
        })
        .collect();
    for (method, path) in SPEC {
        assert!(
            documented.contains(&(method.to_string(), path.to_string())),
            "{method} {path} is missing"
        );
    }
    // Every documented operation is routed: never a 404 "no such endpoint" or a 405.
    for (method, path) in &documented {
        let url = format!("{base}{}", path.replace("{}", "1"));
        let req = match method.as_str() {
            "get" => http.get(&url),
            "post" => http.post(&url),
            "put" => http.put(&url),
            _ => http.delete(&url),
        };
        let res = req.bearer_auth(&token).send().await.unwrap();
        let status = res.status().as_u16();
        let body = res.text().await.unwrap();
        assert!(
            status != 405 && !body.contains("no such endpoint"),
            "{method} {path}: {status} {body}"
        );
    }
}

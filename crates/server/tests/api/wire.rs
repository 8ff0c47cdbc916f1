//! Wire habits of real clients (docs/wire.md), at the HTTP level.

use listpipe_testkit::TestServer;
use serde_json::Value;

#[tokio::test]
async fn paths_with_json_suffixes_route_like_plain_ones() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    for path in [
        format!("/v3/groups/{}/receivers", g.id),
        format!("/v3/groups.json/{}/receivers", g.id),
        format!("/v3/groups.json/{}/receivers.json", g.id),
    ] {
        let res = http
            .get(format!("{base}{path}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    let me: Value = http
        .get(format!("{base}/v3/debug.json/whoami.json"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["id"], "1");
}

#[tokio::test]
async fn ids_are_strings_timestamps_integers_and_flags_booleans() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let r: Value = http
        .post(format!("{base}/v3/groups/{}/receivers", g.id))
        .bearer_auth(&token)
        .json(&serde_json::json!({"email": "a@example.com", "registered": "1262300400"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["id"].is_string() && r["group_id"].is_string(), "{r}");
    assert_eq!(r["registered"], 1262300400);
    assert_eq!(r["activated"], 0);
    assert_eq!(r["active"], false);
    let group: Value = http
        .get(format!("{base}/v3/groups/{}", g.id))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(group["locked"], false);
    assert!(group["stamp"].is_i64());
}

#[tokio::test]
async fn xml_is_accepted_and_produced() {
    let t = TestServer::start().await;
    let (http, base, token) = t.raw();
    let res = http
        .post(format!("{base}/v3/groups"))
        .bearer_auth(&token)
        .header("Content-Type", "application/xml")
        .header("Accept", "application/xml")
        .body("<?xml version=\"1.0\"?><group><name>Xml news</name><locked>true</locked></group>")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/xml")
    );
    let text = res.text().await.unwrap();
    assert!(
        text.contains("<response>")
            && text.contains("<name>Xml news</name>")
            && text.contains("<locked>true</locked>"),
        "{text}"
    );

    // `.xml` on the path asks for XML too; lists are repeated <item>s.
    let text = http
        .get(format!("{base}/v3/groups.xml"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("<response><item>") && text.contains("Xml news"),
        "{text}"
    );

    // Errors come as XML when XML was asked for.
    let text = http
        .get(format!("{base}/v3/groups/999.xml"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("<error><code>404</code>"), "{text}");
}

#[tokio::test]
async fn bodies_are_read_whatever_their_label() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let url = format!("{base}/v3/groups/{}/receivers", g.id);
    // JSON labelled as a form, and JSON with no content type.
    let labelled = http
        .post(&url)
        .bearer_auth(&token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(r#"{"email":"a@example.com"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(labelled.status(), 200);
    let unlabelled = http
        .post(&url)
        .bearer_auth(&token)
        .body(r#"{"postdata":{"email":"b@example.com"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(unlabelled.status(), 200);
    // PHP bracket form encoding.
    let form = http
        .post(&url)
        .bearer_auth(&token)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("email=c%40example.com&tags[]=vip&tags[]=shop.buyer&source=form")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    let r: Value = http
        .get(format!("{url}/c@example.com?detail=4"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["tags"], serde_json::json!(["shop.buyer", "vip"]));
    assert_eq!(r["source"], "form");
    // A GET carrying `[]` is fine.
    let res = http
        .get(&url)
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .body("[]")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn bad_input_is_a_400_with_the_error_body_never_a_500() {
    let t = TestServer::start().await;
    let g = t.group("News").await;
    let (http, base, token) = t.raw();
    let url = format!("{base}/v3/groups/{}/receivers", g.id);
    for body in [
        r#"{"email":"#,
        r#"{"email":["a"]}"#,
        r#"{"email":"a@example.com","registered":"yesterday"}"#,
        "<a><b>",
        "<!DOCTYPE x [<!ENTITY e \"boom\">]><a>&e;</a>",
    ] {
        let res = http
            .post(&url)
            .bearer_auth(&token)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{body}");
        let err: Value = res.json().await.unwrap();
        assert_eq!(err["error"]["code"], 400, "{body}");
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Bad Request"),
            "{err}"
        );
    }
    let res = http
        .get(format!("{base}/v3/groups/not-a-number"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"]["message"],
        "Not Found: invalid group"
    );
    let res = http
        .get(format!("{base}/v3/no/such/thing"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap()["error"]["code"], 404);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let t = TestServer::start().await;
    let (http, base, token) = t.raw();
    let huge = format!(
        "{{\"name\":\"{}\"}}",
        "x".repeat(listpipe_server::wire::MAX_BODY_BYTES)
    );
    let res = http
        .post(format!("{base}/v3/groups"))
        .bearer_auth(&token)
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    assert_eq!(res.json::<Value>().await.unwrap()["error"]["code"], 413);
}

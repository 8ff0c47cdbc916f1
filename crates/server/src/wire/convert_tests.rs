//! Tests of the body decoding and XML rendering rules (`convert.rs`).
use super::*;
use serde_json::json;

const FORM: &str = "application/x-www-form-urlencoded";
const XML: &str = "application/xml";

fn read(content_type: &str, body: impl AsRef<[u8]>) -> Result<Value, BodyError> {
    futures::executor::block_on(body_to_json(Some(content_type), body.as_ref()))
}

fn error(content_type: &str, body: impl AsRef<[u8]>) -> String {
    read(content_type, body).unwrap_err().0
}

/// One case a line: `body => expected JSON`.
fn check(content_type: &str, cases: &str) {
    for line in cases.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let (body, want) = line.split_once(" => ").unwrap();
        let want: Value = serde_json::from_str(want).unwrap();
        assert_eq!(read(content_type, body), Ok(want), "{line}");
    }
}

#[test]
fn empty_whitespace_and_empty_array_bodies_are_null() {
    for body in ["", " \r\n\t", "[]", " [] \n", "\u{FEFF}", "\u{FEFF}[]"] {
        assert_eq!(read("application/json", body), Ok(Value::Null), "{body:?}");
    }
}

#[test]
fn json_is_parsed_as_json_whatever_the_label() {
    check(FORM, r#"{"a":[1,true,null]} => {"a":[1,true,null]}"#);
    check("text/plain", "[1, 2] => [1,2]");
    check("multipart/form-data; boundary=B", "[[]] => [[]]");
}

#[test]
fn a_utf8_bom_is_skipped() {
    assert_eq!(read(FORM, "\u{FEFF} {\"a\":1}"), Ok(json!({"a": 1})));
    assert_eq!(read(FORM, "\u{FEFF}<r><a>1</a></r>"), Ok(json!({"a": "1"})));
    assert_eq!(read(FORM, "\u{FEFF}a=1"), Ok(json!({"a": "1"})));
}

#[test]
fn invalid_json_says_where() {
    let err = error(FORM, "{\"a\":\n  tru}");
    assert!(
        err.starts_with("invalid JSON: ") && err.contains("line 2 column"),
        "{err}"
    );
    assert!(error(FORM, "[".repeat(100_000)).contains("recursion limit"));
}

#[test]
fn xml_elements_become_json_strings_objects_and_arrays() {
    check(
        XML,
        r#"
        <r>just text</r> => "just text"
        <r/> => ""
        <?xml version="1.0"?><r a="x"><name>Ann</name><empty/><blank></blank></r> => {"name":"Ann","empty":"","blank":""}
        <r><entry key="first name">A</entry><entry>plain</entry><!-- c --></r> => {"first name":"A","entry":"plain"}
        <r><n>&lt;&amp;&gt;&quot;&apos;&#x41;&#66;<![CDATA[<raw>]]></n></r> => {"n":"<&>\"'AB<raw>"}
        <r><tags><tag>a</tag><tag>b</tag></tags></r> => {"tags":["a","b"]}
        <r><l><item>only</item></l></r> => {"l":["only"]}
        <r><one><tag>a</tag></one></r> => {"one":{"tag":"a"}}
        <r><a>1</a><b>2</b><a>3</a></r> => {"a":["1","3"],"b":"2"}
        <x><item>x</item><item><item>y</item></item></x> => ["x",["y"]]
        <r><e key="x">1</e><e key="y">2</e></r> => ["1","2"]
    "#,
    );
}

#[test]
fn xml_text_is_kept_exactly_but_whitespace_between_elements_is_not() {
    let body = "<r>\n  <a> two  words \n</a>\n  <b>\t</b>\n</r>\n";
    assert_eq!(
        read(XML, body),
        Ok(json!({"a": " two  words \n", "b": "\t"}))
    );
}

#[test]
fn doctype_is_rejected() {
    let bomb = r#"<!DOCTYPE z [<!ENTITY a "aa"><!ENTITY b "&a;&a;">]><z>&b;</z>"#;
    for body in [bomb, "<?xml version=\"1.0\"?>\n<!doctype html><html/>"] {
        assert_eq!(error(XML, body), "XML with a DOCTYPE is not accepted");
    }
    assert!(error(XML, "<r>&nbsp;</r>").ends_with(": unknown entity &nbsp;"));
}

#[test]
fn deep_xml_nesting_is_rejected() {
    let nest = |n| "<a>".repeat(n) + &"</a>".repeat(n);
    assert!(read(XML, nest(64)).is_ok());
    assert!(error(XML, nest(65)).ends_with("elements nested more than 64 levels deep"));
    assert!(read(XML, nest(100_000)).is_err());
}

#[test]
fn truncated_xml_gives_an_error_not_a_panic() {
    let doc = "<r><a x=\"1\">t&amp;</a><b><![CDATA[c]]></b><!-- n --><c/></r>";
    for end in 1..doc.len() {
        assert!(read(XML, &doc[..end]).is_err(), "{}", &doc[..end]);
    }
    assert!(read(XML, doc).is_ok());
}

#[test]
fn invalid_xml_says_where_and_what() {
    let cases: [(&[u8], &str); 6] = [
        (
            b"<r>\n  <a>1</b>\n</r>",
            "line 2, column 7: ill-formed document: expected `</a>`",
        ),
        (
            "<r>\n\u{e9}\u{e9}<a/></r>".as_bytes(),
            "line 2, column 7: <r> mixes text",
        ),
        (
            "<r>\n<a>\u{e9}</a>\n".as_bytes(),
            "line 3, column 1: <r> is not closed",
        ),
        (b"<r>\n \xff</r>", "line 2, column 2: not UTF-8"),
        (b"<r/><r/>", "line 1, column 5: more than one root element"),
        (
            b"<r/>tail",
            "line 1, column 5: text outside the root element",
        ),
    ];
    for (body, want) in cases {
        let err = error(XML, body);
        assert!(err.starts_with(&format!("invalid XML at {want}")), "{err}");
    }
}

#[test]
fn json_becomes_xml_in_the_documented_shape() {
    let v = json!({"a b": "x<&>", "list": [1, true], "none": null, "sub": {"item": ""}});
    let want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<response><entry key=\"a b\">x&lt;&amp;&gt;</entry><list><item>1</item><item>true</item></list><none/><sub><entry key=\"item\"></entry></sub></response>";
    assert_eq!(json_to_xml(&v), want);
    let top = json_to_xml(&json!(["a", [], "\u{1}"]));
    assert!(top.ends_with("<response><item>a</item><item/><item>\u{FFFD}</item></response>"));
}

#[test]
fn objects_arrays_and_strings_survive_a_round_trip() {
    let values = [
        json!({"name": "Ann", "tags": ["a"], "nested": {"x": {"y": "z"}}}),
        json!([["a", "b"], [{"k": "v"}], ""]),
        json!({"": "e", "1st": "d", "a b": " s ", "item": "i", "entry": "e", "ключ": "з"}),
        json!({"text": "<&>\"' \r\n\ttabs ]]>", "ws": "   ", "list": ["", "x"]}),
        json!({"key\twith\r\nbreaks": "v", "x:y": "colon", "-": {"item": ["1"]}}),
        json!({"same": [{"item": "1"}, {"item": "2"}]}),
        json!("top-level string"),
    ];
    for value in values {
        assert_eq!(read(XML, json_to_xml(&value)), Ok(value));
    }
}

#[test]
fn scalars_come_back_as_strings_and_empties_as_empty_strings() {
    let v = json!({"n": 1.5, "t": true, "z": null, "a": [], "o": {}});
    let want = json!({"n": "1.5", "t": "true", "z": "", "a": "", "o": ""});
    assert_eq!(read(XML, json_to_xml(&v)), Ok(want));
}

#[test]
fn plain_form_becomes_object_of_strings() {
    check(
        FORM,
        r#"
        a=1&b=two+words&c=%26&d= => {"a":"1","b":"two words","c":"&","d":""}
        a=1&a=2&a=3 => {"a":["1","2","3"]}
        &grant_type=refresh_token&refresh_token=x => {"grant_type":"refresh_token","refresh_token":"x"}
    "#,
    );
}

#[test]
fn php_bracket_form_becomes_nested_json() {
    check(
        FORM,
        r#"
        0[email]=a@b&0[attributes][x]=1&0[tags][]=t1&0[tags][]=t2 => [{"email":"a@b","attributes":{"x":"1"},"tags":["t1","t2"]}]
        items[1][email]=y&items[0][email]=x => {"items":[{"email":"x"},{"email":"y"}]}
        a[]=1&a[]=2 => {"a":["1","2"]}
        a%5Bb%5D=1&a[c][]=2 => {"a":{"b":"1","c":["2"]}}
        m[1]=x&m[3]=y&n[0]=z => {"m":{"1":"x","3":"y"},"n":["z"]}
        a[][x]=1&a[][x]=2 => {"a":[{"x":"1"},{"x":"2"}]}
        a=1&a[]=2&b[x]=1&b=2 => {"a":["1","2"],"b":"2"}
    "#,
    );
}

#[test]
fn malformed_bracket_keys_are_taken_literally() {
    check(
        FORM,
        r#"a[b=1&a]]=2&[x]=3&a[b]c=4&a[[b]]=5 => {"a[b":"1","a]]":"2","[x]":"3","a[b]c":"4","a[[b]]":"5"}"#,
    );
    let deep = format!("a{}", "[]".repeat(100_000));
    assert_eq!(read(FORM, format!("{deep}=1")), Ok(json!({ deep: "1" })));
}

#[test]
fn multipart_with_two_fields_becomes_object() {
    let body = "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@b.c\r\n--XyZ\r\nContent-Disposition: form-data; name=\"note\"; filename=\"n.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n";
    let got = read("multipart/form-data; boundary=XyZ", body);
    assert_eq!(got, Ok(json!({"email": "a@b.c", "note": "hello"})));
}

#[test]
fn broken_multipart_is_an_error() {
    let ct = "multipart/form-data; boundary=B";
    let binary = b"--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\n\xff\r\n--B--\r\n";
    assert_eq!(error(ct, binary), "multipart part \"f\" is not UTF-8 text");
    let cut = "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx";
    assert!(error(ct, cut).starts_with("invalid multipart body: "));
    assert!(error("multipart/form-data", "--B\r\n").starts_with("invalid multipart content"));
}

#[test]
fn random_bytes_never_panic() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Valid bodies of each kind, then 1 to 4 random edits (cut, delete, insert a byte).
    let seeds: [(&str, &[u8]); 4] = [
        (
            XML,
            b"<r><a k='1'>t&amp;</a><entry key='x y'><item>1</item><item/></entry></r>",
        ),
        (FORM, br#"{"a":[1,"b",{"c":null}],"d":"\u00e9"}"#),
        (FORM, b"a[b][]=1&a[b][]=2&c[0][d]=3&c[1]=%41&&e"),
        (
            "multipart/form-data; boundary=B",
            b"--B\r\nContent-Disposition: form-data; name=\"a[]\"\r\n\r\nx\r\n--B--\r\n",
        ),
    ];
    let bytes = b"<>/=&;#[]{}\"' \n\r:!-?x0\xef\xbb\xbf\xff";
    for i in 0..2000 {
        let (content_type, seed) = seeds[i % 4];
        let mut body = seed.to_vec();
        for _ in 0..1 + next() % 4 {
            let r = next();
            let at = (r >> 8) as usize % (body.len() + 1);
            let byte = [bytes[(r >> 16) as usize % bytes.len()], (r >> 24) as u8][(r % 2) as usize];
            match r % 3 {
                0 => body.truncate(at),
                1 if at < body.len() => drop(body.remove(at)),
                _ => body.insert(at, byte),
            }
        }
        if let Ok(value) = read(content_type, &body) {
            assert!(read(XML, json_to_xml(&value)).is_ok(), "{value}");
        }
    }
}

//! Request bodies in, JSON or XML answers out.
//!
//! Clients label bodies badly: JSON arrives as form data, GET clients send
//! `[]`, PHP clients send `a[0][b]=c`, XML clients want XML back. Handlers only
//! ever see a `serde_json::Value`; this module makes one from any body.
//!
//! Reading, after skipping a UTF-8 BOM; the first rule that matches wins:
//! 1. empty/whitespace body, or exactly `[]` -> `Null` ("no body");
//! 2. first non-whitespace byte `{` or `[` -> JSON, whatever the content type;
//! 3. first non-whitespace byte `<` -> XML (UTF-8 only);
//! 4. `multipart/form-data` -> its parts as form fields (file parts: UTF-8 text);
//! 5. anything else -> `application/x-www-form-urlencoded`.
//!
//! XML, both ways. The answer's root is `<response>`; the request root's name
//! is ignored. An object is one child per key; a key that is not a plain ASCII
//! name (letter or `_`, then letters, digits, `_`, `-`, `.`), or is `item`, is
//! written `<entry key="...">`. An array is repeated `<item>` children. A scalar
//! is text (numbers as written, `true`/`false`); null, `[]` and `{}` are
//! `<key/>`. Characters XML cannot carry (controls) are written as U+FFFD.
//! Reading: an element without child elements is a string of its exact text
//! (`""` if empty). An element whose children are all `<item>`, or are two or
//! more with one and the same key, is an array; otherwise an object, where a key
//! repeated among others collects its values into an array. `<entry key="k">`
//! reads as key `k`; other attributes are ignored; CDATA is text; whitespace
//! between child elements is ignored, other text beside them is an error. So
//! objects, arrays and strings round-trip; numbers and booleans come back as
//! strings, null, `[]` and `{}` as `""`. A DOCTYPE is refused, so no entity can
//! be declared; only the five predefined entities and character references are
//! resolved; more than 64 nested elements is an error.
//!
//! Forms: `a=1&b=2` -> `{"a":"1","b":"2"}`; a repeated key -> array of strings.
//! PHP brackets nest: `a[b][c]=1` -> `{"a":{"b":{"c":"1"}}}`, `a[]=1&a[]=2` ->
//! `{"a":["1","2"]}`. Then each object whose keys are exactly `"0"`..`"n-1"`
//! becomes an array, at every level including the top. A key that is not
//! well-formed brackets (or nests deeper than 64) is taken literally. A key used
//! both as a value and as a container: the later use wins. Multipart fields go
//! through the same mapping.

use quick_xml::XmlVersion;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use quick_xml::reader::Reader;
use serde_json::{Map, Value};

const MAX_DEPTH: usize = 64;

/// Why a body could not be read; the message is shown to the API user in a 400 answer.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyError(pub String);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BodyError {}

/// Reads a request body whatever its label (rules in the module comment).
pub async fn body_to_json(content_type: Option<&str>, body: &[u8]) -> Result<Value, BodyError> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() || trimmed == b"[]" {
        return Ok(Value::Null);
    }
    match trimmed[0] {
        b'{' | b'[' => {
            serde_json::from_slice(body).map_err(|e| BodyError(format!("invalid JSON: {e}")))
        }
        b'<' => xml_to_json(body),
        _ => match multipart_boundary(content_type)? {
            Some(boundary) => multipart_to_json(body, boundary).await,
            None => Ok(pairs_to_json(form_urlencoded::parse(body).into_owned())),
        },
    }
}

/// Renders a JSON value as the XML answer: `<?xml version="1.0" encoding="UTF-8"?>` then `<response>...</response>`.
pub fn json_to_xml(value: &Value) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    write_element(&mut out, "response", None, value);
    out
}

fn write_element(out: &mut String, tag: &str, key: Option<&str>, value: &Value) {
    out.push('<');
    out.push_str(tag);
    if let Some(key) = key {
        out.push_str(" key=\"");
        push_escaped(out, key, true);
        out.push('"');
    }
    let empty = value.is_null()
        || value.as_array().is_some_and(Vec::is_empty)
        || value.as_object().is_some_and(Map::is_empty);
    if empty {
        out.push_str("/>");
        return;
    }
    out.push('>');
    match value {
        Value::String(s) => push_escaped(out, s, false),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Array(items) => items
            .iter()
            .for_each(|v| write_element(out, "item", None, v)),
        Value::Object(map) => {
            for (k, v) in map {
                if is_plain_name(k) {
                    write_element(out, k, None, v);
                } else {
                    write_element(out, "entry", Some(k), v);
                }
            }
        }
        Value::Null => {}
    }
    out.push_str("</");
    out.push_str(tag);
    out.push('>');
}

/// Whether a key can be its own tag (`item` is kept for arrays).
fn is_plain_name(key: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
    let first = key.chars().next().unwrap_or('0');
    (first.is_ascii_alphabetic() || first == '_') && key != "item" && key.chars().all(allowed)
}

fn push_escaped(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\t' | '\n' if attribute => out.push_str(if c == '\t' { "&#9;" } else { "&#10;" }),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// An XML element still open while reading.
struct Frame {
    name: String,
    key: String,
    text: String,
    children: Vec<(String, bool, Value)>, // (key, is an <item>, value)
}

fn xml_to_json(body: &[u8]) -> Result<Value, BodyError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| located(&String::from_utf8_lossy(body), e.valid_up_to(), "not UTF-8"))?;
    let start = text.len() - text.trim_start().len();
    let at = |offset: u64, what: &str| {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        located(text, start.saturating_add(offset), what)
    };
    let mut reader = Reader::from_str(&text[start..]);
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Value> = None;
    loop {
        let here = reader.buffer_position(); // where this event starts
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(e) => return Err(at(reader.error_position(), &e.to_string())),
        };
        let self_closing = matches!(event, Event::Empty(_));
        let piece = match event {
            Event::DocType(_) => {
                return Err(BodyError("XML with a DOCTYPE is not accepted".into()));
            }
            Event::Start(e) | Event::Empty(e) => {
                if root.is_some() {
                    return Err(at(here, "more than one root element"));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(at(here, "elements nested more than 64 levels deep"));
                }
                let name = e.name().as_ref().to_owned();
                let mut key = name.clone();
                if name == "entry" {
                    let attr = e
                        .try_get_attribute("key")
                        .map_err(|e| at(here, &e.to_string()))?;
                    if let Some(attr) = attr {
                        let value = attr.normalized_value(XmlVersion::Implicit1_0);
                        key = value.map_err(|e| at(here, &e.to_string()))?.into_owned();
                    }
                }
                let (text, children) = (String::new(), Vec::new());
                stack.push(Frame {
                    name,
                    key,
                    text,
                    children,
                });
                if self_closing {
                    close(&mut stack, &mut root).map_err(|what| at(here, &what))?;
                }
                continue;
            }
            Event::End(_) => {
                close(&mut stack, &mut root).map_err(|what| at(here, &what))?;
                continue;
            }
            Event::Text(t) => t.xml10_content().into_owned(),
            Event::CData(t) => t.xml10_content().into_owned(),
            Event::GeneralRef(r) => match (r.resolve_char_ref(), resolve_predefined_entity(&r)) {
                (Ok(Some(c)), _) => c.to_string(),
                (Ok(None), Some(s)) => s.to_owned(),
                (Ok(None), None) => return Err(at(here, &format!("unknown entity &{};", &*r))),
                (Err(e), _) => return Err(at(here, &e.to_string())),
            },
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) => continue,
        };
        match stack.last_mut() {
            Some(frame) => frame.text.push_str(&piece),
            None if is_xml_space(&piece) => {}
            None => return Err(at(here, "text outside the root element")),
        }
    }
    if let Some(open) = stack.last() {
        let what = format!("<{}> is not closed", open.name);
        return Err(located(text, text.len(), &what));
    }
    root.ok_or_else(|| located(text, text.len(), "no root element"))
}

/// Ends the innermost open element and gives its value to its parent.
fn close(stack: &mut Vec<Frame>, root: &mut Option<Value>) -> Result<(), String> {
    let frame = stack.pop().ok_or("closing tag without an opening tag")?;
    let (key, is_item) = (frame.key.clone(), frame.name == "item");
    let value = frame_value(frame)?;
    match stack.last_mut() {
        Some(parent) => parent.children.push((key, is_item, value)),
        None => *root = Some(value),
    }
    Ok(())
}

fn frame_value(frame: Frame) -> Result<Value, String> {
    let children = frame.children;
    if children.is_empty() {
        return Ok(Value::String(frame.text));
    }
    if !is_xml_space(&frame.text) {
        return Err(format!("<{}> mixes text with child elements", frame.name));
    }
    let all_items = children.iter().all(|(_, is_item, _)| *is_item);
    let one_key = children.len() >= 2 && children.iter().all(|(k, _, _)| *k == children[0].0);
    if all_items || one_key {
        return Ok(children.into_iter().map(|(_, _, v)| v).collect());
    }
    // Group values by key first, then unwrap the keys that appeared once.
    let mut map = Map::new();
    for (key, _, value) in children {
        let group = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(values) = group {
            values.push(value);
        }
    }
    for group in map.values_mut() {
        if let Value::Array(values) = group
            && values.len() == 1
            && let Some(only) = values.pop()
        {
            *group = only;
        }
    }
    Ok(Value::Object(map))
}

fn is_xml_space(text: &str) -> bool {
    text.chars().all(|c| matches!(c, ' ' | '\t' | '\r' | '\n'))
}

/// An XML error with its line and column (1-based, counted in characters).
fn located(text: &str, offset: usize, what: &str) -> BodyError {
    let before = String::from_utf8_lossy(&text.as_bytes()[..offset.min(text.len())]);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    BodyError(format!(
        "invalid XML at line {line}, column {column}: {what}"
    ))
}

fn multipart_boundary(content_type: Option<&str>) -> Result<Option<String>, BodyError> {
    let content_type = content_type.unwrap_or_default();
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    if !mime.eq_ignore_ascii_case("multipart/form-data") {
        return Ok(None);
    }
    multer::parse_boundary(content_type)
        .map(Some)
        .map_err(|e| BodyError(format!("invalid multipart content type: {e}")))
}

async fn multipart_to_json(body: &[u8], boundary: String) -> Result<Value, BodyError> {
    let chunk = body.to_vec();
    let stream = futures::stream::once(async move { Ok::<_, std::convert::Infallible>(chunk) });
    let mut multipart = multer::Multipart::new(stream, boundary);
    let bad = |e: multer::Error| BodyError(format!("invalid multipart body: {e}"));
    let mut pairs = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or_default().to_owned();
        let data = field.bytes().await.map_err(bad)?;
        let text = String::from_utf8(data.to_vec())
            .map_err(|_| BodyError(format!("multipart part \"{name}\" is not UTF-8 text")))?;
        pairs.push((name, text));
    }
    Ok(pairs_to_json(pairs))
}

enum Segment {
    Key(String),
    Push,
}

/// `a[b][]` -> `[Key(a), Key(b), Push]`; None if the key is not that shape.
fn bracket_path(key: &str) -> Option<Vec<Segment>> {
    let (base, mut rest) = key.split_at(key.find('[')?);
    if base.is_empty() || base.contains(']') {
        return None;
    }
    let mut path = vec![Segment::Key(base.to_owned())];
    while let Some(inner) = rest.strip_prefix('[') {
        let (name, after) = inner.split_once(']')?;
        if name.contains('[') || path.len() > MAX_DEPTH {
            return None;
        }
        path.push(match name {
            "" => Segment::Push,
            _ => Segment::Key(name.to_owned()),
        });
        rest = after;
    }
    rest.is_empty().then_some(path)
}

fn pairs_to_json(pairs: impl IntoIterator<Item = (String, String)>) -> Value {
    let mut root = Value::Object(Map::new());
    for (key, value) in pairs {
        let path = bracket_path(&key).unwrap_or_else(|| vec![Segment::Key(key)]);
        put(&mut root, &path, value);
    }
    lists_from_index_maps(root)
}

/// Stores `value` at `path` below `slot`; `Null` means "nothing here yet".
fn put(slot: &mut Value, path: &[Segment], value: String) {
    match path.split_first() {
        None => append(slot, Value::String(value), false),
        Some((Segment::Push, rest)) => {
            let mut item = Value::Null;
            put(&mut item, rest, value);
            append(slot, item, true);
        }
        Some((Segment::Key(key), rest)) => {
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(map) = slot {
                put(map.entry(key.clone()).or_insert(Value::Null), rest, value);
            }
        }
    }
}

/// A second value for the same place turns it into an array.
fn append(slot: &mut Value, item: Value, as_list: bool) {
    match slot {
        Value::Array(items) => items.push(item),
        Value::String(_) => *slot = Value::Array(vec![slot.take(), item]),
        Value::Null | Value::Object(_) if !as_list => *slot = item,
        _ => *slot = Value::Array(vec![item]),
    }
}

fn lists_from_index_maps(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let n = map.len();
            let is_list = n > 0 && (0..n).all(|i| map.contains_key(&i.to_string()));
            let mut map: Map<String, Value> = map
                .into_iter()
                .map(|(k, v)| (k, lists_from_index_maps(v)))
                .collect();
            if is_list {
                (0..n).filter_map(|i| map.remove(&i.to_string())).collect()
            } else {
                Value::Object(map)
            }
        }
        Value::Array(items) => items.into_iter().map(lists_from_index_maps).collect(),
        other => other,
    }
}

#[cfg(test)]
mod tests {
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
                let byte =
                    [bytes[(r >> 16) as usize % bytes.len()], (r >> 24) as u8][(r % 2) as usize];
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
}

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
#[path = "convert_tests.rs"]
mod tests;

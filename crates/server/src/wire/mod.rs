//! The wire habits of real clients (docs/wire.md), handled once for every
//! route, before routing:
//!
//! - `.json` / `.xml` suffixes are stripped from every path segment
//!   (`/v3/groups.json/7/receivers`); `.xml` asks for an XML answer.
//! - The body is read whatever its label (JSON, XML, form with PHP
//!   brackets, multipart; see [`convert`]) into one JSON value that handlers
//!   take through [`Input`]. A GET or DELETE may carry `[]`: ignored.
//! - Answers are JSON; when the caller asked for XML (suffix, `Accept`, or
//!   an XML body without `Accept`), the JSON answer is rendered as XML.
//!
//! The body arrives here already whole: [`read_body`] collects it off the
//! socket first, within the body timeout and [`MAX_BODY_BYTES`], before the
//! request takes an in-flight slot ([`super::overload`]).

pub mod convert;

use super::error::ApiError;
use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// The largest request body accepted (a 1,000-entry batch is far smaller).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Reads a request body off the socket whole: no wait for its next bytes
/// longer than `gap` (as nginx's `client_body_timeout`), all of it within
/// `whole`, at most [`MAX_BODY_BYTES`]. Otherwise the answer to send
/// instead, with `Connection: close` (the rest of the body is never read):
/// 408 for a body too slow, 413 for one too large (at once when its
/// `Content-Length` says so), 400 for one cut off or malformed.
pub async fn read_body(
    headers: &HeaderMap,
    body: Body,
    gap: Duration,
    whole: Duration,
) -> Result<Bytes, Response> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(closing(too_large()));
    }
    let deadline = tokio::time::Instant::now() + whole;
    let mut stream = body.into_data_stream();
    // A body in one piece (most are) is not copied.
    let mut first: Option<Bytes> = None;
    let mut more = bytes::BytesMut::new();
    loop {
        let wait = gap.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let chunk = match tokio::time::timeout(wait, stream.next()).await {
            Ok(Some(Ok(chunk))) => chunk,
            Ok(None) => break,
            Ok(Some(Err(_))) => {
                return Err(closing(ApiError::bad_request(
                    "the request body was cut off or malformed",
                )));
            }
            Err(_) => {
                return Err(closing(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "Request Timeout: the request body came too slowly (more than {} s \
                         without a byte, or not whole within {} s)",
                        gap.as_secs_f64(),
                        whole.as_secs_f64()
                    ),
                )));
            }
        };
        let had = first.as_ref().map_or(0, Bytes::len) + more.len();
        if had + chunk.len() > MAX_BODY_BYTES {
            return Err(closing(too_large()));
        }
        match first.take() {
            None if more.is_empty() => first = Some(chunk),
            None => more.extend_from_slice(&chunk),
            Some(one) => {
                more.extend_from_slice(&one);
                more.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| more.freeze()))
}

fn too_large() -> ApiError {
    ApiError::too_large(format!("request body over {MAX_BODY_BYTES} bytes"))
}

/// An error answer after which the connection is closed.
fn closing(e: ApiError) -> Response {
    let mut res = e.into_response();
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
}

/// The request body, parsed once by [`normalize`]; `Null` when there was none.
#[derive(Debug, Clone)]
pub struct ParsedBody(pub Value);

/// Strips `.json`/`.xml` from each segment; returns the new path and the
/// format a suffix asked for.
fn strip_suffixes(path: &str) -> (String, Option<Format>) {
    let mut format = None;
    let segments: Vec<&str> = path
        .split('/')
        .map(|seg| {
            if let Some(s) = seg.strip_suffix(".json") {
                format = Some(Format::Json);
                s
            } else if let Some(s) = seg.strip_suffix(".xml") {
                format = Some(Format::Xml);
                s
            } else {
                seg
            }
        })
        .collect();
    (segments.join("/"), format)
}

fn wants_xml(accept: Option<&str>, content_type: Option<&str>) -> bool {
    match accept.map(str::to_ascii_lowercase) {
        Some(a) if a.contains("json") => false,
        Some(a) if a.contains("xml") => true,
        // The media type only: a multipart boundary is random text, and
        // one that held "xml" turned a JSON client's token answer into XML.
        _ => content_type
            .and_then(|c| c.split(';').next())
            .is_some_and(|m| m.to_ascii_lowercase().contains("xml")),
    }
}

/// The middleware around the whole router (see the module comment).
pub async fn normalize(req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let (path, suffix) = strip_suffixes(parts.uri.path());
    let header_str = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header_str(header::CONTENT_TYPE);
    let format = suffix.unwrap_or_else(|| {
        if wants_xml(
            header_str(header::ACCEPT).as_deref(),
            content_type.as_deref(),
        ) {
            Format::Xml
        } else {
            Format::Json
        }
    });
    let respond = |e: ApiError| render(e.into_response(), format);

    if suffix.is_some() {
        let new_uri = match parts.uri.query() {
            Some(q) => format!("{path}?{q}"),
            None => path,
        };
        match new_uri.parse::<Uri>() {
            Ok(uri) => parts.uri = uri,
            Err(_) => return respond(ApiError::bad_request("malformed path")).await,
        }
    }
    let bytes: Bytes = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return respond(too_large()).await,
    };
    let parsed = match convert::body_to_json(content_type.as_deref(), &bytes).await {
        Ok(v) => v,
        Err(convert::BodyError(msg)) => {
            return respond(ApiError::bad_request(format!("unreadable body: {msg}"))).await;
        }
    };
    parts.extensions.insert(ParsedBody(parsed));
    parts.extensions.insert(format);
    let res = next.run(Request::from_parts(parts, Body::empty())).await;
    render(envelope_errors(res).await, format).await
}

/// Puts any error answer not already in the API's error body (a rejection
/// from the framework, a 405) into it, so clients see one shape.
async fn envelope_errors(res: Response) -> Response {
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    // A page for people (the authorization page's errors) stays a page.
    let is_html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html"));
    if !(res.status().is_client_error() || res.status().is_server_error()) || is_json || is_html {
        return res;
    }
    let status = res.status();
    let text = to_bytes(res.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let reason = status.canonical_reason().unwrap_or("Error");
    let message = if text.is_empty() {
        reason.to_string()
    } else {
        format!("{reason}: {text}")
    };
    ApiError::new(status, message).into_response()
}

/// Renders a JSON answer as XML when XML was asked for.
async fn render(res: Response, format: Format) -> Response {
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    if format == Format::Json || !is_json {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = to_bytes(body, usize::MAX).await else {
        return ApiError::internal("answer body unreadable").into_response();
    };
    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(convert::json_to_xml(&value)))
}

fn decode<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, ApiError> {
    serde_json::from_value(value).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))
}

/// A handler's body, decoded into `T`. A missing body is `{}`, and a body
/// wrapped in the spec's `postdata` is unwrapped.
pub struct Input<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Input<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let value = parts
            .extensions
            .get::<ParsedBody>()
            .map(|b| b.0.clone())
            .unwrap_or(Value::Null);
        let value = match value {
            Value::Null => Value::Object(Default::default()),
            Value::Object(mut o) if o.len() == 1 && o.contains_key("postdata") => {
                o.remove("postdata").unwrap_or_default()
            }
            v => v,
        };
        // serde fills a struct from an array by position: `[1,2,3]` would
        // create a group named "1". Every `Input` is an object (other
        // types fail in serde with their own message).
        if value.is_array() {
            return Err(ApiError::bad_request(
                "invalid body: expected an object, got an array",
            ));
        }
        decode(value, "invalid body").map(Input)
    }
}

/// The raw parsed body, for handlers that take several shapes. It is
/// taken out of the request, not copied: a batch of 1,000 receivers was
/// copied whole on every request (7% of the server's time in a batch
/// import, issue 15). A handler takes the body through one extractor.
pub struct RawInput(pub Value);

impl<S: Send + Sync> FromRequestParts<S> for RawInput {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(RawInput(
            parts
                .extensions
                .remove::<ParsedBody>()
                .map(|b| b.0)
                .unwrap_or(Value::Null),
        ))
    }
}

/// The query string decoded into `T` with the same lenient rules as bodies
/// (every value arrives as text). `token` is the credential, not a parameter.
pub struct QueryInput<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryInput<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let map: serde_json::Map<String, Value> = form_urlencoded::parse(query.as_bytes())
            .filter(|(k, _)| k != "token")
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        decode(Value::Object(map), "invalid query").map(QueryInput)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_media_type_asks_for_xml_never_a_boundary() {
        let multipart = "multipart/form-data; boundary=------tpxmltu2boundary";
        assert!(!wants_xml(None, Some(multipart)));
        assert!(wants_xml(None, Some("application/xml; charset=utf-8")));
        assert!(!wants_xml(Some("application/json"), Some("text/xml")));
    }

    #[tokio::test]
    async fn a_body_is_read_whole_or_answered_408_or_413_with_a_close() {
        use futures::stream;
        let ms = Duration::from_millis;
        let none = HeaderMap::new();
        let chunks =
            stream::iter(["ab", "", "cd"].map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
        let got = read_body(&none, Body::from_stream(chunks), ms(200), ms(2000)).await;
        assert_eq!(got.ok(), Some(Bytes::from("abcd")));

        // A byte, then nothing: 408 after the gap.
        let stalled =
            stream::iter([Ok::<_, std::io::Error>(Bytes::from("a"))]).chain(stream::pending());
        let res = read_body(&none, Body::from_stream(stalled), ms(50), ms(2000))
            .await
            .unwrap_err();
        assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(res.headers()[header::CONNECTION], "close");

        // A byte every 10 ms, never a gap of 50 ms, but not whole in 200 ms.
        let drip = stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Some((Ok::<_, std::io::Error>(Bytes::from("a")), ()))
        });
        let res = read_body(&none, Body::from_stream(drip), ms(50), ms(200))
            .await
            .unwrap_err();
        assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);

        // Too large: said by Content-Length (nothing read), or found reading.
        let mut big = HeaderMap::new();
        big.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from(MAX_BODY_BYTES + 1),
        );
        let res = read_body(
            &big,
            Body::from_stream(stream::pending::<Result<Bytes, std::io::Error>>()),
            ms(50),
            ms(200),
        )
        .await
        .unwrap_err();
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let halves = stream::iter(
            [0, 1]
                .map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; MAX_BODY_BYTES / 2 + 1]))),
        );
        let res = read_body(&none, Body::from_stream(halves), ms(200), ms(2000))
            .await
            .unwrap_err();
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(res.headers()[header::CONNECTION], "close");
    }

    #[test]
    fn suffixes_are_stripped_from_every_segment() {
        assert_eq!(
            strip_suffixes("/v3/receivers.json/filter.json"),
            ("/v3/receivers/filter".into(), Some(Format::Json))
        );
        assert_eq!(
            strip_suffixes("/v3/groups.xml/7"),
            ("/v3/groups/7".into(), Some(Format::Xml))
        );
        assert_eq!(
            strip_suffixes("/v3/receivers/a@b.de"),
            ("/v3/receivers/a@b.de".into(), None)
        );
    }
}

//! The small HTML the public form endpoints answer a person with, and the
//! escaping every value put into HTML goes through.

pub(super) use crate::html::escape;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

/// A complete page with a heading and one paragraph (both escaped here).
/// Not cached, and the link that led here (it may carry a one-time token)
/// is not passed on as a referrer.
pub(super) fn page(title: &str, message: &str) -> Response {
    let (title, message) = (escape(title), escape(message));
    let body = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n<p>{message}</p>\n</body>\n</html>\n"
    );
    let mut res = Html(body).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    res
}

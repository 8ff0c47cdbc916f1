//! Object stores as sources and export targets: `s3://`, `gs://` and `az://` URLs through
//! the `object_store` crate. A source object (or every object a glob in its key matches) is
//! downloaded like a URL, to the same place and with its ETag remembered the same way
//! ([`super::fetch`]); an export to an object URL is written to a local file first, as
//! every export is, then uploaded whole ([`put`]).

mod get;
pub mod put;
pub mod store;
pub mod url;

pub use get::{download, expand};
pub use url::{Cloud, ObjectUrl, is_object_url};

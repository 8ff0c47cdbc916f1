//! An export's `out` as the pipeline file and `--out` write it: `-` for
//! standard output, an object URL (`s3://`, `gs://`, `az://`) or a file path,
//! each with its date placeholders ([`super::placeholders`]). Checked when the
//! pipeline is read; written by [`crate::export`].

use crate::remote::object::{self, ObjectUrl};
use std::path::Path;

/// The `out` that means standard output.
pub const STDOUT: &str = "-";

/// Whether an export's `out` is standard output.
pub fn is_stdout(out: &Path) -> bool {
    out == Path::new(STDOUT)
}

/// The object an export's `out` names, if it names one.
pub(crate) fn object_of(out: &Path) -> Option<&str> {
    out.to_str().filter(|s| object::is_object_url(s))
}

/// Whether an `out` can be written to: an object URL must name one object (the error says
/// what is wrong); any other `out` is a file path.
pub fn check_out(out: &Path) -> Result<(), String> {
    super::placeholders::check(&out.to_string_lossy())?;
    let out = &super::placeholders::expand(out, chrono::Utc::now());
    let Some(url) = object_of(out) else {
        return Ok(());
    };
    let url = ObjectUrl::parse(url)?;
    if url.is_glob() {
        return Err(format!(
            "{url} is a pattern; an export writes one object: name it without *, ? or ["
        ));
    }
    Ok(())
}

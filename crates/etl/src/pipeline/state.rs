//! Where a pipeline's state lives: the name that keeps its journals,
//! rejects, plans and ledgers apart from another pipeline's.

use std::path::Path;

/// What keys the state of the pipeline at `path` (named `stem`): its path
/// from the working directory without the extension (`nightly`,
/// `a/nightly`), so that two same-named pipelines of two folders keep their
/// journals, rejects, plans, ledgers and URL validators apart; a pipeline outside the working directory,
/// its name and the start of a hash of its canonical path
/// (`nightly-1f3a9c2e`). Never the bare file name: `a/nightly.toml` and
/// `b/nightly.toml` run from one folder once wrote one journal.
pub fn state_name(path: &Path, stem: &str) -> String {
    // Deliberately: without a working directory to name, every pipeline
    // is outside it (and keyed by its hash).
    let cwd = std::env::current_dir().unwrap_or_default();
    state_name_in(&cwd, path, stem)
}

/// [`state_name`] for a run whose working directory is `cwd`.
pub fn state_name_in(cwd: &Path, path: &Path, stem: &str) -> String {
    use sha2::{Digest, Sha256};
    // Deliberately: a path that cannot be resolved (gone since it was
    // read) is keyed as written.
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let inside = std::fs::canonicalize(cwd)
        .ok()
        .and_then(|cwd| canonical.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .filter(|rel| {
            rel.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        });
    match inside {
        Some(rel) => {
            let rel = rel.with_extension("");
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            parts.join("/")
        }
        None => {
            let digest = Sha256::digest(canonical.to_string_lossy().as_bytes());
            format!("{stem}-{}", &hex::encode(digest)[..8])
        }
    }
}

//! Which files a source means: each entry of `paths` is a file or a glob pattern, relative to
//! the pipeline's directory; matches are sorted so runs read files in a stable order, and a
//! file named twice is read once. The format comes from the extension (under a `.gz` or
//! `.zst` suffix) unless the step sets it.
//! A zip archive stands for the CSV files inside it (see `zipped`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use glob::{MatchOptions, Pattern};

use super::compressed::{self, Compression};
use super::zipped;
use super::{SourceError, SourceFormat, SourceSpec};

/// One file to read and how.
pub(crate) struct Input {
    /// The file, or for a zip member `archive.zip/member.csv` (how rejects name it).
    pub path: PathBuf,
    pub format: SourceFormat,
    /// For a member of a zip archive: the archive and the member's name in it.
    pub member: Option<(PathBuf, String)>,
}

pub(crate) fn resolve(spec: &SourceSpec, base_dir: &Path) -> Result<Vec<Input>, SourceError> {
    if spec.paths.is_empty() {
        return Err(SourceError::NoPaths);
    }
    let mut seen = HashSet::new();
    let mut inputs = Vec::new();
    for entry in &spec.paths {
        // A file that exists under the very name is that file, even with `[` or `*` in
        // its name (a download's copy under a folder named so, `report[1].csv`).
        let paths = if is_pattern(entry) && !base_dir.join(entry).is_file() {
            expand(entry, base_dir)?
        } else {
            let path = base_dir.join(entry);
            if !path.exists() {
                return Err(SourceError::NotFound { file: path });
            }
            vec![path]
        };
        for path in paths {
            if !seen.insert(path.clone()) {
                continue;
            }
            if zipped::is_zip(&path) {
                for name in zipped::members(&path)? {
                    inputs.push(Input {
                        path: zipped::member_path(&path, &name),
                        format: SourceFormat::Csv,
                        member: Some((path.clone(), name)),
                    });
                }
                continue;
            }
            let format = spec
                .format
                .or_else(|| SourceFormat::from_path(&compressed::inner_name(&path)))
                .ok_or_else(|| SourceError::UnknownFormat { file: path.clone() })?;
            if Compression::from_path(&path).is_some() {
                match format {
                    SourceFormat::Csv => {}
                    SourceFormat::Spreadsheet => {
                        return Err(SourceError::CompressedSpreadsheet { file: path });
                    }
                    SourceFormat::Parquet => {
                        let format = "Parquet";
                        return Err(SourceError::CompressedFormat { file: path, format });
                    }
                    SourceFormat::JsonLines => {
                        let format = "JSON lines";
                        return Err(SourceError::CompressedFormat { file: path, format });
                    }
                }
            }
            inputs.push(Input {
                path,
                format,
                member: None,
            });
        }
    }
    Ok(inputs)
}

fn is_pattern(entry: &str) -> bool {
    entry.contains(['*', '?', '['])
}

/// The files a pattern matches, sorted; directories are left out.
fn expand(pattern: &str, base_dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    // The base directory is taken literally: its name may contain `[` or `*`.
    let full = if Path::new(pattern).is_absolute() || base_dir.as_os_str().is_empty() {
        pattern.to_string()
    } else {
        let base = Pattern::escape(&base_dir.to_string_lossy());
        format!("{}/{pattern}", base.trim_end_matches('/'))
    };
    let options = MatchOptions {
        require_literal_leading_dot: true,
        ..MatchOptions::new()
    };
    let matches = glob::glob_with(&full, options).map_err(|e| SourceError::BadPattern {
        pattern: pattern.to_string(),
        message: e.to_string(),
    })?;
    let mut paths = Vec::new();
    for entry in matches {
        let path = entry.map_err(|e| SourceError::Io {
            file: e.path().to_path_buf(),
            source: e.into(),
        })?;
        if path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(SourceError::NoMatch {
            pattern: pattern.to_string(),
            dir: base_dir.to_path_buf(),
        });
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(paths: &[&str]) -> SourceSpec {
        SourceSpec {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            ..SourceSpec::default()
        }
    }

    #[test]
    fn globs_are_sorted_and_a_file_named_twice_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.csv", "a.csv", "c.txt"] {
            std::fs::write(dir.path().join(name), "x\n").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.csv")).unwrap();
        let inputs = resolve(&spec(&["*.csv", "a.csv", "c.txt"]), dir.path()).unwrap();
        let names: Vec<_> = inputs
            .iter()
            .map(|i| i.path.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.csv", "b.csv", "c.txt"]);
    }

    #[test]
    fn a_file_named_like_a_pattern_is_read_as_that_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("report[1].csv"), "x\n").unwrap();
        let inputs = resolve(&spec(&["report[1].csv"]), dir.path()).unwrap();
        assert_eq!(inputs[0].path, dir.path().join("report[1].csv"));
    }

    #[test]
    fn a_pattern_matching_nothing_names_the_pattern_and_directory() {
        let err = resolve(&spec(&["x/*.csv"]), Path::new("/nowhere"))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "no files match \"x/*.csv\" (looked in /nowhere); check the pattern in `paths`"
        );
    }

    #[test]
    fn a_missing_file_an_unknown_extension_and_no_paths_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("list.dat"), "x\n").unwrap();
        let err = resolve(&spec(&["gone.csv"]), dir.path()).err().unwrap();
        assert!(
            err.to_string()
                .ends_with("gone.csv does not exist; check the path in `source`")
        );
        let err = resolve(&spec(&["list.dat"]), dir.path()).err().unwrap();
        assert!(matches!(err, SourceError::UnknownFormat { .. }));
        let forced = SourceSpec {
            format: Some(SourceFormat::Csv),
            ..spec(&["list.dat"])
        };
        assert_eq!(resolve(&forced, dir.path()).unwrap().len(), 1);
        assert!(matches!(
            resolve(&spec(&[]), dir.path()),
            Err(SourceError::NoPaths)
        ));
    }
}

//! Zip archives as sources: some tools hand out their exports zipped (Mailchimp's audience
//! export is one zip holding a CSV per member status). Naming the archive reads every CSV
//! inside it, in name order, as if each had been named on its own; each member is named
//! `archive.zip/member.csv` in rejects and reports.
//!
//! Members are read whole into memory (a compressed stream cannot be sought), capped so a
//! zip bomb becomes an error rather than an exhausted machine.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use zip::ZipArchive;

use super::SourceError;
use super::SourceFormat;

/// The most bytes one member may unpack to (far above any real export).
const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// Whether a path names a zip archive (by extension, in any case).
pub(crate) fn is_zip(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

fn open(path: &Path) -> Result<ZipArchive<File>, SourceError> {
    let file = File::open(path).map_err(|source| SourceError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    ZipArchive::new(file).map_err(|e| SourceError::Archive {
        file: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The CSV members of an archive, sorted by name. Folders, hidden files and macOS resource
/// forks (`__MACOSX/`) are left out; an archive without a CSV member is an error.
pub(crate) fn members(path: &Path) -> Result<Vec<String>, SourceError> {
    let archive = open(path)?;
    let mut names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .filter(|name| {
            let base = name.rsplit('/').next().unwrap_or(name);
            !name.ends_with('/')
                && !name.starts_with("__MACOSX/")
                && !base.starts_with('.')
                && SourceFormat::from_path(Path::new(base)) == Some(SourceFormat::Csv)
        })
        .map(|name| name.to_string())
        .collect();
    if names.is_empty() {
        return Err(SourceError::NoCsvInArchive {
            file: path.to_path_buf(),
        });
    }
    names.sort();
    Ok(names)
}

/// How a member is named in tables and rejects: `archive.zip/member.csv`.
pub(crate) fn member_path(archive: &Path, member: &str) -> PathBuf {
    archive.join(member)
}

/// The bytes of one member, at most `limit` of them when given.
pub(crate) fn read_member(
    archive_path: &Path,
    member: &str,
    limit: Option<u64>,
) -> Result<Vec<u8>, SourceError> {
    let shown = member_path(archive_path, member);
    let mut archive = open(archive_path)?;
    let entry = archive.by_name(member).map_err(|e| SourceError::Archive {
        file: shown.clone(),
        message: e.to_string(),
    })?;
    let cap = limit.unwrap_or(MAX_MEMBER_BYTES);
    let mut bytes = Vec::new();
    entry
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| SourceError::Archive {
            file: shown.clone(),
            message: e.to_string(),
        })?;
    if bytes.len() as u64 > cap {
        if limit.is_some() {
            bytes.truncate(cap as usize);
        } else {
            return Err(SourceError::ArchiveMemberTooLarge {
                file: shown,
                limit_gib: MAX_MEMBER_BYTES >> 30,
            });
        }
    }
    if bytes.is_empty() {
        return Err(SourceError::Empty { file: shown });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn archive(dir: &Path, members: &[(&str, &str)]) -> PathBuf {
        let path = dir.join("export.zip");
        let mut w = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, text) in members {
            if name.ends_with('/') {
                w.add_directory(*name, SimpleFileOptions::default())
                    .unwrap();
            } else {
                w.start_file(*name, SimpleFileOptions::default()).unwrap();
                w.write_all(text.as_bytes()).unwrap();
            }
        }
        w.finish().unwrap();
        path
    }

    #[test]
    fn members_are_the_csv_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = archive(
            dir.path(),
            &[
                ("unsubscribed_members_export_1.csv", "a\n1\n"),
                ("cleaned_members_export_1.csv", "a\n2\n"),
                ("notes/", ""),
                ("__MACOSX/._cleaned_members_export_1.csv", "x"),
                (".hidden.csv", "a\n"),
                ("readme.pdf", "%PDF"),
            ],
        );
        assert_eq!(
            members(&path).unwrap(),
            [
                "cleaned_members_export_1.csv",
                "unsubscribed_members_export_1.csv"
            ]
        );
        assert_eq!(
            read_member(&path, "cleaned_members_export_1.csv", None).unwrap(),
            b"a\n2\n"
        );
        assert_eq!(
            read_member(&path, "cleaned_members_export_1.csv", Some(2)).unwrap(),
            b"a\n"
        );
    }

    #[test]
    fn an_archive_without_csv_or_not_a_zip_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = archive(dir.path(), &[("readme.txt.pdf", "x")]);
        assert!(
            members(&path)
                .unwrap_err()
                .to_string()
                .ends_with("export.zip holds no CSV file; export the list again as CSV, or name the CSV files themselves in `paths`")
        );
        let fake = dir.path().join("fake.zip");
        std::fs::write(&fake, "not a zip").unwrap();
        let err = members(&fake).unwrap_err().to_string();
        assert!(
            err.contains("fake.zip is not a readable zip archive"),
            "{err}"
        );
    }
}

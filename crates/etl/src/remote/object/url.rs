//! Object URLs: `s3://bucket/key`, `gs://bucket/key` and `az://container/key`, as `source`
//! entries and export `out`s. Parsed once here into an [`ObjectUrl`]; the key may be a glob
//! (`s3://b/exports/*.csv.gz`) in a source, never in an `out`.
//!
//! Decision: an object URL carries no credentials (they come from the environment, see
//! [`super::store`]), so one written with `user@` or `:password@` in it is refused with the
//! variables to use instead, and messages show the URL as written otherwise.

use std::fmt;

/// Which cloud an object URL names, by its scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cloud {
    S3,
    Gcs,
    Azure,
}

impl Cloud {
    pub fn scheme(self) -> &'static str {
        match self {
            Cloud::S3 => "s3",
            Cloud::Gcs => "gs",
            Cloud::Azure => "az",
        }
    }

    /// What the bucket is called on this cloud, for messages.
    pub fn bucket_word(self) -> &'static str {
        match self {
            Cloud::Azure => "container",
            Cloud::S3 | Cloud::Gcs => "bucket",
        }
    }

    /// Where this cloud's credentials are read from, for messages.
    pub fn credentials_hint(self) -> &'static str {
        match self {
            Cloud::S3 => {
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or the machine's role"
            }
            Cloud::Gcs => "GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT",
            Cloud::Azure => {
                "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY"
            }
        }
    }
}

/// One object (or, with a glob in its key, a pattern of objects) in a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectUrl {
    pub cloud: Cloud,
    pub bucket: String,
    pub key: String,
}

/// Whether an entry is an object URL (`s3://`, `gs://`, `az://`, scheme in any case).
pub fn is_object_url(entry: &str) -> bool {
    scheme_of(entry).is_some()
}

fn scheme_of(entry: &str) -> Option<(Cloud, &str)> {
    let (scheme, rest) = entry.split_once("://")?;
    let cloud = match scheme.to_ascii_lowercase().as_str() {
        "s3" => Cloud::S3,
        "gs" => Cloud::Gcs,
        "az" => Cloud::Azure,
        _ => return None,
    };
    Some((cloud, rest))
}

impl ObjectUrl {
    /// Reads an object URL; the error says what is wrong and how to write it.
    pub fn parse(entry: &str) -> Result<ObjectUrl, String> {
        let Some((cloud, rest)) = scheme_of(entry) else {
            return Err(format!(
                "{entry} is not an object URL; write it as s3://bucket/path/file.csv (or gs://, az://)"
            ));
        };
        let scheme = cloud.scheme();
        let word = cloud.bucket_word();
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.contains('@') || bucket.contains(':') {
            return Err(format!(
                "{scheme}://{}/{key} has credentials or a port in it; an object URL names only the {word} and key, and the credentials come from the environment ({})",
                bucket.rsplit('@').next().unwrap_or(bucket),
                cloud.credentials_hint()
            ));
        }
        if bucket.is_empty() {
            return Err(format!(
                "{entry} names no {word}; write it as {scheme}://{word}/path/file.csv"
            ));
        }
        if key.is_empty() || key.ends_with('/') {
            return Err(format!(
                "{entry} names no object (the key after the {word} is empty or ends in /); write it as {scheme}://{bucket}/path/file.csv"
            ));
        }
        Ok(ObjectUrl {
            cloud,
            bucket: bucket.to_string(),
            key: key.to_string(),
        })
    }

    /// Whether the key is a glob (`*`, `?` or `[`), matched against a listing.
    pub fn is_glob(&self) -> bool {
        self.key.contains(['*', '?', '['])
    }

    /// The same bucket, another key (an object a glob matched).
    pub fn with_key(&self, key: &str) -> ObjectUrl {
        ObjectUrl {
            key: key.to_string(),
            ..self.clone()
        }
    }

    /// The part of a glob's key before its first wildcard, up to the last `/`: the
    /// listing's prefix ("" lists the whole bucket).
    pub fn list_prefix(&self) -> &str {
        let literal = &self.key[..self.key.find(['*', '?', '[']).unwrap_or(self.key.len())];
        literal.rfind('/').map_or("", |i| &literal[..i])
    }

    /// The name the downloaded copy gets: the key's last segment, with anything but
    /// letters, digits, `.`, `-` and `_` replaced by `_` (so `.csv.gz` still says gzip).
    pub fn file_name(&self) -> String {
        let last = self.key.rsplit('/').next().unwrap_or("");
        crate::remote::url::safe_file_name(last, "object")
    }
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}/{}", self.cloud.scheme(), self.bucket, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_urls_are_told_by_their_scheme() {
        assert!(is_object_url("s3://b/k.csv"));
        assert!(is_object_url("GS://b/k.csv"));
        assert!(is_object_url("az://c/k.csv"));
        assert!(!is_object_url("https://h/k.csv"));
        assert!(!is_object_url("exports/s3.csv"));
    }

    #[test]
    fn an_object_url_is_its_bucket_and_key() {
        let url = ObjectUrl::parse("s3://exports/daily/list.csv.gz").unwrap();
        assert_eq!(url.cloud, Cloud::S3);
        assert_eq!(url.bucket, "exports");
        assert_eq!(url.key, "daily/list.csv.gz");
        assert_eq!(url.to_string(), "s3://exports/daily/list.csv.gz");
        assert_eq!(url.file_name(), "list.csv.gz");
        assert!(!url.is_glob());
    }

    #[test]
    fn a_glob_lists_from_the_folder_before_its_first_wildcard() {
        let glob = |k: &str| ObjectUrl::parse(&format!("gs://b/{k}")).unwrap();
        assert!(glob("exports/*.csv.gz").is_glob());
        assert_eq!(glob("exports/*.csv.gz").list_prefix(), "exports");
        assert_eq!(glob("exports/2026-0?/a.csv").list_prefix(), "exports");
        assert_eq!(glob("a/b/list[12].csv").list_prefix(), "a/b");
        assert_eq!(glob("*.csv").list_prefix(), "");
    }

    #[test]
    fn a_url_without_a_key_or_with_credentials_is_refused_saying_how_to_write_it() {
        assert_eq!(
            ObjectUrl::parse("s3://exports").unwrap_err(),
            "s3://exports names no object (the key after the bucket is empty or ends in /); write it as s3://exports/path/file.csv"
        );
        assert_eq!(
            ObjectUrl::parse("az:///k.csv").unwrap_err(),
            "az:///k.csv names no container; write it as az://container/path/file.csv"
        );
        let err = ObjectUrl::parse("s3://AKIA:secret@exports/a.csv").unwrap_err();
        assert_eq!(
            err,
            "s3://exports/a.csv has credentials or a port in it; an object URL names only the bucket and key, and the credentials come from the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), or the machine's role)"
        );
        assert!(!err.contains("secret"));
    }
}

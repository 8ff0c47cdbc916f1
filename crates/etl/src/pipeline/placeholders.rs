//! Placeholders in an export's `out` (and `orders_out`): `{date}`, the run's
//! UTC date (`2026-11-28`), and `{run}`, the run's start in UTC to the
//! second (`20261128T065100Z`), so that each scheduled run writes its own
//! file or object, as lake tables and external tables read them:
//! `out = "s3://lake/receivers/date={date}/part-0000.parquet"`.
//!
//! Decision: any other `{...}`, or a `{` without its `}`, is refused when
//! the step is read (the pipeline's file:line:col, or the flag), naming the
//! placeholders there are: a typo must not write a file named `{dat}`.

use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

/// The placeholders and what each becomes (for messages and docs).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("{date}", "the run's UTC date, YYYY-MM-DD"),
    ("{run}", "the run's start in UTC, YYYYMMDDTHHMMSSZ"),
];

fn valid() -> String {
    PLACEHOLDERS
        .iter()
        .map(|(p, what)| format!("{p} ({what})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses an unknown placeholder or an unclosed `{`.
pub fn check(out: &str) -> Result<(), String> {
    let mut rest = out;
    while let Some(at) = rest.find('{') {
        let after = &rest[at..];
        let Some(end) = after.find('}') else {
            return Err(format!(
                "\"{out}\" has a `{{` without its `}}`; the placeholders are: {}",
                valid()
            ));
        };
        let name = &after[..=end];
        if !PLACEHOLDERS.iter().any(|(p, _)| *p == name) {
            return Err(format!(
                "unknown placeholder \"{name}\" in \"{out}\"; the placeholders are: {}",
                valid()
            ));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

/// `out` with its placeholders filled in for a run started at `at`.
pub fn expand(out: &Path, at: DateTime<Utc>) -> PathBuf {
    let text = out.to_string_lossy();
    if !text.contains('{') {
        return out.to_path_buf();
    }
    PathBuf::from(
        text.replace("{date}", &at.format("%Y-%m-%d").to_string())
            .replace("{run}", &at.format("%Y%m%dT%H%M%SZ").to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_and_run_are_filled_in_and_anything_else_is_refused_naming_the_choices() {
        let at = DateTime::from_timestamp(1_795_848_660, 0).unwrap();
        assert_eq!(
            expand(Path::new("s3://lake/r/date={date}/part-{run}.parquet"), at),
            Path::new("s3://lake/r/date=2026-11-28/part-20261128T065100Z.parquet")
        );
        assert!(check("out/date={date}/{run}.csv").is_ok());
        assert_eq!(
            check("out/{dat}.csv").unwrap_err(),
            "unknown placeholder \"{dat}\" in \"out/{dat}.csv\"; the placeholders are: {date} (the run's UTC date, YYYY-MM-DD), {run} (the run's start in UTC, YYYYMMDDTHHMMSSZ)"
        );
        assert!(
            check("out/{date.csv")
                .unwrap_err()
                .contains("without its `}`")
        );
    }
}

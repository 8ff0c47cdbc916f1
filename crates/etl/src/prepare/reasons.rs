//! Why rows were rejected, in a form a person reads in a summary: each reject reason
//! (`invalid birthday`, `wrong number of fields`) keeps its first row as an example, so
//! `check` and the run's summary say what went wrong without opening the rejects file.
//! Values and messages are cut: a 1 MB cell must not become a 1 MB summary line.

use serde::Serialize;

/// The longest value an example shows in full (in characters).
pub const SHOWN_CHARS: usize = 80;
/// The longest reason an example shows in full: reasons are listpipe's own sentences, but
/// may quote a value.
pub const SHOWN_REASON_CHARS: usize = 240;

/// The first row rejected for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RejectExample {
    /// The row number as a spreadsheet shows it.
    pub row: u64,
    /// The source file or sheet, when the step read more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The field (receiver field, attribute or order field) that failed; empty for a row
    /// that could not be read as a row.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
    /// The value as read, cut to [`SHOWN_CHARS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The reason written to the rejects file, cut to [`SHOWN_REASON_CHARS`].
    pub reason: String,
}

/// `text` cut to [`SHOWN_CHARS`] characters, saying how long it was when cut.
pub fn cut(text: &str) -> String {
    cut_to(text, SHOWN_CHARS)
}

/// A reason cut to [`SHOWN_REASON_CHARS`] characters.
pub fn cut_reason(text: &str) -> String {
    cut_to(text, SHOWN_REASON_CHARS)
}

fn cut_to(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}... ({n} characters)")
}

impl RejectExample {
    /// The example as the summaries show it: `row 3 (a.csv), birthday "0.0.00": reason`.
    pub fn describe(&self) -> String {
        let mut s = format!("row {}", self.row);
        if let Some(file) = &self.file {
            s.push_str(&format!(" of {file}"));
        }
        if !self.field.is_empty() {
            s.push_str(&format!(", {}", self.field));
        }
        if let Some(value) = &self.value {
            s.push_str(&format!(" \"{value}\""));
        }
        format!("{s}: {}", self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_say_their_length() {
        assert_eq!(cut("short"), "short");
        let long = "x".repeat(100);
        assert_eq!(
            cut(&long),
            format!("{}... (100 characters)", "x".repeat(80))
        );
    }

    #[test]
    fn an_example_names_row_file_field_value_and_reason() {
        let e = RejectExample {
            row: 4,
            file: Some("b.csv".into()),
            field: "birthday".into(),
            value: Some("0.0.00".into()),
            reason: "\"0.0.00\" is not a date".into(),
        };
        assert_eq!(
            e.describe(),
            "row 4 of b.csv, birthday \"0.0.00\": \"0.0.00\" is not a date"
        );
    }
}

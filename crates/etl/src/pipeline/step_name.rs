//! Step names become file names: the journal, the mirror ledger, the
//! default rejects file and the plan are named after their step. A name is
//! checked once, at parse time, so that `../escape` or `CON` never reaches
//! a path; the rule is a short list of what is allowed, said in the error.

/// What a step name may hold, as the error says it.
pub(super) const ALLOWED: &str =
    "use letters, digits, spaces, `-`, `_` and `.` (not first), up to 100 characters";

/// Names Windows reserves for devices, with or without an extension.
const RESERVED: &[&str] = &[
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// Why `name` cannot name a step's files, or `None` when it can.
pub(super) fn problem(name: &str) -> Option<String> {
    let why = if name.trim().is_empty() {
        "it is empty".to_string()
    } else if name.chars().count() > 100 {
        "it is longer than 100 characters".to_string()
    } else if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        format!("it contains {c:?}, a folder separator")
    } else if name.starts_with('.') {
        "it starts with a dot".to_string()
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.')))
    {
        match c {
            c if c.is_control() => format!("it contains the control character {c:?}"),
            c => format!("it contains {c:?}"),
        }
    } else if name.ends_with(['.', ' ']) {
        "it ends with a dot or a space".to_string()
    } else if RESERVED.contains(
        &name
            .split('.')
            .next()
            .unwrap_or("")
            .trim()
            .to_lowercase()
            .as_str(),
    ) {
        "it is a reserved device name".to_string()
    } else {
        return None;
    };
    Some(format!(
        "step name {name:?} cannot name the step's files: {why}; {ALLOWED}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass_and_path_like_ones_do_not() {
        for ok in ["people", "import-1", "Kunden 2024", "crm_export.v2", "Büro"] {
            assert_eq!(problem(ok), None, "{ok}");
        }
        for bad in [
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "..",
            "",
            "tab\there",
            "CON",
            "nul.txt",
            "x:y",
            "end.",
        ] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
    }
}

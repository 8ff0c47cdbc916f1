//! A mapping that names a header the file writes more than once is refused: which copy
//! would it read? The source numbers every copy (`Phone_1`, `Phone_2`, see
//! [`crate::source::Repeated`]) and the refusal names each copy's position and name, so
//! the fix is one word in the pipeline.

use crate::source::Repeated;
use std::path::PathBuf;

/// Why `column` cannot be read, when a file of the source has it as a header more than
/// once (and it is not also a column name of its own); `None` otherwise.
pub(super) fn refusal(
    column: &str,
    columns: &[String],
    repeated: &[(PathBuf, Repeated)],
) -> Option<String> {
    if columns.iter().any(|c| c == column) {
        return None;
    }
    let (file, r) = repeated.iter().find(|(_, r)| r.name == column)?;
    let file = file.file_name().map_or_else(
        || file.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let positions: Vec<String> = r.columns.iter().map(|(at, _)| at.to_string()).collect();
    let names: Vec<String> = r
        .columns
        .iter()
        .map(|(at, name)| format!("\"{name}\" (column {at})"))
        .collect();
    Some(format!(
        "\"{column}\" is a header {} times in {file} (columns {}): which one to read is not guessed; name one by its number: {}",
        r.columns.len(),
        listed(&positions, "and"),
        listed(&names, "or"),
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., end] => format!("{} {last} {end}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_written_twice_is_refused_naming_both_copies() {
        let repeated = vec![(
            PathBuf::from("/data/contacts.csv"),
            Repeated {
                name: "Phone".into(),
                columns: vec![(4, "Phone_1".into()), (9, "Phone_2".into())],
            },
        )];
        let columns = ["Phone_1".to_string(), "Phone_2".to_string()];
        assert_eq!(
            refusal("Phone", &columns, &repeated).unwrap(),
            "\"Phone\" is a header 2 times in contacts.csv (columns 4 and 9): which one to read is not guessed; name one by its number: \"Phone_1\" (column 4) or \"Phone_2\" (column 9)"
        );
        assert_eq!(refusal("Phone_2", &columns, &repeated), None);
        assert_eq!(refusal("Email", &columns, &repeated), None);
    }
}

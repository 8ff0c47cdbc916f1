//! `format = "%d.%m.%Y"`: what one entry of a `format` list may be (a
//! chrono format, `unix` or `excel`), read from its spelling alone. The
//! parser checks each entry with it where the entry's position is known,
//! and [`super::Times`] compiles the entries from it.

use chrono::format::{Item, StrftimeItems};

/// One `format` entry, read.
#[derive(Debug, Clone)]
pub enum FormatEntry {
    /// A chrono format's items.
    Chrono(Vec<Item<'static>>),
    /// `unix`: whole Unix seconds.
    Unix,
    /// `excel`: a spreadsheet serial day.
    Excel,
}

/// Reads one `format` entry; the error says what is wrong with it, for the
/// pipeline file's message.
pub fn format_entry(spelling: &str) -> Result<FormatEntry, String> {
    match spelling {
        "unix" => Ok(FormatEntry::Unix),
        "excel" => Ok(FormatEntry::Excel),
        _ => StrftimeItems::new(spelling)
            .parse_to_owned()
            .map(FormatEntry::Chrono)
            .map_err(|_| {
                format!("\"{spelling}\" is not a chrono format (such as \"%d.%m.%Y %H:%M\"), \"unix\" or \"excel\"")
            }),
    }
}

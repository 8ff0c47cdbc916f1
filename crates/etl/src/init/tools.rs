//! Which tool wrote the file: the headers matched against `rules::TOOL_EXPORTS`. A tool
//! whose export has a preset is read by that preset rather than by a mapping of our own.

use super::rules::{TOOL_EXPORTS, ToolExport};

/// The preset whose signature headers are all among `columns` (any case), if one is.
pub(super) fn preset_for(columns: &[String]) -> Option<&'static ToolExport> {
    TOOL_EXPORTS.iter().find(|t| {
        t.all
            .iter()
            .all(|h| columns.iter().any(|c| c.trim().eq_ignore_ascii_case(h)))
    })
}

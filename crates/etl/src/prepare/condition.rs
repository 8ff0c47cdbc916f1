//! `only_if` evaluated on the rows of a table: the condition is bound to the table's
//! columns once, then asked row by row.

use crate::pipeline::Condition;
use crate::source::{FILE_COL, Table};
use polars::prelude::*;

/// A condition bound to a table.
pub(super) enum RowTest<'a> {
    /// The cell (trimmed, empty when null) is one of `values`; `negate` flips it.
    Values {
        cells: Option<&'a StringChunked>,
        values: &'a [String],
        negate: bool,
    },
    /// Whether the row's file has the column, by file index.
    InFile {
        files: Option<&'a UInt32Chunked>,
        has: Vec<bool>,
    },
    All(Vec<RowTest<'a>>),
    Any(Vec<RowTest<'a>>),
}

impl<'a> RowTest<'a> {
    pub(super) fn new(table: &'a Table, c: &'a Condition) -> Self {
        // A column the file lacks is empty on every row (the parser checked the names the
        // user wrote; a preset's may be absent).
        let cells = |column: &str| table.frame.column(column).ok().and_then(|c| c.str().ok());
        match c {
            Condition::Equals { column, values } => RowTest::Values {
                cells: cells(column),
                values,
                negate: false,
            },
            Condition::NotEquals { column, values } => RowTest::Values {
                cells: cells(column),
                values,
                negate: true,
            },
            Condition::InFile { column, present } => RowTest::InFile {
                files: table.frame.column(FILE_COL).ok().and_then(|c| c.u32().ok()),
                has: table
                    .file_columns
                    .iter()
                    .map(|cols| cols.iter().any(|c| c == column) == *present)
                    .collect(),
            },
            Condition::All(cs) => RowTest::All(cs.iter().map(|c| Self::new(table, c)).collect()),
            Condition::Any(cs) => RowTest::Any(cs.iter().map(|c| Self::new(table, c)).collect()),
        }
    }

    /// Whether row `i` qualifies.
    pub(super) fn holds(&self, i: usize) -> bool {
        match self {
            RowTest::Values {
                cells,
                values,
                negate,
            } => {
                let cell = cells.and_then(|c| c.get(i)).unwrap_or("").trim();
                values.iter().any(|v| v.trim() == cell) != *negate
            }
            RowTest::InFile { files, has } => files
                .and_then(|f| f.get(i))
                .and_then(|f| has.get(f as usize))
                .copied()
                .unwrap_or(false),
            RowTest::All(tests) => tests.iter().all(|t| t.holds(i)),
            RowTest::Any(tests) => tests.iter().any(|t| t.holds(i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{self, SourceSpec};

    #[test]
    fn conditions_read_cells_files_and_combine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.csv"), "email,opt\na@x.de,Yes\nb@x.de,\n").unwrap();
        std::fs::write(
            dir.path().join("b.csv"),
            "email,UNSUB_TIME\nc@x.de,2024-01-01\n",
        )
        .unwrap();
        let spec = SourceSpec {
            paths: vec!["*.csv".into()],
            ..Default::default()
        };
        let table = source::read(&spec, dir.path()).unwrap();
        let check = |c: Condition| {
            let t = RowTest::new(&table, &c);
            (0..3).map(|i| t.holds(i)).collect::<Vec<_>>()
        };
        let opt = |values: &[&str], negate| {
            let values = values.iter().map(|v| v.to_string()).collect();
            let column = "opt".to_string();
            if negate {
                Condition::NotEquals { column, values }
            } else {
                Condition::Equals { column, values }
            }
        };
        assert_eq!(check(opt(&["Yes"], false)), [true, false, false]);
        assert_eq!(
            check(opt(&[""], false)),
            [false, true, true],
            "empty cells are \"\""
        );
        assert_eq!(check(opt(&["Yes"], true)), [false, true, true]);
        let unsub = |present| Condition::InFile {
            column: "UNSUB_TIME".into(),
            present,
        };
        assert_eq!(check(unsub(true)), [false, false, true]);
        assert_eq!(
            check(Condition::All(vec![unsub(false), opt(&["Yes"], true)])),
            [false, true, false]
        );
        assert_eq!(
            check(Condition::Any(vec![unsub(true), opt(&["Yes"], false)])),
            [true, false, true]
        );
        let missing = Condition::Equals {
            column: "nowhere".into(),
            values: vec!["x".into()],
        };
        assert_eq!(check(missing), [false, false, false]);
    }
}

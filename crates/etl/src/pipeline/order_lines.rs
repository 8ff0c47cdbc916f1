//! `duplicate_lines` of `[import.orders]`: what two order lines of one receiver with the
//! same order id and product id become. The target keeps one line per receiver, order and
//! product, so sending both would make the later overwrite the earlier there, unsaid, and
//! every later run of the same file would send the receiver again. The choice is made
//! here, counted by `check` and `run` (`order lines merged`), and never silent.

use super::parse::Parser;
use super::reader::{Table, choices};

const CHOICES: &[&str] = &["sum", "first", "last"];

/// What order lines sharing a receiver, an order id and a product id become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicateLines {
    /// One line: the quantities added up (a line without one counts as 1), the price the
    /// quantity-weighted mean when the prices differ (so the order's total is kept), the
    /// other fields the first line's. What a shop's export means by two such lines: the
    /// same product bought twice in one order (an event's price option booked twice).
    #[default]
    Sum,
    /// The first line in file order; the later ones are dropped (and counted).
    First,
    /// The last line in file order, as the target would keep it; the earlier ones are
    /// dropped (and counted).
    Last,
}

impl DuplicateLines {
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateLines::Sum => "sum",
            DuplicateLines::First => "first",
            DuplicateLines::Last => "last",
        }
    }
}

impl Parser<'_> {
    /// `duplicate_lines` of the orders table `o` (`sum` when absent).
    pub(super) fn duplicate_lines(&mut self, o: &Table) -> DuplicateLines {
        let Some(v) = o.str(&mut self.ctx, "duplicate_lines") else {
            return DuplicateLines::default();
        };
        match v.get_ref().to_ascii_lowercase().as_str() {
            "sum" => DuplicateLines::Sum,
            "first" => DuplicateLines::First,
            "last" => DuplicateLines::Last,
            other => {
                self.ctx.error(
                    v.span(),
                    format!(
                        "unknown duplicate_lines \"{other}\"; valid values: {}",
                        choices(CHOICES)
                    ),
                );
                DuplicateLines::default()
            }
        }
    }
}

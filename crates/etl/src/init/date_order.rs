//! The order of day and month in date columns that read both ways (`5/6/2012 15:53`):
//! decided from the values where they can (`dates`), else from the tool whose export it
//! is (US systems write month first: [`rules::MONTH_FIRST_TOOLS`]), else asked; unanswered,
//! the column stays ambiguous and `render` writes it so that such values are left out
//! until the user decides, never rejecting every row.

use super::ask::{Answer, Ask, Choices, Question};
use super::columns::Role;
use super::dates::{DateFormat, readings};
use super::rules;

/// The tool whose export the headers are, when it writes month first.
pub(super) fn month_first_tool(columns: &[String]) -> Option<&'static str> {
    let has = |h: &str| {
        let h = rules::normalise(h);
        columns.iter().any(|c| rules::normalise(c) == h)
    };
    rules::MONTH_FIRST_TOOLS
        .iter()
        .find(|t| t.all.iter().all(|h| has(h)))
        .map(|t| t.tool)
}

/// Whether a format writes the month before the day.
fn month_first(format: &str) -> bool {
    match (
        format
            .find("%m")
            .or(format.find("%b"))
            .or(format.find("%B")),
        format.find("%d"),
    ) {
        (Some(m), Some(d)) => m < d,
        _ => false,
    }
}

/// The first of `formats` that writes the day first (`false`) or the month first (`true`).
pub(super) fn pick(formats: &[&'static str], month: bool) -> Option<&'static str> {
    formats.iter().copied().find(|f| month_first(f) == month)
}

/// The date format of a role, if it has one.
fn date_of(role: &mut Role) -> Option<&mut DateFormat> {
    match role {
        Role::Registered(d) | Role::ConsentTime(d) => Some(d),
        Role::WithdrawalTime(d)
        | Role::Named { date: d, .. }
        | Role::Attribute { date: d, .. }
        | Role::Order { date: d, .. } => d.as_mut(),
        _ => None,
    }
}

/// Settles every ambiguous date of `roles` by the tool, else by one question for the file
/// (a file writes its dates one way). Returns, per column settled, the comment that says how.
pub(super) fn settle(
    roles: &mut [Role],
    columns: &[String],
    ask: &mut dyn Ask,
) -> Vec<(usize, String)> {
    let tool = month_first_tool(columns);
    let mut said = Vec::new();
    // `Some(true)`: month first, `Some(false)`: day first; decided once for the file.
    let mut order: Option<bool> = tool.map(|_| true);
    let mut asked = false;
    for (i, role) in roles.iter_mut().enumerate() {
        let Some(d) = date_of(role) else { continue };
        let DateFormat::Ambiguous { formats, example } = d.clone() else {
            continue;
        };
        if order.is_none() && !asked {
            asked = true;
            order = ask_order(&columns[i], &example, &formats, ask);
        }
        let Some(month) = order else { continue };
        let Some(format) = pick(&formats, month) else {
            continue;
        };
        *d = DateFormat::One(format);
        let why = match tool {
            Some(t) => format!(
                "\"{}\" reads day first and month first alike (\"{example}\"): read month first ({format}), as {t} writes its dates.",
                columns[i]
            ),
            None => format!(
                "\"{}\" is written {} ({format}): answered at init.",
                columns[i],
                if month { "month first" } else { "day first" }
            ),
        };
        said.push((i, why));
    }
    said
}

/// Asks how the file writes its dates; `None`: not answered or not sure.
fn ask_order(
    column: &str,
    example: &str,
    formats: &[&'static str],
    ask: &mut dyn Ask,
) -> Option<bool> {
    let (day, month) = (pick(formats, false)?, pick(formats, true)?);
    let read = |f: &'static str| {
        readings(example, &[f])
            .first()
            .map(|(date, _)| date.clone())
            .unwrap_or_default()
    };
    let question = Question {
        text: format!(
            "\"{column}\": \"{example}\" reads day first and month first alike. How does the file write its dates?"
        ),
        choices: Choices::One(vec![
            "not sure: leave such values out until I decide".into(),
            format!("day first: {} ({day})", read(day)),
            format!("month first: {} ({month})", read(month)),
        ]),
    };
    match ask.ask(&question)? {
        Answer::One(1) => Some(false),
        Answer::One(2) => Some(true),
        _ => None,
    }
}

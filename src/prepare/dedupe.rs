//! Duplicates of the normalised email, resolved with polars as the step
//! says: keep the first row, the last, or merge (the first row with its
//! empty values filled from later rows).

use crate::pipeline::{Dedupe, ReceiverField};
use polars::prelude::*;

pub fn dedupe(frame: DataFrame, how: Dedupe) -> PolarsResult<DataFrame> {
    let email = ReceiverField::Email.as_str();
    match how {
        Dedupe::First => {
            frame.unique_stable(Some(&[email.to_string()]), UniqueKeepStrategy::First, None)
        }
        Dedupe::Last => {
            frame.unique_stable(Some(&[email.to_string()]), UniqueKeepStrategy::Last, None)
        }
        Dedupe::Merge => {
            let others: Vec<Expr> = frame
                .get_column_names()
                .into_iter()
                .filter(|n| n.as_str() != email)
                .map(|n| col(n.clone()).drop_nulls().first())
                .collect();
            let order: Vec<String> = frame
                .get_column_names()
                .into_iter()
                .map(|n| n.to_string())
                .collect();
            frame
                .lazy()
                .group_by_stable([col(email)])
                .agg(others)
                .collect()?
                .select(order)
        }
    }
}

/// The rows `dedupe` drops (row number and address), before it runs.
pub fn dropped_rows(frame: &DataFrame, how: Dedupe) -> PolarsResult<Vec<(u64, String)>> {
    let emails = frame.column(ReceiverField::Email.as_str())?.str()?;
    let rows = frame.column(crate::source::ROW_COL)?.u32()?;
    let mut seen = std::collections::HashSet::new();
    let mut order: Vec<usize> = (0..frame.height()).collect();
    if how == Dedupe::Last {
        order.reverse();
    }
    let mut dropped = Vec::new();
    for i in order {
        if let Some(e) = emails.get(i)
            && !seen.insert(e)
        {
            dropped.push((rows.get(i).unwrap_or(0) as u64, e.to_string()));
        }
    }
    dropped.sort();
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> DataFrame {
        df!(
            "email" => ["a@x.de", "b@x.de", "a@x.de"],
            "city" => [None, Some("Bonn"), Some("Köln")],
            "name" => [Some("Anna"), Some("Ben"), Some("Anne")],
        )
        .unwrap()
    }

    fn column(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn first_keeps_the_first_row_of_each_address() {
        let df = dedupe(frame(), Dedupe::First).unwrap();
        assert_eq!(
            column(&df, "name"),
            [Some("Anna".into()), Some("Ben".into())]
        );
    }

    #[test]
    fn last_keeps_the_last_row_of_each_address() {
        let df = dedupe(frame(), Dedupe::Last).unwrap();
        assert_eq!(
            column(&df, "email"),
            [Some("b@x.de".into()), Some("a@x.de".into())]
        );
        assert_eq!(
            column(&df, "name"),
            [Some("Ben".into()), Some("Anne".into())]
        );
    }

    #[test]
    fn merge_fills_empty_values_from_later_rows() {
        let df = dedupe(frame(), Dedupe::Merge).unwrap();
        assert_eq!(
            column(&df, "email"),
            [Some("a@x.de".into()), Some("b@x.de".into())]
        );
        assert_eq!(
            column(&df, "city"),
            [Some("Köln".into()), Some("Bonn".into())]
        );
        assert_eq!(
            column(&df, "name"),
            [Some("Anna".into()), Some("Ben".into())]
        );
    }
}

//! Duplicates of the normalised email in a source read whole, resolved
//! with polars as the step says: keep the first row, the last, or merge (the
//! first row with its empty values filled from later rows). Read in chunks,
//! `first` asks the addresses kept so far ([`crate::key_store::KeyStore`]),
//! `last` the row kept of each address ([`super::last_rows::LastRows`]) and
//! `merge` the merged values of each ([`super::merged_rows::MergedRows`]);
//! these functions are the reference all three are tested against.

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

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        type Row = (String, Option<String>, Option<String>);

        fn rows() -> impl Strategy<Value = Vec<Row>> {
            let value = prop::option::of(prop::sample::select(&["x", "y", "z"][..]));
            prop::collection::vec((0..4u8, value.clone(), value), 0..16).prop_map(|v| {
                v.into_iter()
                    .map(|(e, a, b)| {
                        (
                            format!("{e}@x.de"),
                            a.map(str::to_string),
                            b.map(str::to_string),
                        )
                    })
                    .collect()
            })
        }

        fn frame(rows: &[Row]) -> DataFrame {
            let emails: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
            let city: Vec<Option<&str>> = rows.iter().map(|r| r.1.as_deref()).collect();
            let name: Vec<Option<&str>> = rows.iter().map(|r| r.2.as_deref()).collect();
            let numbers: Vec<u32> = (0..rows.len() as u32).map(|i| i + 2).collect();
            df!(
                "email" => emails,
                "city" => city,
                "name" => name,
                crate::source::ROW_COL => numbers,
            )
            .unwrap()
        }

        fn read(df: &DataFrame) -> Vec<(Row, u32)> {
            let text = |n: &str| -> Vec<Option<String>> {
                df.column(n)
                    .unwrap()
                    .str()
                    .unwrap()
                    .iter()
                    .map(|v| v.map(str::to_string))
                    .collect()
            };
            let (e, c, n) = (text("email"), text("city"), text("name"));
            let rows = df.column(crate::source::ROW_COL).unwrap().u32().unwrap();
            (0..df.height())
                .map(|i| {
                    (
                        (e[i].clone().unwrap(), c[i].clone(), n[i].clone()),
                        rows.get(i).unwrap(),
                    )
                })
                .collect()
        }

        /// The reference: which input rows each strategy keeps, in output order.
        fn kept(rows: &[Row], how: Dedupe) -> Vec<(Row, u32)> {
            let mut firsts: Vec<usize> = Vec::new();
            for (i, r) in rows.iter().enumerate() {
                if !firsts.iter().any(|&j| rows[j].0 == r.0) {
                    firsts.push(i);
                }
            }
            let number = |i: usize| i as u32 + 2;
            match how {
                Dedupe::First => firsts
                    .iter()
                    .map(|&i| (rows[i].clone(), number(i)))
                    .collect(),
                Dedupe::Last => {
                    let mut lasts: Vec<usize> = firsts
                        .iter()
                        .map(|&f| rows.iter().rposition(|r| r.0 == rows[f].0).unwrap())
                        .collect();
                    lasts.sort();
                    lasts
                        .iter()
                        .map(|&i| (rows[i].clone(), number(i)))
                        .collect()
                }
                Dedupe::Merge => firsts
                    .iter()
                    .map(|&f| {
                        let same: Vec<&Row> = rows.iter().filter(|r| r.0 == rows[f].0).collect();
                        let city = same.iter().find_map(|r| r.1.clone());
                        let name = same.iter().find_map(|r| r.2.clone());
                        ((rows[f].0.clone(), city, name), number(f))
                    })
                    .collect(),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

            #[test]
            fn each_strategy_keeps_what_the_reference_keeps(
                rows in rows(),
                how in prop::sample::select(&[Dedupe::First, Dedupe::Last, Dedupe::Merge][..]),
            ) {
                let df = frame(&rows);
                let dropped = dropped_rows(&df, how).unwrap();
                let out = read(&dedupe(df, how).unwrap());
                let want = kept(&rows, how);
                prop_assert_eq!(&out, &want);
                if how != Dedupe::Merge {
                    let kept_numbers: Vec<u32> = want.iter().map(|k| k.1).collect();
                    let mut want_dropped: Vec<(u64, String)> = rows
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !kept_numbers.contains(&(*i as u32 + 2)))
                        .map(|(i, r)| (i as u64 + 2, r.0.clone()))
                        .collect();
                    want_dropped.sort();
                    prop_assert_eq!(dropped, want_dropped);
                }
            }
        }
    }
}

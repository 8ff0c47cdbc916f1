//! Order lines of one receiver with the same order id and product id, made one as
//! `duplicate_lines` says ([`DuplicateLines`]). The target keeps one line per receiver,
//! order and product: sent as they are, the later would overwrite the earlier there,
//! unsaid, and the receiver would differ from its file on every later run. Merged here,
//! each receiver is sent what the target will hold, and the lines folded are counted.

use super::order_store::UNIT;
use super::orders::OrderLines;
use crate::pipeline::DuplicateLines;
use std::sync::Arc;

/// The fields of a line, in [`crate::pipeline::OrderField::ALL`] order.
const ORDER_ID: usize = 0;
const PRODUCT_ID: usize = 1;
const PRICE: usize = 3;
const QUANTITY: usize = 5;

/// `lines` with every receiver's lines of one order and product made one; and how many
/// lines were folded into another. The same lines (no rebuild) when no receiver has two.
pub(super) fn merge(lines: Arc<OrderLines>, how: DuplicateLines) -> (Arc<OrderLines>, u64) {
    if !lines.groups().any(|(_, texts)| has_duplicates(&texts)) {
        return (lines, 0);
    }
    let mut out = OrderLines::with_keys(lines.keys().clone());
    let mut folded = 0;
    for (key, texts) in lines.groups() {
        if !has_duplicates(&texts) {
            texts.iter().for_each(|t| out.push(key, t));
            continue;
        }
        // Each (order, product) in the order it first appears, with all its lines.
        let mut same: Vec<Vec<Vec<&str>>> = Vec::new();
        for text in &texts {
            let fields = split(text);
            match same.iter_mut().find(|g| id(&g[0]) == id(&fields)) {
                Some(g) => g.push(fields),
                None => same.push(vec![fields]),
            }
        }
        for copies in same {
            folded += copies.len() as u64 - 1;
            out.push(key, &joined(&one_of(&copies, how)));
        }
    }
    (Arc::new(out.seal()), folded)
}

/// Whether two of one receiver's lines share an order id and product id. A receiver
/// has a handful of lines: comparing each pair costs less than a set.
fn has_duplicates(texts: &[&str]) -> bool {
    let ids: Vec<(&str, &str)> = texts.iter().map(|t| id(&split(t))).collect();
    ids.iter()
        .enumerate()
        .any(|(i, a)| ids[i + 1..].contains(a))
}

fn split(text: &str) -> Vec<&str> {
    text.split(UNIT).collect()
}

fn id<'a>(fields: &[&'a str]) -> (&'a str, &'a str) {
    let at = |i: usize| fields.get(i).copied().unwrap_or("");
    (at(ORDER_ID), at(PRODUCT_ID))
}

fn joined(fields: &[String]) -> String {
    let mut text = String::new();
    for f in fields.iter().take(crate::pipeline::OrderField::ALL.len()) {
        text.push_str(f);
        text.push(UNIT);
    }
    text
}

/// Field `i` of a line, empty when it has none.
fn field<'a>(line: &[&'a str], i: usize) -> &'a str {
    line.get(i).copied().unwrap_or("")
}

/// The one line `lines` (of one receiver, order and product, in file order) become.
fn one_of(lines: &[Vec<&str>], how: DuplicateLines) -> Vec<String> {
    let owned = |l: &Vec<&str>| l.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    let (first, last) = (&lines[0], &lines[lines.len() - 1]);
    match how {
        DuplicateLines::First => owned(first),
        DuplicateLines::Last => owned(last),
        DuplicateLines::Sum => {
            let mut one = owned(first);
            // A line without a quantity is one item, as it is when sent alone.
            let quantity = |l: &Vec<&str>| field(l, QUANTITY).parse::<i64>().unwrap_or(1);
            let price = |l: &Vec<&str>| field(l, PRICE).parse::<f64>().unwrap_or(0.0);
            let total: i64 = lines.iter().map(quantity).sum();
            if let Some(q) = one.get_mut(QUANTITY) {
                *q = total.to_string();
            }
            let prices_differ = lines.iter().any(|l| field(l, PRICE) != field(first, PRICE));
            if prices_differ && let Some(p) = one.get_mut(PRICE) {
                let sum: f64 = lines.iter().map(|l| price(l) * quantity(l) as f64).sum();
                let mean = if total == 0 {
                    lines.iter().map(price).sum::<f64>() / lines.len() as f64
                } else {
                    sum / total as f64
                };
                // Four decimals: a cent's hundredth, and the same text on every run.
                *p = ((mean * 10_000.0).round() / 10_000.0).to_string();
            }
            one
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listpipe_base::hash::Key128;

    fn line(fields: [&str; 8]) -> String {
        joined(&fields.map(str::to_string))
    }

    fn lines(of: &[(&str, [&str; 8])]) -> Arc<OrderLines> {
        let keys = Key128::default();
        let mut l = OrderLines::with_keys(keys.clone());
        for (email, fields) in of {
            l.push(keys.of(email), &line(*fields));
        }
        Arc::new(l.seal())
    }

    fn summary(l: &OrderLines, email: &str) -> Vec<(String, String, f64, i64)> {
        l.of(email)
            .unwrap_or_default()
            .into_iter()
            .map(|o| (o.order_id, o.product_id, o.price, o.quantity))
            .collect()
    }

    const A: &str = "a@example.com";

    #[test]
    fn two_lines_of_one_order_and_product_are_summed_by_default() {
        let l = lines(&[
            (A, ["E1", "early", "Ticket", "10", "EUR", "2", "", ""]),
            (A, ["E1", "late", "Ticket", "15", "EUR", "1", "", ""]),
            (A, ["E1", "early", "Ticket", "10", "EUR", "1", "", ""]),
        ]);
        let (merged, folded) = merge(l, DuplicateLines::default());
        assert_eq!(folded, 1);
        assert_eq!(
            summary(&merged, A),
            [
                ("E1".into(), "early".into(), 10.0, 3),
                ("E1".into(), "late".into(), 15.0, 1)
            ]
        );
    }

    #[test]
    fn differing_prices_sum_to_the_same_total() {
        let l = lines(&[
            (A, ["0", "", "Sofa", "1700.93", "EUR", "1", "", ""]),
            (A, ["0", "", "Lamp", "42.60", "EUR", "", "", ""]),
        ]);
        let (merged, folded) = merge(l, DuplicateLines::Sum);
        assert_eq!(folded, 1);
        assert_eq!(summary(&merged, A), [("0".into(), "".into(), 871.765, 2)]);
    }

    #[test]
    fn first_and_last_keep_one_line_and_count_the_others() {
        let of = [
            (A, ["0", "", "Sofa", "1700.93", "EUR", "1", "", ""]),
            (A, ["0", "", "Lamp", "42.60", "EUR", "1", "", ""]),
            (
                "b@example.com",
                ["0", "", "Lamp", "42.60", "EUR", "1", "", ""],
            ),
        ];
        let (first, n) = merge(lines(&of), DuplicateLines::First);
        assert_eq!(n, 1);
        assert_eq!(summary(&first, A), [("0".into(), "".into(), 1700.93, 1)]);
        let (last, n) = merge(lines(&of), DuplicateLines::Last);
        assert_eq!(n, 1);
        assert_eq!(summary(&last, A), [("0".into(), "".into(), 42.6, 1)]);
        assert_eq!(summary(&last, "b@example.com").len(), 1);
    }

    #[test]
    fn lines_without_duplicates_are_left_as_they_are() {
        let l = lines(&[
            (A, ["1", "p", "", "", "", "", "", ""]),
            ("b@example.com", ["1", "p", "", "", "", "", "", ""]),
        ]);
        let (merged, folded) = merge(l.clone(), DuplicateLines::Sum);
        assert_eq!(folded, 0);
        assert!(Arc::ptr_eq(&l, &merged));
    }
}

//! Property tests of the filter rule engine: random receivers and random
//! rules of every logic value, the SQL the engine compiles against a plain
//! Rust evaluation of the same rules. Driven through the store API on a
//! temp-file database, no HTTP.

use listpipe_api::filter::{Rule, RuntimeFilter};
use listpipe_api::{AttributeInput, AttributeType, GroupInput, ReceiverInput};
use listpipe_server::store::{self, AccountId, Store};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const TEXT_VALUES: &[&str] = &[
    "", " ", "a", "A", "ab", "aB c", "Herr", "FRAU", " m ", "x_y", "50%", "10", "b\\", "Ä", "ä",
];
const NUMBER_VALUES: &[&str] = &["", "10", "2.5", "2,5", "-3", "0", "1e3", "007", ".5", "+4"];
const POINTS: &[i64] = &[0, 3, 10, -1];
const CONDITIONS: &[&str] = &[
    "", "a", "A", "ab", "b", "Herr", "m", "x_y", "%", "_", "50%", "10", "2,5", "2.5", "-3", "0",
    "1000", "abc", "inf", "ä", "r1", "@x.de", "R2@X.DE",
];
const FIELDS: &[&str] = &["city", "score", "source", "points", "email"];

/// One receiver as the reference sees it.
#[derive(Debug, Clone)]
struct Person {
    city: &'static str,
    score: &'static str,
    source: &'static str,
    points: i64,
}

fn person() -> impl Strategy<Value = Person> {
    (
        prop::sample::select(TEXT_VALUES),
        prop::sample::select(NUMBER_VALUES),
        prop::sample::select(TEXT_VALUES),
        prop::sample::select(POINTS),
    )
        .prop_map(|(city, score, source, points)| Person {
            city,
            score,
            source,
            points,
        })
}

fn rule() -> impl Strategy<Value = Rule> {
    (
        prop::sample::select(FIELDS),
        prop::sample::select(listpipe_server::store::filters::rules::LOGICS),
        any::<bool>(),
        prop::sample::select(CONDITIONS),
    )
        .prop_map(|(field, logic, upper, condition)| Rule {
            field: field.into(),
            logic: if upper {
                logic.to_ascii_uppercase()
            } else {
                logic.into()
            },
            condition: condition.into(),
        })
}

/// A field's value as stored: `None` is SQL NULL (no attribute value).
enum Stored {
    Text(Option<String>),
    /// A number attribute: its canonical text, `None` when empty.
    Number(Option<String>),
    /// `points`: a receiver column, never NULL, 0 is empty.
    Points(i64),
}

fn stored(p: &Person, i: usize, field: &str) -> Stored {
    match field {
        "city" => Stored::Text(Some(p.city.to_string()).filter(|v| !v.trim().is_empty())),
        "score" => Stored::Number(Some(p.score.trim().replace(',', ".")).filter(|v| !v.is_empty())),
        "source" => Stored::Text(Some(p.source.to_string())),
        "points" => Stored::Points(p.points),
        _ => Stored::Text(Some(email(i))),
    }
}

fn email(i: usize) -> String {
    format!("r{i}@x.de")
}

/// SQLite's text of the value (what CAST(.. AS TEXT), LIKE and LOWER see).
fn text_of(v: &Stored) -> Option<String> {
    match v {
        Stored::Text(t) | Stored::Number(t) => t.clone(),
        Stored::Points(n) => Some(n.to_string()),
    }
}

/// SQLite's LIKE, LOWER and NOCASE fold ASCII letters only.
fn fold(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// The reference: does receiver `i` match `rule`? `Err` for a rule the
/// engine must refuse. NULL comparisons are false, as in a WHERE clause.
fn matches(p: &Person, i: usize, rule: &Rule) -> Result<bool, ()> {
    let logic = rule.logic.to_ascii_lowercase();
    let cond = rule.condition.trim();
    let v = stored(p, i, &rule.field);
    let text = text_of(&v);
    let is_empty = match &v {
        Stored::Points(n) => *n == 0,
        other => text_of(other).is_none_or(|t| t.is_empty()),
    };
    Ok(match logic.as_str() {
        "isnull" => is_empty,
        "notisnull" => !is_empty,
        "ismale" | "isfemale" => {
            let list = if logic == "ismale" {
                listpipe_server::store::filters::rules::MALE
            } else {
                listpipe_server::store::filters::rules::FEMALE
            };
            let t = fold(text.as_deref().unwrap_or("").trim_matches(' '));
            list.contains(&t.as_str())
        }
        "contains" | "begins" | "ends" => match text {
            None => false,
            Some(t) => {
                let (t, c) = (fold(&t), fold(cond));
                match logic.as_str() {
                    "contains" => t.contains(&c),
                    "begins" => t.starts_with(&c),
                    _ => t.ends_with(&c),
                }
            }
        },
        _ => {
            let ord = match &v {
                Stored::Text(t) => t.as_ref().map(|t| fold(t).cmp(&fold(cond))),
                numeric => {
                    let n = match cond.replace(',', ".").parse::<f64>() {
                        Ok(n) if n.is_finite() => n,
                        _ => return Err(()),
                    };
                    let value = match numeric {
                        Stored::Points(p) => Some(*p as f64),
                        _ => text_of(numeric).map(|t| t.parse::<f64>().expect("stored number")),
                    };
                    value.map(|x| x.partial_cmp(&n).expect("finite"))
                }
            };
            match (logic.as_str(), ord) {
                ("neq", None) => true,
                (_, None) => false,
                ("eq", Some(o)) => o.is_eq(),
                ("neq", Some(o)) => o.is_ne(),
                ("sm", Some(o)) => o.is_lt(),
                (_, Some(o)) => o.is_gt(),
            }
        }
    })
}

fn reference(people: &[Person], rules: &[Rule], or: bool) -> Result<BTreeSet<String>, ()> {
    // A bad condition is refused whether or not any receiver exists.
    let anyone = Person {
        city: "",
        score: "",
        source: "",
        points: 0,
    };
    for r in rules {
        matches(&anyone, 0, r)?;
    }
    let mut out = BTreeSet::new();
    for (i, p) in people.iter().enumerate() {
        let results = rules
            .iter()
            .map(|r| matches(p, i, r))
            .collect::<Result<Vec<bool>, ()>>()?;
        let hit = if or {
            results.iter().any(|b| *b)
        } else {
            results.iter().all(|b| *b)
        };
        if hit {
            out.insert(email(i));
        }
    }
    Ok(out)
}

/// The emails the store's runtime filter selects, or its error message.
fn selected(people: &[Person], rules: &[Rule], or: bool) -> Result<BTreeSet<String>, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("p.db")).expect("store opens");
    let people = people.to_vec();
    let rules = rules.to_vec();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(store.write(move |c| {
        let (app, _) = store::accounts::create_account(c, "props")?;
        let account: AccountId = app.account;
        let group = store::groups::create(c, account, &GroupInput::named("G"))?;
        for (name, kind) in [
            ("city", AttributeType::Text),
            ("score", AttributeType::Number),
        ] {
            store::attributes::create(c, account, 0, &AttributeInput::new(name, kind))?;
        }
        for (i, p) in people.iter().enumerate() {
            let attrs: BTreeMap<String, String> = [
                ("city".to_string(), p.city.to_string()),
                ("score".to_string(), p.score.to_string()),
            ]
            .into();
            let input = ReceiverInput {
                source: Some(p.source.into()),
                points: Some(p.points),
                global_attributes: Some(attrs),
                ..ReceiverInput::email(email(i))
            };
            store::receivers::create(c, account, group.id.0, &input)?;
        }
        let filter = RuntimeFilter {
            rules: Some(rules.clone()),
            operator: Some(if or { "OR" } else { "AND" }.into()),
            pagesize: Some(500),
            ..Default::default()
        };
        Ok(store::filters::runtime(c, account, &filter)
            .map(|rs| rs.into_iter().map(|r| r.email).collect::<BTreeSet<_>>())
            .map_err(|e| e.to_string()))
    }))
    .expect("fixture written")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_rule_engine_selects_what_a_plain_evaluation_selects(
        people in prop::collection::vec(person(), 0..12),
        rules in prop::collection::vec(rule(), 1..4),
        or in any::<bool>(),
    ) {
        let want = reference(&people, &rules, or);
        let got = selected(&people, &rules, or);
        match (want, got) {
            (Ok(w), Ok(g)) => prop_assert_eq!(g, w),
            (Err(()), Err(msg)) => prop_assert!(msg.contains("is not a number"), "{msg}"),
            (w, g) => prop_assert!(false, "reference {w:?}, engine {g:?}"),
        }
    }
}

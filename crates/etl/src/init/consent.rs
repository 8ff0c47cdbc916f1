//! Consent, decided from what the file records and nothing else: a status or flag column
//! whose every value is understood (see `rules::YES_VALUES`, `NO_VALUES`,
//! `WITHDRAWN_VALUES`) activates the rows marked subscribed and deactivates the rows marked
//! withdrawn; a withdrawal date deactivates. A consent column holding values `init` does not
//! understand activates nobody, and the comment quotes the values for the user to decide.
//! A row the file does not mark as subscribed is never active.

use super::columns::Role;
use super::dates::DateFormat;
use super::rules;
use super::sample::Sample;
use std::collections::BTreeSet;

/// One `only_if` test.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    pub column: String,
    pub equals: bool,
    pub values: Vec<String>,
}

/// Where a state's time comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Columns(Vec<String>, Option<DateFormat>),
    Now,
}

/// A state mapping: `activated` or `deactivated`.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub when: When,
    /// All of `all` hold, and one of `any` (when not empty).
    pub any: Vec<Test>,
    pub all: Vec<Test>,
}

/// What `init` decided about consent, with the comments that explain it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Consent {
    pub activated: Option<State>,
    pub deactivated: Option<State>,
    pub comments: Vec<String>,
    /// What the user must decide (empty: nothing).
    pub decide: Vec<String>,
}

/// The distinct trimmed values of column `i`, in order of first appearance.
fn distinct(sample: &Sample, i: usize) -> Vec<String> {
    let mut seen = BTreeSet::new();
    sample
        .values(i)
        .filter(|v| seen.insert(v.to_string()))
        .map(str::to_string)
        .take(50)
        .collect()
}

fn is_in(v: &str, list: &[&str]) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(v.trim()))
}

/// The quoted list of a column's values for a comment: `"1", "0"`.
pub fn quoted(values: &[String]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Decides consent from the roles `columns` gave.
pub fn decide(
    sample: &Sample,
    roles: &[Role],
    registered: Option<(String, DateFormat)>,
) -> Consent {
    let mut c = Consent::default();
    let mut yes: Vec<Test> = Vec::new();
    let mut withdrawn: Vec<Test> = Vec::new();
    let mut unclear = false;
    let mut consent_time: Option<(String, DateFormat)> = None;
    let mut withdrawal_time: Option<(String, Option<DateFormat>)> = None;
    for (i, role) in roles.iter().enumerate() {
        let column = sample.columns[i].clone();
        match role {
            Role::ConsentTime(d) if consent_time.is_none() => {
                consent_time = Some((column, d.clone()));
            }
            Role::WithdrawalTime(d) if withdrawal_time.is_none() => {
                c.comments.push(format!(
                    "\"{column}\" records a withdrawal: a row with a date there is deactivated."
                ));
                withdrawal_time = Some((column, d.clone()));
            }
            Role::ConsentFlag => {
                let values = distinct(sample, i);
                let unknown: Vec<String> = values
                    .iter()
                    .filter(|v| {
                        !is_in(v, rules::YES_VALUES)
                            && !is_in(v, rules::NO_VALUES)
                            && !is_in(v, rules::WITHDRAWN_VALUES)
                    })
                    .cloned()
                    .collect();
                let mut ys: Vec<String> = values
                    .iter()
                    .filter(|v| is_in(v, rules::YES_VALUES))
                    .cloned()
                    .collect();
                if ys.is_empty() {
                    ys = values
                        .iter()
                        .filter_map(|v| rules::YES_OF_NO.iter().find(|(no, _)| no == v))
                        .map(|(_, yes)| yes.to_string())
                        .collect();
                    if !ys.is_empty() {
                        c.comments.push(format!(
                            "No row read is marked subscribed in \"{column}\"; rows marked {} would be.",
                            quoted(&ys)
                        ));
                    }
                }
                let ws: Vec<String> = values
                    .iter()
                    .filter(|v| is_in(v, rules::WITHDRAWN_VALUES) && !is_in(v, rules::YES_VALUES))
                    .cloned()
                    .collect();
                if !unknown.is_empty() {
                    unclear = true;
                    c.comments.push(format!(
                        "\"{column}\" looks like consent; its values: {}.",
                        quoted(&values)
                    ));
                    c.decide.push(format!(
                        "which values of \"{column}\" mean the person subscribed ({} are not understood); then add activated with only_if = {{ column = \"{column}\", equals = [...] }}",
                        quoted(&unknown)
                    ));
                    continue;
                }
                c.comments.push(format!(
                    "\"{column}\" records consent; its values: {}.",
                    quoted(&values)
                ));
                if !ys.is_empty() {
                    yes.push(Test {
                        column: column.clone(),
                        equals: true,
                        values: ys,
                    });
                }
                if !ws.is_empty() {
                    withdrawn.push(Test {
                        column,
                        equals: true,
                        values: ws,
                    });
                }
            }
            Role::WithdrawalFlag => {
                let values = distinct(sample, i);
                let ys: Vec<String> = values
                    .iter()
                    .filter(|v| is_in(v, rules::YES_VALUES))
                    .cloned()
                    .collect();
                c.comments.push(format!(
                    "\"{column}\" records a withdrawal or a block; its values: {}.",
                    quoted(&values)
                ));
                if !ys.is_empty() {
                    withdrawn.push(Test {
                        column,
                        equals: true,
                        values: ys,
                    });
                }
            }
            _ => {}
        }
    }
    if let Some((column, _)) = &withdrawal_time {
        withdrawn.push(Test {
            column: column.clone(),
            equals: false,
            values: vec![String::new()],
        });
    }

    // The time of consent: the confirmation, else the sign-up, else the run's time.
    let activation_time = consent_time
        .clone()
        .or(registered.clone())
        .map(|(col, d)| When::Columns(vec![col], Some(d)))
        .unwrap_or(When::Now);
    if unclear {
        c.comments
            .push("Nobody is activated until you decide what the column means.".into());
    } else if !yes.is_empty() {
        // A column already tested for its yes-values needs no second test.
        let all = withdrawn
            .iter()
            .filter(|t| !yes.iter().any(|y| y.column == t.column))
            .map(|t| Test {
                column: t.column.clone(),
                equals: !t.equals,
                values: t.values.clone(),
            })
            .collect();
        c.activated = Some(State {
            when: activation_time,
            any: yes,
            all,
        });
        c.comments.push(
            "Only rows marked subscribed are activated; the others are registered and wait for a double opt-in.".into(),
        );
    } else if let Some((column, d)) = consent_time {
        // A confirmation time is consent on record by itself.
        c.comments.push(format!(
            "\"{column}\" records when the person confirmed: rows with a time there are activated."
        ));
        let all = withdrawn
            .iter()
            .map(|t| Test {
                column: t.column.clone(),
                equals: !t.equals,
                values: t.values.clone(),
            })
            .collect();
        c.activated = Some(State {
            when: When::Columns(vec![column], Some(d)),
            any: Vec::new(),
            all,
        });
    } else {
        c.comments.push(
            "No column records consent: nobody is activated, every row is registered and waits for a double opt-in.".into(),
        );
        c.decide.push(
            "the file records no consent: if everyone on it has opted in, set activated = { value = \"now\" }".into(),
        );
    }
    if !withdrawn.is_empty() {
        let when = match (&withdrawal_time, withdrawn.len()) {
            (Some((column, d)), 1) => When::Columns(vec![column.clone()], d.clone()),
            (Some((column, d)), _) => {
                let mut cols = vec![column.clone()];
                if let Some((r, _)) = &registered {
                    cols.push(r.clone());
                    c.comments.push(format!(
                        "A withdrawn row without a date in \"{column}\" takes \"{r}\" as its deactivation time."
                    ));
                }
                When::Columns(cols, d.clone())
            }
            (None, _) => match &registered {
                Some((r, d)) => {
                    c.comments.push(format!(
                        "The file has no withdrawal date: withdrawn rows take \"{r}\" as their deactivation time."
                    ));
                    When::Columns(vec![r.clone()], Some(d.clone()))
                }
                None => When::Now,
            },
        };
        c.deactivated = Some(State {
            when,
            any: withdrawn,
            all: Vec::new(),
        });
    }
    c
}

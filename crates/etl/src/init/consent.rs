//! Consent, decided from what the file records and nothing else. A column grants email
//! consent only when what it says is unambiguous: its values are subscription words
//! (`subscribed`, `unsubscribed`, `cleaned`, ... in the service's languages), or its name
//! speaks of email, newsletter or marketing consent and its values are yes or no. A record's
//! or account's state (`Active`/`Inactive`), a paid plan, another channel's or a partner's
//! permission is never consent: at most a question ([`super::ask`]), else a `DECIDE`.
//! Opt-out evidence (an unsubscribe date or status, `email_disabled = true`, do not email,
//! blacklisted, bounced) deactivates whenever it is clear, and wins over a grant on the same
//! row. A row the file does not mark as subscribed is never active. The tables are in
//! `rules/consent.rs`; this module holds no names of its own.

use super::ask::{Answer, Ask, Choices, Question};
use super::columns::Role;
use super::dates::DateFormat;
use super::rules::consent as table;
use super::sample::Sample;

mod counted;
mod questions;
mod read;

use counted::{holds, rows_where, summary};
pub(super) use read::read;

/// One `only_if` test.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Test {
    pub column: String,
    pub equals: bool,
    pub values: Vec<String>,
}

/// Where a state's time comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum When {
    /// The first of these columns not empty on the row; with `or_now`, the run's time when
    /// they are all empty (written `default = "now"`).
    Columns {
        columns: Vec<String>,
        format: Option<DateFormat>,
        or_now: bool,
    },
    Now,
}

/// A state mapping: `activated` or `deactivated`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct State {
    pub when: When,
    /// All of `all` hold, and one of `any` (when not empty).
    pub any: Vec<Test>,
    pub all: Vec<Test>,
}

/// How a column that may be consent is read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reading {
    /// Its values say it: rows holding one of `grant` subscribed, one of `withdraw` opted out.
    Known {
        how: String,
        grant: Vec<String>,
        withdraw: Vec<String>,
    },
    /// A record's or account's state (`Active`/`Inactive`): consent only if the user says
    /// so; `grant` and `withdraw` are what a yes would read.
    State {
        grant: Vec<String>,
        withdraw: Vec<String>,
    },
    /// Named like consent, with values `init` does not understand: the user picks the
    /// values that mean subscribed.
    Unknown,
    /// Named like consent, but another column is the file's email consent.
    Superseded { by: String },
}

/// What `init` decided about consent, with the comments that explain it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Consent {
    pub activated: Option<State>,
    pub deactivated: Option<State>,
    pub comments: Vec<String>,
    /// What the user must decide (empty: nothing).
    pub decide: Vec<Decide>,
    /// Per column used, what it was read as and what it makes of the rows read.
    pub summary: Vec<String>,
}

/// A decision left to the user: what to decide, and the pipeline lines each answer other
/// than the one written would put in place (commented out, ready to use).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decide {
    pub text: String,
    pub lines: Vec<String>,
}

impl Decide {
    fn new(text: String) -> Decide {
        Decide {
            text,
            lines: Vec::new(),
        }
    }
}

/// The distinct trimmed values of column `i` with their counts, most frequent first (ties
/// in order of first appearance).
pub(super) fn counts(sample: &Sample, i: usize) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for v in sample.values(i) {
        match out.iter_mut().find(|(seen, _)| seen == v) {
            Some((_, n)) => *n += 1,
            None => out.push((v.to_string(), 1)),
        }
    }
    out.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    out
}

/// `Active 5, Inactive 2`.
pub(super) fn with_counts(counts: &[(String, usize)]) -> String {
    let shown: Vec<String> = counts
        .iter()
        .take(12)
        .map(|(v, n)| format!("{v} {n}"))
        .collect();
    let more = counts.len().saturating_sub(12);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Whether `v` is one of `list`, trimmed, without case (any script), `_` and `-` read as
/// spaces: `NEVER_SUBSCRIBED` is `never subscribed`, `opted-in` is `opted in`.
pub(super) fn is_in(v: &str, list: &[&str]) -> bool {
    let key = |s: &str| s.trim().to_lowercase().replace(['_', '-'], " ");
    let v = key(v);
    list.iter().any(|x| key(x) == v)
}

/// The quoted list of a column's values for a comment: `"1", "0"`.
pub(super) fn quoted(values: &[String]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// With several columns granting consent, each of them must grant or be empty on the row:
/// a `List status` of `subscribed` beside a `Global status` of `unconfirmed` is no clear
/// consent. One column needs no second test.
fn agreeing(yes: &[Test]) -> Vec<Test> {
    if yes.len() < 2 {
        return Vec::new();
    }
    yes.iter()
        .map(|t| Test {
            column: t.column.clone(),
            equals: true,
            values: t.values.iter().cloned().chain([String::new()]).collect(),
        })
        .collect()
}

fn negated(tests: &[Test], except: &[Test]) -> Vec<Test> {
    tests
        .iter()
        .filter(|t| !except.iter().any(|y| y.column == t.column))
        .map(|t| Test {
            column: t.column.clone(),
            equals: !t.equals,
            values: t.values.clone(),
        })
        .collect()
}

/// Decides consent from the roles `columns` gave, asking `ask` where the file does not say.
pub(super) fn decide(
    sample: &Sample,
    roles: &[Role],
    registered: Option<(String, DateFormat)>,
    ask: &mut dyn Ask,
) -> Consent {
    let mut e = Evidence::default();
    for (i, role) in roles.iter().enumerate() {
        e.take(sample, i, role, ask);
    }
    e.finish(sample, registered.as_ref(), ask)
}

/// What the columns say about consent, gathered column by column.
#[derive(Default)]
struct Evidence {
    c: Consent,
    /// Tests of which one marks a row subscribed.
    yes: Vec<Test>,
    /// Tests of which one marks a row opted out.
    withdrawn: Vec<Test>,
    /// A column may be consent and nobody said: nobody is activated.
    unclear: bool,
    /// Answered: everyone on the file opted in.
    everyone: bool,
    /// Unanswered account states, offered as lines once the activation time is known.
    pending: Vec<Pending>,
    consent_time: Option<(String, DateFormat)>,
    withdrawal_time: Option<(String, Option<DateFormat>)>,
    /// What each column used was read as, for the summary.
    reads: Vec<(String, String)>,
}

/// An account state left to the user: its `decide` entry and what a yes would read.
struct Pending {
    entry: usize,
    column: String,
    grant: Vec<String>,
    withdraw: Vec<String>,
}

fn test(column: &str, values: Vec<String>) -> Test {
    Test {
        column: column.to_string(),
        equals: true,
        values,
    }
}

impl Evidence {
    /// Takes in what column `i` says.
    fn take(&mut self, sample: &Sample, i: usize, role: &Role, ask: &mut dyn Ask) {
        let column = sample.columns[i].as_str();
        let values = || counts(sample, i);
        match role {
            Role::ConsentTime(d) if self.consent_time.is_none() => {
                self.consent_time = Some((column.to_string(), d.clone()));
            }
            Role::WithdrawalTime(d) if self.withdrawal_time.is_none() => {
                self.c.comments.push(format!(
                    "\"{column}\" records a withdrawal: a row with a date there is deactivated."
                ));
                self.read_as(column, "an opt-out date");
                self.withdrawal_time = Some((column.to_string(), d.clone()));
            }
            Role::WithdrawalFlag => {
                // Any value but a no is an opt-out (`1`, `true`, `Unsubscribed (email)`):
                // deactivating on a doubt sends nobody a newsletter.
                let values = values();
                let outs: Vec<String> = values
                    .iter()
                    .filter(|(v, _)| {
                        !is_in(v, table::NO_VALUES) && !is_in(v, table::SUBSCRIBED_VALUES)
                    })
                    .map(|(v, _)| v.clone())
                    .collect();
                self.c.comments.push(format!(
                    "\"{column}\" records a withdrawal or a block; its values: {}.",
                    with_counts(&values)
                ));
                if !outs.is_empty() {
                    self.withdrawn.push(test(column, outs));
                }
                self.read_as(column, "an opt-out flag");
            }
            Role::Consent(Reading::Known {
                how,
                grant,
                withdraw,
            }) => {
                let values = values();
                let names: Vec<String> = values.iter().map(|(v, _)| v.clone()).collect();
                self.c.comments.push(format!(
                    "\"{column}\" records consent; its values: {}. Read as {how} ({}).",
                    quoted(&names),
                    with_counts(&values)
                ));
                self.read_as(column, how);
                self.grant(column, grant, withdraw);
            }
            Role::Consent(Reading::State { grant, withdraw }) => {
                self.ask_state(column, &values(), grant, withdraw, ask);
            }
            Role::Consent(Reading::Unknown) => self.ask_values(column, &values(), ask),
            Role::Consent(Reading::Superseded { by }) => self.c.comments.push(format!(
                "\"{column}\" is not read as email consent: \"{by}\" is the file's (a permission such as partner offers would otherwise subscribe people who never asked for the newsletter)."
            )),
            _ => {}
        }
    }

    fn read_as(&mut self, column: &str, how: &str) {
        self.reads.push((column.to_string(), how.to_string()));
    }

    fn grant(&mut self, column: &str, grant: &[String], withdraw: &[String]) {
        if !grant.is_empty() {
            self.yes.push(test(column, grant.to_vec()));
        }
        if !withdraw.is_empty() {
            self.withdrawn.push(test(column, withdraw.to_vec()));
        }
    }

    /// The states, the lines offered for what is undecided, and the summary.
    fn finish(
        mut self,
        sample: &Sample,
        registered: Option<&(String, DateFormat)>,
        ask: &mut dyn Ask,
    ) -> Consent {
        if let Some((column, _)) = &self.withdrawal_time {
            self.withdrawn.push(Test {
                column: column.clone(),
                equals: false,
                values: vec![String::new()],
            });
        }
        let when = activation_time(self.consent_time.as_ref(), registered);
        self.offer_pending(&when);
        self.activation(when, ask);
        self.deactivation(registered);
        self.summarise(sample);
        self.c
    }

    /// The lines a "yes, it is consent" would write, for each unanswered state.
    fn offer_pending(&mut self, when: &When) {
        for p in &self.pending {
            let mut lines = Vec::new();
            if !p.grant.is_empty() {
                let state = State {
                    when: when.clone(),
                    any: vec![test(&p.column, p.grant.clone())],
                    all: negated(&self.withdrawn, &[]),
                };
                lines.push(format!("activated = {}", super::render::state(&state)));
            }
            if !p.withdraw.is_empty() {
                let state = State {
                    when: When::Now,
                    any: vec![test(&p.column, p.withdraw.clone())],
                    all: Vec::new(),
                };
                lines.push(format!("deactivated = {}", super::render::state(&state)));
            }
            if let Some(d) = self.c.decide.get_mut(p.entry) {
                d.lines = lines;
            }
        }
    }

    /// `activated`: the rows marked subscribed, else those with a confirmation time, else
    /// (asked) everyone, else nobody.
    fn activation(&mut self, when: When, ask: &mut dyn Ask) {
        let c = &mut self.c;
        if !self.yes.is_empty() {
            c.activated = Some(State {
                when,
                all: agreeing(&self.yes)
                    .into_iter()
                    .chain(negated(&self.withdrawn, &self.yes))
                    .collect(),
                any: self.yes.clone(),
            });
            c.comments.push(
                "Only rows marked subscribed are activated; the others are registered and wait for a double opt-in.".into(),
            );
        } else if let Some((column, d)) = &self.consent_time {
            // A confirmation time is consent on record by itself.
            c.comments.push(format!(
                "\"{column}\" records when the person confirmed: rows with a time there are activated."
            ));
            self.yes.push(Test {
                column: column.clone(),
                equals: false,
                values: vec![String::new()],
            });
            self.reads
                .push((column.clone(), "the confirmation time".into()));
            c.activated = Some(State {
                when: When::Columns {
                    columns: vec![column.clone()],
                    format: Some(d.clone()),
                    or_now: false,
                },
                any: Vec::new(),
                all: negated(&self.withdrawn, &[]),
            });
        } else if self.unclear {
            c.comments
                .push("Nobody is activated until you decide what the column means.".into());
        } else {
            let question = Question {
                text: "Nothing in the file records consent to receive email. Has everyone on it opted in (if you are not sure: no)?".into(),
                choices: Choices::YesNo,
            };
            match ask.ask(&question) {
                Some(Answer::Yes(true)) => {
                    c.comments.push(
                        "Everyone on the file opted in to receive email: answered at init.".into(),
                    );
                    c.activated = Some(State {
                        when,
                        any: Vec::new(),
                        all: negated(&self.withdrawn, &[]),
                    });
                    self.everyone = true;
                }
                answered => {
                    c.comments.push(
                        "No column records consent: nobody is activated, every row is registered and waits for a double opt-in.".into(),
                    );
                    if answered.is_none() {
                        c.decide.push(Decide::new(
                            "the file records no consent: if everyone on it has opted in, set activated = { value = \"now\" }".into(),
                        ));
                    }
                }
            }
        }
    }

    /// `deactivated`: the rows opted out, at the withdrawal date, else the sign-up date,
    /// else the run's time.
    fn deactivation(&mut self, registered: Option<&(String, DateFormat)>) {
        if self.withdrawn.is_empty() {
            return;
        }
        let by_flag = self.withdrawn.len() > usize::from(self.withdrawal_time.is_some());
        let when = match (&self.withdrawal_time, by_flag) {
            (Some((column, d)), false) => When::Columns {
                columns: vec![column.clone()],
                format: d.clone(),
                or_now: false,
            },
            (Some((column, d)), true) => {
                let mut columns = vec![column.clone()];
                if let Some((r, rd)) = registered
                    && Some(rd) == d.as_ref()
                {
                    columns.push(r.clone());
                    self.c.comments.push(format!(
                        "A withdrawn row without a date in \"{column}\" takes \"{r}\" as its deactivation time."
                    ));
                }
                When::Columns {
                    columns,
                    format: d.clone(),
                    or_now: true,
                }
            }
            (None, _) => match registered {
                Some((r, d)) => {
                    self.c.comments.push(format!(
                        "The file has no withdrawal date: withdrawn rows take \"{r}\" as their deactivation time."
                    ));
                    When::Columns {
                        columns: vec![r.clone()],
                        format: Some(d.clone()),
                        or_now: true,
                    }
                }
                None => When::Now,
            },
        };
        self.c.deactivated = Some(State {
            when,
            any: self.withdrawn.clone(),
            all: Vec::new(),
        });
    }

    /// What the states make of the rows read, per column and in all, and the rows whose
    /// opt-out wins over a grant.
    fn summarise(&mut self, sample: &Sample) {
        let marked = rows_where(sample, &self.yes);
        let opted_out = rows_where(sample, &self.withdrawn);
        let granted: Vec<bool> = match &self.c.activated {
            None => vec![false; sample.rows],
            Some(a) => (0..sample.rows)
                .map(|r| (self.everyone || marked[r]) && a.all.iter().all(|t| holds(sample, t, r)))
                .collect(),
        };
        self.c.summary = summary(
            sample,
            &self.reads,
            (&self.yes, &self.withdrawn),
            &granted,
            &opted_out,
        );
        let both = (0..sample.rows)
            .filter(|&r| (self.everyone || marked[r]) && opted_out[r])
            .count();
        if both > 0 {
            let line = format!(
                "{both} row(s) marked subscribed also record an opt-out: they are deactivated, not activated (an opt-out wins)."
            );
            self.c.comments.push(line.clone());
            self.c.summary.push(format!("consent: {line}"));
        }
    }
}

/// The time of consent: the confirmation, else the sign-up (the first of them not empty
/// on the row, when they are written alike), else the run's time.
fn activation_time(
    consent_time: Option<&(String, DateFormat)>,
    registered: Option<&(String, DateFormat)>,
) -> When {
    match (consent_time, registered) {
        (Some((ct, cd)), Some((r, rd))) if cd == rd => When::Columns {
            columns: vec![ct.clone(), r.clone()],
            format: Some(cd.clone()),
            or_now: true,
        },
        (Some((col, d)), _) | (None, Some((col, d))) => When::Columns {
            columns: vec![col.clone()],
            format: Some(d.clone()),
            or_now: true,
        },
        (None, None) => When::Now,
    }
}

//! The questions consent asks where the file does not say: whether a record's state is
//! consent, and which values of a column named like consent mean subscribed. Unanswered,
//! each becomes a `DECIDE`.

use super::super::ask::{Answer, Ask, Choices, Question};
use super::{Decide, Evidence, Pending, quoted, test, with_counts};

impl Evidence {
    /// A record's or account's state: consent only if the user says so.
    pub(super) fn ask_state(
        &mut self,
        column: &str,
        values: &[(String, usize)],
        grant: &[String],
        withdraw: &[String],
        ask: &mut dyn Ask,
    ) {
        let shown = with_counts(values);
        let question = Question {
            text: format!(
                "\"{column}\": {shown}. Is this consent to receive email? It reads like a customer's or account's state"
            ),
            choices: Choices::YesNo,
        };
        match ask.ask(&question) {
            Some(Answer::Yes(true)) => {
                self.c.comments.push(format!(
                    "\"{column}\" ({shown}) is consent to receive email: answered at init."
                ));
                self.read_as(column, "consent, as answered");
                self.grant(column, grant, withdraw);
            }
            Some(_) => self.c.comments.push(format!(
                "\"{column}\" ({shown}) is not consent to receive email: answered at init."
            )),
            None => {
                self.unclear = true;
                self.c.comments.push(format!(
                    "\"{column}\" holds {shown}: a customer's or account's state, which says nothing about email."
                ));
                self.pending.push(Pending {
                    entry: self.c.decide.len(),
                    column: column.to_string(),
                    grant: grant.to_vec(),
                    withdraw: withdraw.to_vec(),
                });
                self.c.decide.push(Decide::new(format!(
                    "is \"{column}\" ({shown}) consent to receive email? As written, nobody is activated from it; if it is, use the lines below instead"
                )));
            }
        }
    }

    /// A column named like consent with values `init` does not understand: the user
    /// picks the values that mean subscribed.
    pub(super) fn ask_values(
        &mut self,
        column: &str,
        values: &[(String, usize)],
        ask: &mut dyn Ask,
    ) {
        let names: Vec<String> = values.iter().map(|(v, _)| v.clone()).collect();
        let shown = with_counts(values);
        let question = Question {
            text: format!(
                "\"{column}\": {shown}. Which of these values mean the person subscribed to email? (none: it is not consent)"
            ),
            choices: Choices::Many(names.clone()),
        };
        match ask.ask(&question) {
            Some(Answer::Many(picked)) if !picked.is_empty() => {
                let grant: Vec<String> = picked
                    .iter()
                    .filter_map(|&k| names.get(k).cloned())
                    .collect();
                self.c.comments.push(format!(
                    "\"{column}\" records consent where it holds {}: answered at init.",
                    quoted(&grant)
                ));
                self.read_as(column, "consent, as answered");
                self.yes.push(test(column, grant));
            }
            Some(_) => self.c.comments.push(format!(
                "\"{column}\" ({shown}) is not consent to receive email: answered at init."
            )),
            None => {
                self.unclear = true;
                self.c.comments.push(format!(
                    "\"{column}\" looks like consent; its values: {}.",
                    quoted(&names)
                ));
                self.c.decide.push(Decide::new(format!(
                    "which values of \"{column}\" mean the person subscribed ({shown} are not understood); then add activated with only_if = {{ column = \"{column}\", equals = [...] }}"
                )));
            }
        }
    }
}

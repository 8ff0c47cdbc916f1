//! Parts of a mapped step as `init` writes them: the address column when several
//! qualify, the consent lines, the columns left out, numbers Excel mangled.

use super::columns::{self, Role};
use super::render::comment;
use super::{Writer, ask, consent, render, sample};
use ask::Ask;

/// The columns not imported, each with why, and the secrets in the summary.
pub(super) fn write_left_out(w: &mut Writer, sample: &sample::Sample, roles: &[Role]) {
    let col = |i: usize| sample.columns[i].as_str();
    let left_out: Vec<String> = roles
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Role::Secret(why) => Some(format!("\"{}\": {why}", col(i))),
            Role::Empty => Some(format!("\"{}\": empty in the rows read", col(i))),
            Role::Noise => Some(format!(
                "\"{}\": describes the export, not the person",
                col(i)
            )),
            Role::OrderDetail => Some(format!(
                "\"{}\": describes the order, not the person",
                col(i)
            )),
            _ => None,
        })
        .collect();
    if !left_out.is_empty() {
        w.line("");
        w.line("# Not imported:");
        for l in &left_out {
            for line in comment(&format!("- {l}")) {
                w.line(&line);
            }
        }
    }
    for (i, r) in roles.iter().enumerate() {
        if let Role::Secret(_) = r {
            w.decided(format!("\"{}\" left out (a secret)", col(i)));
        }
    }
}

/// The consent lines of `[import.receiver]`: the comments that explain them, each
/// `DECIDE` with the lines its other answer would write, the states and their counts.
pub(super) fn write_consent(w: &mut Writer, consent: &consent::Consent) {
    for text in &consent.comments {
        w.comment(text);
    }
    for d in &consent.decide {
        w.comment(&format!("DECIDE: {}", d.text));
        for line in &d.lines {
            w.line(&format!("# {line}"));
        }
        w.look_at(format!("consent: {}", d.text));
    }
    if let Some(s) = &consent.activated {
        w.line(&format!("activated = {}", render::state(s)));
        w.decided(format!("activated = {}", render::state(s)));
    } else {
        w.decided("nobody activated (no consent the file records is understood)".into());
    }
    if let Some(s) = &consent.deactivated {
        w.line(&format!("deactivated = {}", render::state(s)));
        w.decided(format!("deactivated = {}", render::state(s)));
    }
    for line in &consent.summary {
        w.decided(line.clone());
    }
}

/// With several address columns, the receiver's is asked for (the one `columns` chose
/// first, the default); unanswered, that one is taken and the others are said.
pub(super) fn choose_address(roles: &mut [Role], sample: &sample::Sample, ask: &mut dyn Ask) {
    let mut candidates: Vec<usize> = (0..roles.len())
        .filter(|&i| matches!(roles[i], Role::Email { .. }))
        .collect();
    if candidates.len() < 2 {
        return;
    }
    candidates.sort_by_key(|&i| roles[i] != Role::Email { primary: true });
    let choices = candidates
        .iter()
        .map(|&i| {
            format!(
                "\"{}\" ({} addresses, e.g. {})",
                sample.columns[i],
                sample.values(i).filter(|v| columns::is_address(v)).count(),
                sample.values(i).next().unwrap_or("")
            )
        })
        .collect();
    let question = ask::Question {
        text: "Several columns hold addresses. Which is the receiver's?".into(),
        choices: ask::Choices::One(choices),
    };
    if let Some(ask::Answer::One(k)) = ask.ask(&question)
        && let Some(&chosen) = candidates.get(k)
    {
        for &i in &candidates {
            roles[i] = Role::Email {
                primary: i == chosen,
            };
        }
    }
}

/// A comment and a summary line when a column holds numbers Excel mangled.
pub(super) fn mangled_warning(w: &mut Writer, sample: &sample::Sample, i: usize) {
    let count = sample
        .values(i)
        .filter(|v| crate::prepare::mangled::is_scientific(v))
        .count();
    if count > 0 {
        let text = format!(
            "\"{}\" holds {count} number(s) in scientific notation: Excel dropped their digits; export the column as text from the original.",
            sample.columns[i]
        );
        w.comment(&text);
        w.look_at(text);
    }
}

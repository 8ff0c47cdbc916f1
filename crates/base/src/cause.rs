//! How an error reaches the user: its own message, then every cause under
//! it as a `caused by:` line, so a "cannot reach the target" still says
//! "Connection refused" or which certificate failed. Every subcommand and
//! `main.rs` print through [`report`]; rejects files and run reports, which
//! hold one line per row, use [`flat`].

use std::error::Error;
use std::fmt;

/// An owned cause of any kind, for errors that wrap what a library raised.
pub type Cause = Box<dyn Error + Send + Sync + 'static>;

/// An error and its causes, one per line:
/// `message` then `  caused by: cause` for each source in turn.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        for cause in causes(self.0) {
            write!(f, "\n  caused by: {cause}")?;
        }
        Ok(())
    }
}

/// The sources under `e`, nearest first. A cause whose text repeats the
/// one above it (a wrapper that only forwards) is shown once.
fn causes<'a>(e: &'a (dyn Error + 'static)) -> impl Iterator<Item = String> + 'a {
    let mut above = e.to_string();
    std::iter::successors(e.source(), next).filter_map(move |c| {
        let text = c.to_string();
        let repeated = above.ends_with(&text);
        above = text.clone();
        (!repeated).then_some(text)
    })
}

fn next<'a>(e: &&'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    let e: &'a (dyn Error + 'static) = *e;
    e.source()
}

/// The error and its causes on one line, joined with ": " (for a rejects
/// file's reason column or a report's field).
pub fn flat(e: &(dyn Error + 'static)) -> String {
    std::iter::once(e.to_string())
        .chain(causes(e))
        .collect::<Vec<_>>()
        .join(": ")
}

/// The innermost cause's text: what the operating system or the peer said
/// ("Connection refused (os error 111)").
pub fn root(e: &(dyn Error + 'static)) -> String {
    std::iter::successors(Some(e), next)
        .last()
        .map(|c| c.to_string())
        .unwrap_or_default()
}

/// Prints `listpipe: error: ` and the chain to stderr: the one way every
/// command reports an error that stops it (or one of its steps).
pub fn report(e: &(dyn Error + 'static)) {
    crate::errln!("listpipe: error: {}", Chain(e));
}

/// The same with a prefix naming where it happened (a step's name).
pub fn report_in(place: &str, e: &(dyn Error + 'static)) {
    crate::errln!("{}", in_place(place, e));
}

/// What [`report_in`] prints, as text (for a caller that keeps the lines).
pub fn in_place(place: &str, e: &(dyn Error + 'static)) -> String {
    format!("listpipe: {place}: {}", Chain(e))
}

/// Names for an error that lists what there is: `"a, b"`, or `"none"`.
pub fn listed<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot reach the target")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn chain_prints_every_cause_on_its_own_line() {
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused",
        ));
        assert_eq!(
            Chain(&e).to_string(),
            "cannot reach the target\n  caused by: Connection refused"
        );
        assert_eq!(flat(&e), "cannot reach the target: Connection refused");
        assert_eq!(root(&e), "Connection refused");
    }
}

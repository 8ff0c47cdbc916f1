//! The questions `init` asks where the file does not say: whether a column is consent to
//! receive email, which of its values mean subscribed, the order of a date's day and month,
//! which column is the address. The library only asks through [`Ask`]; the command line
//! answers in a terminal, and without one nothing is asked: the pipeline then holds a
//! `DECIDE` comment for each question instead.

/// One question, with the answers it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// What is asked, with the evidence: `"Status": Active 5, Inactive 2. Is this consent
    /// to receive email?`
    pub text: String,
    pub choices: Choices,
}

/// The answers a question takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Choices {
    /// Yes or no; no is the default (nobody is activated on a guess).
    YesNo,
    /// One of these; the first is the default.
    One(Vec<String>),
    /// Any of these, none by default.
    Many(Vec<String>),
}

/// An answer to a [`Question`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Yes(bool),
    /// The index of the choice taken.
    One(usize),
    /// The indexes of the choices taken.
    Many(Vec<usize>),
}

/// Who answers `init`'s questions. `None`: not answered, a `DECIDE` is written.
pub trait Ask {
    fn ask(&mut self, question: &Question) -> Option<Answer>;
}

/// Nobody to ask (no terminal): every question becomes a `DECIDE`.
pub struct NoQuestions;

impl Ask for NoQuestions {
    fn ask(&mut self, _: &Question) -> Option<Answer> {
        None
    }
}

/// Answers given in advance, in the order the questions come (tests, scripts).
pub struct Answers(pub std::collections::VecDeque<Answer>);

impl Ask for Answers {
    fn ask(&mut self, _: &Question) -> Option<Answer> {
        self.0.pop_front()
    }
}

//! The latest answers a 429 is judged among ([`super::Bucket::verdict`]).

use super::{RECENT, RECENT_SPAN};
use std::collections::VecDeque;
use tokio::time::Instant;

/// The most answers kept for the recent share (a second of them at 100,000
/// requests a second).
const RECENT_MAX: usize = 100_000;

/// The latest answers (true: a 429): the last [`RECENT`](super::RECENT), or those of the
/// last [`RECENT_SPAN`](super::RECENT_SPAN) when more, with the 429s among them counted.
#[derive(Default)]
pub(super) struct Recent {
    answers: VecDeque<(Instant, bool)>,
    pub(super) refused: usize,
}

impl Recent {
    pub(super) fn push(&mut self, now: Instant, refused: bool) {
        self.answers.push_back((now, refused));
        self.refused += usize::from(refused);
        while self.answers.len() > RECENT_MAX
            || (self.answers.len() > RECENT
                && self
                    .answers
                    .front()
                    .is_some_and(|(t, _)| now.saturating_duration_since(*t) > RECENT_SPAN))
        {
            if let Some((_, r)) = self.answers.pop_front() {
                self.refused -= usize::from(r);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.answers.len()
    }

    pub(super) fn share(&self) -> f64 {
        if self.answers.is_empty() {
            return 0.0;
        }
        self.refused as f64 / self.answers.len() as f64
    }

    pub(super) fn clear(&mut self) {
        self.answers.clear();
        self.refused = 0;
    }
}

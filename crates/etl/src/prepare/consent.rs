//! Consent is decided row by row. A receiver created with none of
//! `registered`, `activated` and `deactivated` is *active* (spec §3), so a row
//! that states no state of its own (its `activated` mapping's `only_if` did not
//! hold, its opt-in cell was empty) would be subscribed without consent. Such a
//! row is created *registered*, awaiting activation. `check` and `run` both
//! build the create body here, so the preview is the body that is sent.

use listpipe_api::ReceiverInput;

/// Whether the body states the receiver's state itself: a `registered`,
/// `activated` or `deactivated` time. Zero is "no time" on the wire
/// (`deactivated: 0` means "not deactivated"), so it states nothing.
pub fn states_consent(input: &ReceiverInput) -> bool {
    [input.registered, input.activated, input.deactivated]
        .into_iter()
        .flatten()
        .any(|t| t > 0)
}

/// The body that creates a receiver for this row: the row as mapped, and
/// `registered` at `run_time` when the row states no state of its own.
pub fn create_body(mut input: ReceiverInput, run_time: i64) -> ReceiverInput {
    if !states_consent(&input) {
        input.registered = Some(run_time);
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        registered: Option<i64>,
        activated: Option<i64>,
        deactivated: Option<i64>,
    ) -> ReceiverInput {
        ReceiverInput {
            email: Some("a@example.com".into()),
            registered,
            activated,
            deactivated,
            ..Default::default()
        }
    }

    #[test]
    fn a_row_without_a_state_is_created_registered_at_run_time() {
        assert_eq!(create_body(row(None, None, None), 7).registered, Some(7));
        assert_eq!(create_body(row(None, None, Some(0)), 7).registered, Some(7));
        assert_eq!(
            create_body(row(Some(0), Some(0), None), 7).registered,
            Some(7)
        );
    }

    #[test]
    fn a_row_with_a_state_is_sent_as_mapped() {
        for r in [
            row(Some(5), None, None),
            row(None, Some(5), None),
            row(None, None, Some(5)),
        ] {
            assert_eq!(create_body(r.clone(), 7), r);
        }
    }
}

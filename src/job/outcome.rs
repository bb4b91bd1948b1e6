//! How an item's execution ended, in the one vocabulary the history, the event stream, the
//! console, `shardcronctl history` and the error handlers' logs share: `success`, `failed`,
//! `timeout` (past `shardcron.timeout`) or `cancelled` (the item was taken away: a reshard, a
//! lost session, `shardcron.overlap: cancel_other`, a shutdown).

use serde::Serialize;

use super::JobError;

/// How an item's execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemOutcome {
    /// It succeeded.
    Success,
    /// It failed (its code reported an error, exited non-zero, panicked, could not start).
    Failed,
    /// It ran past `shardcron.timeout` and was ended.
    Timeout,
    /// It was cancelled before it finished.
    Cancelled,
}

impl ItemOutcome {
    /// Every outcome, in the order of the words.
    pub const ALL: [Self; 4] = [Self::Success, Self::Failed, Self::Timeout, Self::Cancelled];

    /// The outcome of an item's result.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardcron::job::{ItemOutcome, JobError};
    /// let timed_out = Err(JobError::TimedOut { after: Duration::from_secs(2) });
    /// assert_eq!(ItemOutcome::of(&timed_out), ItemOutcome::Timeout);
    /// assert_eq!(ItemOutcome::of(&Ok(())).as_str(), "success");
    /// ```
    pub fn of(result: &Result<(), JobError>) -> Self {
        match result {
            Ok(()) => Self::Success,
            Err(e) => Self::of_error(e),
        }
    }

    /// The outcome of an item that ended with `error`.
    pub fn of_error(error: &JobError) -> Self {
        match error {
            JobError::TimedOut { .. } => Self::Timeout,
            JobError::Cancelled(_) => Self::Cancelled,
            JobError::Failed(_)
            | JobError::Panicked(_)
            | JobError::Spawn { .. }
            | JobError::Exit { .. }
            | JobError::Refused(_) => Self::Failed,
        }
    }

    /// The word: `success`, `failed`, `timeout` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
        }
    }

    /// The outcome a word names; `None` for any other text.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == word)
    }
}

impl std::fmt::Display for ItemOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_an_outcome_and_every_word_parses_back() {
        let cases = [
            (JobError::failed("boom"), ItemOutcome::Failed),
            (JobError::Panicked("p".into()), ItemOutcome::Failed),
            (JobError::Refused("skew".into()), ItemOutcome::Failed),
            (JobError::Cancelled("moved".into()), ItemOutcome::Cancelled),
            (
                JobError::TimedOut {
                    after: std::time::Duration::from_secs(1),
                },
                ItemOutcome::Timeout,
            ),
        ];
        for (error, want) in cases {
            assert_eq!(ItemOutcome::of_error(&error), want, "{error}");
        }
        for outcome in ItemOutcome::ALL {
            assert_eq!(ItemOutcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(ItemOutcome::parse("failure"), None);
    }
}

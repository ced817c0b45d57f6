//! Policy values: how often and how long to wait before trying again, validated when they are
//! built.
//!
//! Configuration builds these once at start (from `[defaults]` and each tool's tables); the
//! call pipeline, the breaker and the job system only read them. A constructor that can refuse
//! (`try_new`) reports every [`PolicyProblem`] at once, each naming the configuration key at
//! fault, so an invalid policy value cannot exist and nothing downstream validates again.
//!
//! Nothing here does I/O or reads a clock: the random numbers come from a seeded
//! [`SplitMix`], so every wait is reproducible in a test.

mod backoff;
mod retry;

use std::fmt;

pub use backoff::{Backoff, InvalidBackoff, SplitMix};
pub use retry::RetryPolicy;

/// One reason a policy value cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyProblem {
    /// The configuration key at fault, as written in the file (`open_for_max`, `ramp[1]`).
    pub key: String,
    /// The keys whose values together make the problem. Configuration reports a problem in the
    /// table that set one of them, so a broken default is reported once, not again for every
    /// tool that inherits it.
    pub involves: &'static [&'static str],
    /// What is wrong and what would be valid.
    pub message: String,
}

impl PolicyProblem {
    /// A problem at `key` made by the values of the keys in `involves`.
    pub fn new(
        key: impl Into<String>,
        involves: &'static [&'static str],
        message: impl Into<String>,
    ) -> Self {
        PolicyProblem {
            key: key.into(),
            involves,
            message: message.into(),
        }
    }
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

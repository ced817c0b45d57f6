//! Every sentence a model reads that the gateway writes itself, in one place.
//!
//! A model acts on these texts (it relays them, retries, or stops), so their wording is part of
//! the product: kept together, they keep one voice, and a reviewer reads all of them at once.
//! The functions are pure (values in, `String` out; they know no gateway type, so every floor
//! above can use them); the modules that answer calls pick which text applies.
//!
//! - `call`: what the call path says (fallbacks, stale answers, refusals, unknown outcomes,
//!   background jobs that cannot run);
//! - `ledger`: what the booking ledger answers for an idempotency key (booked earlier, still
//!   being learned, reused with other arguments, a ledger out of reach);
//! - `agents`: what the protocols add (the status prefixes of a tool result, unknown tools,
//!   queued jobs, arguments a protocol could not read);
//! - `tasks`: what an MCP client reads about a task (its status message, why it cannot be read
//!   or cancelled);
//! - `watches`: the watch tools' descriptions and answers, and why a watch was not made,
//!   changed or found;
//! - `back_in_service`: the news a back-in-service notice carries, and why one was not set up.
//!
//! Not here: the tools' own summaries of their results and the field errors of arguments
//! (`tools/`: they are generated from each tool's types and schema), and the fallback prompts an
//! operator writes (`prompts/`), which [`call::fallback`] renders.

pub mod agents;
pub mod back_in_service;
pub mod budget;
pub mod call;
pub mod ledger;
pub mod tasks;
pub mod watches;

use std::time::Duration;

/// A duration as a request writes it, in days at most: `"60days"`, `"1day 12h"`, `"15m"`.
/// humantime's own format counts months of 30.44 days, so a refused `"60d"` would be quoted back
/// as `"1month 29days 13h 26m 24s"`, which the caller cannot find in what it sent.
pub fn span(d: Duration) -> String {
    const DAY: u64 = 86_400;
    let days = d.as_secs() / DAY;
    let rest = d - Duration::from_secs(days * DAY);
    match (days, rest.is_zero()) {
        (0, _) => humantime::format_duration(rest).to_string(),
        (1, true) => "1day".to_string(),
        (_, true) => format!("{days}days"),
        (1, false) => format!("1day {}", humantime::format_duration(rest)),
        (_, false) => format!("{days}days {}", humantime::format_duration(rest)),
    }
}

#[cfg(test)]
mod span_tests {
    use std::time::Duration;

    use super::span;

    #[test]
    fn a_span_is_written_in_days_at_most() {
        let days = |n: u64| Duration::from_secs(n * 86_400);
        assert_eq!(span(days(60)), "60days");
        assert_eq!(span(days(30)), "30days");
        assert_eq!(span(days(1)), "1day");
        assert_eq!(span(days(400) + Duration::from_secs(90)), "400days 1m 30s");
        assert_eq!(span(days(1) + Duration::from_secs(12 * 3600)), "1day 12h");
        assert_eq!(span(Duration::from_secs(15 * 60)), "15m");
        assert_eq!(span(Duration::ZERO), "0s");
    }
}

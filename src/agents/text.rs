//! [`model_text`]: the one text a model reads for an envelope, in every agent protocol.
//!
//! - `ok`: the envelope's `content`, then the data as compact JSON;
//! - `stale`: the same, prefixed with its age, `(stale: 5 min old)`;
//! - `unavailable`, `rejected`, `invalid_arguments`: the envelope's `content` (the fallback
//!   text, the provider's refusal, the field list) after the status in brackets;
//! - `queued`: `[queued: job …]` and how the result arrives.
//!
//! The sentences themselves are in [`crate::texts::agents`].

use std::time::Duration;

use crate::call::{Envelope, Status};
use crate::texts::agents as texts;
use crate::texts::call::describe_age;

/// The text a model reads for `env`.
pub fn model_text(env: &Envelope) -> String {
    let with_data = || match &env.data {
        Some(data) => texts::with_data(&env.content, &data.to_string()),
        None => env.content.clone(),
    };
    match env.status {
        Status::Ok => with_data(),
        Status::Stale => {
            let age = env
                .stale_age_s
                .map(|s| describe_age(Duration::from_secs(s)));
            texts::stale(age.as_deref(), &with_data())
        }
        Status::Unavailable => texts::unavailable(env.retry_after_s, &env.content),
        Status::Rejected => texts::rejected(&env.content),
        Status::InvalidArguments => texts::invalid_arguments(&env.content),
        Status::Queued => texts::queued(env.job_id.as_deref().unwrap_or("?"), &env.content),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::call::CallInfo;

    fn envelope(status: Status) -> Envelope {
        Envelope {
            status,
            provider: Some("duffel".into()),
            breaker: "closed".into(),
            ..Envelope::invalid_arguments(
                CallInfo::new("c1", "search_hotels"),
                "3 hotels in PAR.".into(),
            )
        }
    }

    /// One row per status: the envelope's extra facts, and the text a model reads.
    #[test]
    fn texts_flag_stale_and_errors_the_same_way_everywhere() {
        let data = || Some(json!({"hotels": []}).into());
        let cases: Vec<(Envelope, &str)> = vec![
            (
                Envelope {
                    data: data(),
                    ..envelope(Status::Ok)
                },
                "3 hotels in PAR.\n\nData (JSON): {\"hotels\":[]}",
            ),
            (
                Envelope {
                    data: data(),
                    stale_age_s: Some(300),
                    ..envelope(Status::Stale)
                },
                "(stale: 5 min old) 3 hotels in PAR.\n\nData (JSON): {\"hotels\":[]}",
            ),
            (
                envelope(Status::Stale),
                "(stale: age unknown old) 3 hotels in PAR.",
            ),
            (
                Envelope {
                    retry_after_s: Some(30),
                    ..envelope(Status::Unavailable)
                },
                "[unavailable; retry after 30 s] 3 hotels in PAR.",
            ),
            (
                envelope(Status::Unavailable),
                "[unavailable] 3 hotels in PAR.",
            ),
            (envelope(Status::Rejected), "[rejected] 3 hotels in PAR."),
            (
                envelope(Status::InvalidArguments),
                "[invalid_arguments] 3 hotels in PAR.",
            ),
            (
                Envelope {
                    job_id: Some("j1".into()),
                    ..envelope(Status::Queued)
                },
                "[queued: job j1] 3 hotels in PAR.",
            ),
        ];
        for (env, expected) in cases {
            assert_eq!(model_text(&env), expected, "{:?}", env.status);
        }
    }
}

//! [`model_text`]: the one text a model reads for an envelope, in every agent protocol.
//!
//! - `ok`: the envelope's `content`, then the data as compact JSON;
//! - `stale`: the same; the envelope's `content` already starts with the one stale mark
//!   (`STALE RESULT, 5 min old: …`, with what to do about it), so nothing is added (a second
//!   mark, `(stale: 5 min old) STALE RESULT, 5 min old`, only made the text longer);
//! - `unavailable`, `rejected`, `invalid_arguments`: the envelope's `content` (the fallback
//!   text, the provider's refusal, the field list) after the status in brackets;
//! - `queued`: `[queued: job …]` and how the result arrives.
//!
//! The sentences themselves are in [`crate::texts::agents`].

use crate::call::{Envelope, Status};
use crate::texts::agents as texts;

/// The text a model reads for `env`.
pub fn model_text(env: &Envelope) -> String {
    let with_data = || match &env.data {
        Some(data) => texts::with_data(&env.content, &data.to_string()),
        None => env.content.clone(),
    };
    match env.status {
        Status::Ok | Status::Stale => with_data(),
        Status::Unavailable => texts::unavailable(env.retry_after_s, &env.content),
        Status::Rejected => texts::rejected(&env.content),
        Status::InvalidArguments => texts::invalid_arguments(&env.content),
        Status::Queued => texts::queued(env.job_id.as_deref().unwrap_or("?"), &env.content),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        // A stale envelope's content as the answer policy writes it.
        let stale_content = crate::texts::call::stale(
            "search_hotels",
            Duration::from_secs(300),
            "3 hotels in PAR.",
            true,
        );
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
                    content: stale_content.clone(),
                    ..envelope(Status::Stale)
                },
                "STALE RESULT, 5 min old: search_hotels is not answering right now, so this is the last good result for the same request. Prices and availability may have changed since; say how old it is and confirm before booking. 3 hotels in PAR.\n\nData (JSON): {\"hotels\":[]}",
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

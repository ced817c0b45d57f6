//! The tool result envelope: the one answer shape every protocol adapter renders from.
//!
//! It is the gateway's external contract (SPEC "Native call"), so it is serializable here; the
//! protocol adapters (OpenAI, Anthropic, MCP) map it to their own shapes without changing the
//! text a model reads.

use serde::Serialize;
use serde_json::Value;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fresh data.
    Ok,
    /// The last good result for the same arguments, with its age.
    Stale,
    /// The tool cannot answer now; `content` is its fallback text.
    Unavailable,
    /// The provider refused the request for a reason the model can fix.
    Rejected,
    /// The arguments do not match the tool's schema.
    InvalidArguments,
    /// Accepted for background processing.
    Queued,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Stale => "stale",
            Status::Unavailable => "unavailable",
            Status::Rejected => "rejected",
            Status::InvalidArguments => "invalid_arguments",
            Status::Queued => "queued",
        }
    }

    /// Whether protocols should raise their error flag (`isError`, `is_error`).
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Status::Unavailable | Status::Rejected | Status::InvalidArguments
        )
    }
}

/// One tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope {
    /// The caller's id for the call, echoed (generated when the caller gave none).
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// What happened.
    pub status: Status,
    /// Text a model can read and relay.
    pub content: String,
    /// The structured result (`ok`, `stale`), else null.
    pub data: Option<Value>,
    /// Age of stale data in seconds.
    pub stale_age_s: Option<u64>,
    /// When it is worth calling again, in seconds (for `unavailable`).
    pub retry_after_s: Option<u64>,
    /// The state of the breaker that decided the call (`closed`, `open`, …).
    pub breaker: String,
    /// The background job, for `queued`.
    pub job_id: Option<String>,
    /// The provider that answered, or was tried last.
    pub provider: Option<String>,
}

impl Envelope {
    /// A text-only envelope (no data, no ages, no job); callers set the fields that apply.
    pub fn text(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        status: Status,
        content: impl Into<String>,
    ) -> Self {
        Envelope {
            call_id: call_id.into(),
            tool: tool.into(),
            status,
            content: content.into(),
            data: None,
            stale_age_s: None,
            retry_after_s: None,
            breaker: String::new(),
            job_id: None,
            provider: None,
        }
    }
}

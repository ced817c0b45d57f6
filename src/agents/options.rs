//! [`CallOptions`]: how a call should run (`mode`) and how long the caller waits
//! (`deadline_ms`), read the same way from every body that carries them: the native call body
//! and the object forms of the OpenAI and Anthropic bodies. MCP reads both from `_meta` with
//! [`parse_mode`] and [`parse_deadline`], and the deadline also from [`DEADLINE_HEADER`].

use std::time::Duration;

use serde_json::{Map, Value};

use super::error::ProtocolError;
use crate::texts;
use crate::tools::CallMode;

/// The HTTP header that carries a caller's deadline in milliseconds, for clients that can set
/// headers but not the body or the request's `_meta` (most MCP clients can set headers once per
/// server; few can add `_meta` to each call). Read on `/mcp` and by the native call endpoint;
/// with a deadline in the body or `_meta` too, the shorter wins ([`shorter`]).
pub const DEADLINE_HEADER: &str = "Faregate-Deadline-Ms";

/// The longest deadline a caller can ask for. The tool's own deadline caps it anyway; this
/// only bounds the number a client can make the gateway hold.
pub const MAX_DEADLINE: Duration = Duration::from_secs(600);

/// How the calls of one request run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// Interactive (the default) or background.
    pub mode: CallMode,
    /// The caller's deadline per call, capped by the tool's.
    pub deadline: Option<Duration>,
}

impl CallOptions {
    /// Reads `mode` and `deadline_ms` (either may be absent or `null`).
    pub fn read(mode: Option<&Value>, deadline_ms: Option<&Value>) -> Result<Self, ProtocolError> {
        let mode = match mode {
            None | Some(Value::Null) => CallMode::Interactive,
            Some(v) => parse_mode(v).map_err(ProtocolError::new)?,
        };
        let deadline = match deadline_ms {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                parse_deadline(v)
                    .map_err(|problem| ProtocolError::new(format!("deadline_ms {problem}")))?,
            ),
        };
        Ok(CallOptions { mode, deadline })
    }

    /// Reads `mode` and `deadline_ms` from a body object; its other keys are the protocol's.
    ///
    /// A `callback_url` is refused: these bodies' calls answer in the response, or as jobs to
    /// poll, and a URL silently dropped would leave the caller waiting for a callback.
    pub fn from_body(body: &Map<String, Value>) -> Result<Self, ProtocolError> {
        if body.contains_key("callback_url") {
            return Err(ProtocolError::new(
                "callback_url is not taken here: background calls in this body are polled at GET /v1/jobs/{job_id}; for a callback, call POST /v1/tools/{tool}/call with \"mode\": \"background\" and callback_url",
            ));
        }
        Self::read(body.get("mode"), body.get("deadline_ms"))
    }
}

/// A deadline in whole milliseconds, at least 1 (capped at [`MAX_DEADLINE`]); otherwise what
/// it must be ("must be …", for the caller to name the field).
pub fn parse_deadline(v: &Value) -> Result<Duration, String> {
    match v.as_u64() {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms).min(MAX_DEADLINE)),
        _ => Err(format!(
            "must be a whole number of milliseconds, at least 1; got {v}"
        )),
    }
}

/// The deadline in a [`DEADLINE_HEADER`] header's text (whole milliseconds, at least 1);
/// otherwise what it must be.
pub fn parse_deadline_header(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<u64>() {
        Ok(ms) => parse_deadline(&Value::from(ms)),
        Err(_) => parse_deadline(&Value::String(text.to_string())),
    }
}

/// Of two deadlines one caller gave (in the body or `_meta`, and in the header), the shorter: the
/// caller gives up at the sooner one, so waiting longer would only answer nobody.
pub fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `"interactive"` or `"background"`; otherwise the text saying so.
pub fn parse_mode(v: &Value) -> Result<CallMode, String> {
    match v.as_str() {
        Some("interactive") => Ok(CallMode::Interactive),
        Some("background") => Ok(CallMode::Background),
        _ => Err(texts::agents::invalid_mode(&v.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_callback_url_in_a_protocol_body_is_refused_not_dropped() {
        let body = |v: Value| v.as_object().cloned().unwrap_or_default();
        let e = CallOptions::from_body(&body(
            json!({"mode": "background", "callback_url": "https://hooks.example/cb"}),
        ))
        .err()
        .unwrap_or_else(|| panic!("a callback_url was taken"));
        assert!(
            e.message().contains("callback_url is not taken here")
                && e.message().contains("POST /v1/tools/{tool}/call"),
            "{e}"
        );
    }

    #[test]
    fn options_read_mode_and_deadline() {
        let body = |v: Value| v.as_object().cloned().unwrap_or_default();
        let o = CallOptions::from_body(&body(json!({"mode": "background", "deadline_ms": 500})))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.mode, CallMode::Background);
        assert_eq!(o.deadline, Some(Duration::from_millis(500)));
        assert_eq!(
            CallOptions::from_body(&body(json!({"mode": null, "deadline_ms": null}))),
            Ok(CallOptions::default())
        );
        assert_eq!(
            CallOptions::read(None, Some(&json!(u64::MAX))).map(|o| o.deadline),
            Ok(Some(MAX_DEADLINE)),
            "capped"
        );
    }

    #[test]
    fn bad_modes_and_deadlines_say_what_to_send() {
        let refused = |mode: Value, deadline: Value| {
            CallOptions::read(Some(&mode), Some(&deadline))
                .err()
                .map(|e| e.message().to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            refused(json!("later"), Value::Null),
            "mode \"later\" is not valid; use \"interactive\" or \"background\""
        );
        assert!(refused(json!(5), Value::Null).starts_with("mode 5 is not valid"));
        for deadline in [json!(0), json!(-1), json!(1.5), json!("500")] {
            assert!(
                refused(Value::Null, deadline.clone())
                    .starts_with("deadline_ms must be a whole number of milliseconds, at least 1"),
                "{deadline}"
            );
        }
    }
}

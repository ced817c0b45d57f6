//! What the agent protocols (OpenAI, Anthropic, MCP) share: one call as a model sent it, run
//! through [`Gateway::call`], and the one model-readable text of its result.
//!
//! Every protocol adapter turns its wire shape into [`AgentCall`]s and renders [`AgentResult`]s
//! back, so the text a model reads and whether the protocol's error flag is raised are decided
//! here, once:
//!
//! - `ok`: the envelope's `content`, then the data as compact JSON (ids the model needs next,
//!   such as `offer_id`, are in the data).
//! - `stale`: the same, prefixed `(stale: 5 min old)` (the envelope's own text says more).
//! - `unavailable`, `rejected`, `invalid_arguments`: the envelope's `content` (the fallback text,
//!   the provider's refusal, the field list) prefixed with the status in brackets
//!   (`[unavailable; retry after 30 s]`), with the error flag raised.
//! - `queued` (background mode: the call was stored as a job): `[queued: job …]` and how the
//!   result arrives; no error flag.
//! - a call that cannot start (unknown tool, arguments that are not JSON, no job store for
//!   background mode): an error text saying what to do, with the error flag raised, never a
//!   failed batch.

use std::time::Duration;

use serde_json::{Map, Value};

use super::AppState;
use crate::agents::manifest;
use crate::call::{CallError, CallRequest, Envelope, Status};
use crate::texts::call::describe_age;
use crate::tools::{CallMode, FieldError, describe_field_errors};

/// One tool call as a model sent it.
#[derive(Debug, Clone)]
pub(crate) struct AgentCall {
    /// The tool's name.
    pub tool: String,
    /// The arguments, or why they could not be read (e.g. an OpenAI `arguments` string that is
    /// not JSON).
    pub arguments: Result<Value, String>,
    /// The protocol's id for the call (`tool_call_id`, `tool_use_id`), echoed as `call_id`.
    pub call_id: Option<String>,
    /// An idempotency key the client gave for this call, if its protocol has room for one.
    pub idempotency_key: Option<String>,
}

/// Options that apply to every call of one request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AgentOptions {
    /// Interactive (default) or background.
    pub mode: CallMode,
    /// The caller's deadline per call, capped by the tool's.
    pub deadline: Option<Duration>,
}

impl AgentOptions {
    /// Reads `mode` (`"interactive"` or `"background"`) and `deadline_ms` from a request body
    /// object; other keys are left to the protocol.
    pub(crate) fn from_body(body: &Map<String, Value>) -> Result<Self, String> {
        let mode = match body.get("mode") {
            None | Some(Value::Null) => CallMode::Interactive,
            Some(v) => parse_mode(v)?,
        };
        let deadline = match body.get("deadline_ms") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(ms) if ms > 0 => Some(Duration::from_millis(ms.min(600_000))),
                _ => {
                    return Err(format!(
                        "deadline_ms must be a whole number of milliseconds, at least 1; got {v}"
                    ));
                }
            },
        };
        Ok(AgentOptions { mode, deadline })
    }
}

/// `"interactive"` or `"background"`.
pub(crate) fn parse_mode(v: &Value) -> Result<CallMode, String> {
    match v.as_str() {
        Some("interactive") => Ok(CallMode::Interactive),
        Some("background") => Ok(CallMode::Background),
        _ => Err(format!(
            "mode {v} is not valid; use \"interactive\" or \"background\""
        )),
    }
}

/// The result of one call, ready for any protocol.
#[derive(Debug, Clone)]
pub(crate) struct AgentResult {
    /// The model-readable text (same for every protocol).
    pub text: String,
    /// Whether the protocol's error flag (`is_error`, `isError`) is raised.
    pub is_error: bool,
    /// The envelope, when the call ran.
    pub envelope: Option<Envelope>,
}

impl AgentResult {
    fn error(text: String) -> Self {
        AgentResult {
            text,
            is_error: true,
            envelope: None,
        }
    }

    /// The structured result (`data`) of an `ok` or `stale` call.
    pub(crate) fn data(&self) -> Option<&Value> {
        let env = self.envelope.as_ref()?;
        match env.status {
            Status::Ok | Status::Stale => env.data.as_deref(),
            _ => None,
        }
    }
}

/// Runs the calls concurrently; the results come back in the order of `calls`.
pub(crate) async fn run_all(
    state: &AppState,
    calls: Vec<AgentCall>,
    options: AgentOptions,
) -> Vec<AgentResult> {
    futures::future::join_all(calls.into_iter().map(|c| run_one(state, c, options))).await
}

/// Runs one call to its model-readable result.
pub(crate) async fn run_one(
    state: &AppState,
    call: AgentCall,
    options: AgentOptions,
) -> AgentResult {
    let Some(tool) = state.gateway.tool(&call.tool) else {
        return AgentResult::error(unknown_tool_text(state, &call.tool));
    };
    let arguments = match call.arguments {
        Ok(v) => manifest::drop_optional_nulls(&tool.spec.input_schema(), v),
        Err(why) => {
            let text = describe_field_errors(
                tool.spec.name,
                &[FieldError {
                    field: String::new(),
                    message: why,
                }],
            );
            return AgentResult::error(format!("[invalid_arguments] {text}"));
        }
    };
    // Agent protocols have no per-call field for an idempotency key, so a write without one
    // gets a key derived from its arguments: repeating the same booking (same offer, same
    // travellers) can never book twice, and after an unknown outcome the model learns what
    // happened by calling again with the same arguments, as the result text tells it to.
    let idempotency_key = if tool.spec.needs_idempotency_key {
        call.idempotency_key
            .or_else(|| Some(derived_idempotency_key(tool.spec.name, &arguments)))
    } else {
        call.idempotency_key
    };
    if options.mode == CallMode::Background {
        // Stored as a job, exactly as the native endpoint does; the model is told where the
        // result will be, and never waits for it.
        return match super::native::submit_job(
            state,
            call.tool,
            arguments,
            call.call_id,
            idempotency_key,
            None,
        )
        .await
        {
            Ok(envelope) => AgentResult {
                text: model_text(&envelope),
                is_error: envelope.status.is_error(),
                envelope: Some(envelope),
            },
            Err(e) => AgentResult::error(format!("[unavailable] {}", e.message())),
        };
    }
    let request = CallRequest {
        tool: call.tool,
        arguments,
        call_id: call.call_id,
        idempotency_key,
        deadline: options.deadline,
    };
    match state.gateway.call(request).await {
        Ok(envelope) => AgentResult {
            text: model_text(&envelope),
            is_error: envelope.status.is_error(),
            envelope: Some(envelope),
        },
        Err(CallError::UnknownTool { name, .. }) => {
            AgentResult::error(unknown_tool_text(state, &name))
        }
    }
}

/// The error text for a tool that is not served, listing the ones that are.
pub(crate) fn unknown_tool_text(state: &AppState, name: &str) -> String {
    let known: Vec<&'static str> = state.gateway.tools().iter().map(|t| t.spec.name).collect();
    format!(
        "[invalid_arguments] There is no tool \"{name}\"; the tools are: {}. Call one of them by its exact name.",
        known.join(", ")
    )
}

/// The one text a model reads for an envelope, in every agent protocol.
pub(crate) fn model_text(env: &Envelope) -> String {
    let with_data = || match &env.data {
        Some(data) => format!("{}\n\nData (JSON): {data}", env.content),
        None => env.content.clone(),
    };
    match env.status {
        Status::Ok => with_data(),
        Status::Stale => format!(
            "(stale: {} old) {}",
            env.stale_age_s.map_or_else(
                || "age unknown".into(),
                |s| describe_age(Duration::from_secs(s))
            ),
            with_data()
        ),
        Status::Unavailable => match env.retry_after_s {
            Some(s) => format!("[unavailable; retry after {s} s] {}", env.content),
            None => format!("[unavailable] {}", env.content),
        },
        Status::Rejected => format!("[rejected] {}", env.content),
        Status::InvalidArguments => format!("[invalid_arguments] {}", env.content),
        Status::Queued => format!(
            "[queued: job {}] {}",
            env.job_id.as_deref().unwrap_or("?"),
            env.content
        ),
    }
}

/// `fg-args-` and 32 hex digits: FNV-1a (128 bit) of the tool name and the arguments in
/// canonical JSON (object keys sorted), so the same booking always gets the same key, across
/// restarts and replicas.
pub(crate) fn derived_idempotency_key(tool: &str, arguments: &Value) -> String {
    let mut canonical = String::new();
    canonical_json(arguments, &mut canonical);
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in tool.bytes().chain([0u8]).chain(canonical.bytes()) {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    format!("fg-args-{h:032x}")
}

fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn envelope(status: Status) -> Envelope {
        Envelope {
            call_id: "c1".into(),
            tool: "search_hotels".into(),
            status,
            content: "3 hotels in PAR.".into(),
            data: None,
            stale_age_s: None,
            retry_after_s: None,
            breaker: "closed".into(),
            job_id: None,
            provider: Some("duffel".into()),
        }
    }

    #[test]
    fn texts_flag_stale_and_errors_the_same_way_everywhere() {
        let mut ok = envelope(Status::Ok);
        ok.data = Some(json!({"hotels": []}).into());
        assert_eq!(
            model_text(&ok),
            "3 hotels in PAR.\n\nData (JSON): {\"hotels\":[]}"
        );
        let mut stale = ok.clone();
        stale.status = Status::Stale;
        stale.stale_age_s = Some(300);
        assert!(model_text(&stale).starts_with("(stale: 5 min old) 3 hotels"));
        let mut down = envelope(Status::Unavailable);
        down.retry_after_s = Some(30);
        assert_eq!(
            model_text(&down),
            "[unavailable; retry after 30 s] 3 hotels in PAR."
        );
        assert!(model_text(&envelope(Status::Rejected)).starts_with("[rejected] "));
        assert!(
            model_text(&envelope(Status::InvalidArguments)).starts_with("[invalid_arguments] ")
        );
    }

    #[test]
    fn derived_keys_ignore_key_order_and_differ_per_booking() {
        let a = derived_idempotency_key("book_flight", &json!({"offer_id": "off_1", "n": [1, 2]}));
        let b = derived_idempotency_key("book_flight", &json!({"n": [1, 2], "offer_id": "off_1"}));
        let c = derived_idempotency_key("book_flight", &json!({"offer_id": "off_2", "n": [1, 2]}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("fg-args-") && a.len() == 8 + 32, "{a}");
    }

    #[test]
    fn options_read_mode_and_deadline() {
        let body = |v: Value| v.as_object().cloned().unwrap_or_default();
        let o = AgentOptions::from_body(&body(json!({"mode": "background", "deadline_ms": 500})))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.mode, CallMode::Background);
        assert_eq!(o.deadline, Some(Duration::from_millis(500)));
        assert!(AgentOptions::from_body(&body(json!({"mode": "later"}))).is_err());
        assert!(AgentOptions::from_body(&body(json!({"deadline_ms": 0}))).is_err());
    }
}

//! The parts of MCP that are not its transport: which `_meta` keys faregate reads on
//! `tools/call`, how they become a call, and which JSON-RPC messages are tool calls.
//!
//! MCP `tools/call` has no field for the call mode, an idempotency key or a deadline, so they
//! travel in the request's `_meta`: `"faregate/mode"` (`"interactive"` or `"background"`),
//! `"faregate/idempotency_key"` (a booking's key; without it the key is derived from the
//! arguments, see [`super::idempotency`]) and `"faregate/deadline_ms"` (how long the client
//! waits, exactly as `deadline_ms` on the native endpoint; a string of digits is read too), and
//! the W3C `"traceparent"` and `"tracestate"`, which parent the call's tool span
//! ([`crate::trace_context`]). `"faregate/mode": "background"` is
//! a task for a client that declared the MCP Tasks extension (`http/mcp/tasks.rs`); any other
//! client gets an error result pointing to the extension and the endpoints that queue jobs: a
//! queued job has no result matching the tool's `outputSchema`, which MCP requires of a
//! successful result.
//!
//! Why a deadline matters here: an MCP client gives up after its own request timeout (5 s in
//! openai-agents), and a call that outlives it reaches the model as "Request timed out", not
//! as the fallback text. With the client's timeout (a little less) as the deadline, the
//! gateway stops waiting for a slow provider in time to answer the fallback text. Clients that
//! can set headers but not `_meta` send the same number in the [`DEADLINE_HEADER`] header;
//! with both, the shorter wins.

use serde_json::{Map, Value};

use super::call::AgentCall;
use super::options::{
    CallOptions, DEADLINE_HEADER, parse_deadline, parse_deadline_header, parse_mode, shorter,
};
use crate::texts::agents as texts;
use crate::tools::CallMode;
use crate::trace_context::{TRACEPARENT, TRACESTATE, TraceContext};

/// The `_meta` key selecting the call mode (`"interactive"` or `"background"`).
pub const META_MODE: &str = "faregate/mode";

/// The `_meta` key carrying a booking's idempotency key.
pub const META_IDEMPOTENCY_KEY: &str = "faregate/idempotency_key";

/// The `_meta` key carrying the client's deadline in milliseconds.
pub const META_DEADLINE_MS: &str = "faregate/deadline_ms";

/// A `tools/call` as a call, or the error result text to answer instead. `meta` looks a key up
/// in the request's `_meta`; `deadline_header` is the HTTP request's [`DEADLINE_HEADER`];
/// `takes_tasks` says whether the client declared the MCP Tasks extension (only then is
/// background mode accepted: its answer is a task).
pub fn read_call(
    name: &str,
    arguments: Map<String, Value>,
    meta: impl Fn(&str) -> Option<Value>,
    deadline_header: Option<&str>,
    takes_tasks: bool,
) -> Result<(AgentCall, CallOptions), String> {
    let mut options = CallOptions::default();
    let from_meta = match meta(META_DEADLINE_MS) {
        None | Some(Value::Null) => None,
        Some(v) => Some(deadline(v).map_err(|problem| {
            texts::invalid_arguments(&texts::invalid_meta(META_DEADLINE_MS, &problem))
        })?),
    };
    let from_header = match deadline_header {
        None => None,
        Some(text) => Some(parse_deadline_header(text).map_err(|problem| {
            texts::invalid_arguments(&texts::invalid_header(DEADLINE_HEADER, &problem))
        })?),
    };
    options.deadline = shorter(from_meta, from_header);
    if let Some(mode) = meta(META_MODE) {
        match parse_mode(&mode) {
            Ok(CallMode::Background) if !takes_tasks => {
                // Not `unavailable`: the tool is not down (a model told so would not call it
                // again); the call can be made now without the mode.
                return Err(texts::rejected(texts::MCP_BACKGROUND));
            }
            Ok(mode) => options.mode = mode,
            Err(problem) => {
                return Err(texts::invalid_arguments(&texts::invalid_meta(
                    META_MODE, &problem,
                )));
            }
        }
    }
    let idempotency_key = match meta(META_IDEMPOTENCY_KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) => Some(key),
        // Digits, as key=value flags may send them (`--tool-metadata faregate/idempotency_key=12`).
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        // Ignored, the key would be derived from the arguments, and a booking the client meant
        // to name would go under another key.
        Some(other) => {
            return Err(texts::invalid_arguments(&texts::invalid_meta(
                META_IDEMPOTENCY_KEY,
                &format!(
                    "must be a string of 1 to 200 printable characters, e.g. a UUID; got {other}"
                ),
            )));
        }
    };
    let call = AgentCall {
        tool: name.to_string(),
        arguments: Ok(Value::Object(arguments)),
        call_id: None,
        idempotency_key,
        trace: trace_of(&meta),
    };
    Ok((call, options))
}

/// The W3C trace context in `_meta` (`traceparent`, `tracestate`), as the MCP proposal for
/// trace context propagation puts it there; one that is not valid is ignored, as over HTTP.
fn trace_of(meta: &impl Fn(&str) -> Option<Value>) -> Option<TraceContext> {
    let parent = meta(TRACEPARENT)?;
    let state = meta(TRACESTATE);
    TraceContext::parse(parent.as_str()?, state.as_ref().and_then(Value::as_str))
}

/// A deadline in milliseconds, as a number or as a string of digits: a header is text, and
/// clients that take `_meta` entries as `key=value` flags (the MCP Inspector's CLI) may send the
/// number as a string too.
fn deadline(value: Value) -> Result<std::time::Duration, String> {
    let value = match value {
        Value::String(text) => text
            .trim()
            .parse::<u64>()
            .map_or(Value::String(text), Value::from),
        other => other,
    };
    parse_deadline(&value)
}

/// Whether an MCP request body holds a `tools/call` message (alone or in a batch). A body that
/// is not JSON holds none.
pub fn is_tool_call(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| holds_tool_call(&v))
}

fn holds_tool_call(message: &Value) -> bool {
    match message {
        Value::Array(batch) => batch.iter().any(holds_tool_call),
        Value::Object(m) => m.get("method").and_then(Value::as_str) == Some("tools/call"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_mcp_tool_calls_count() {
        let is = |v: Value| is_tool_call(v.to_string().as_bytes());
        assert!(is(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
        ));
        assert!(is(json!([{"method": "ping"}, {"method": "tools/call"}])));
        assert!(!is(json!({"method": "tools/list"})));
        assert!(!is(json!({"method": "initialize"})));
        assert!(!is(json!("tools/call")));
        assert!(!is_tool_call(b"{\"method\": \"tools/call\""), "not JSON");
    }

    #[test]
    fn meta_sets_the_key_and_refuses_background_and_unknown_modes() {
        let meta = |pairs: Value| move |key: &str| pairs.get(key).cloned();
        let (call, options) = read_call(
            "book_flight",
            Map::new(),
            meta(json!({META_MODE: "interactive", META_IDEMPOTENCY_KEY: "k1"})),
            None,
            false,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(call.arguments, Ok(json!({})));
        assert_eq!(options, CallOptions::default());
        let key = |sent: Value| {
            read_call(
                "book_flight",
                Map::new(),
                meta(json!({ META_IDEMPOTENCY_KEY: sent })),
                None,
                false,
            )
            .map(|(call, _)| call.idempotency_key)
        };
        assert_eq!(
            key(json!(12)),
            Ok(Some("12".to_string())),
            "digits sent as a number"
        );
        assert_eq!(key(Value::Null), Ok(None));
        assert_eq!(
            key(json!({"k": 1})),
            Err("[invalid_arguments] _meta faregate/idempotency_key: must be a string of 1 to 200 printable characters, e.g. a UUID; got {\"k\":1}".to_string()),
            "never ignored: the booking would go under a key derived from its arguments"
        );
        let refused = |mode: Value| {
            read_call(
                "search_flights",
                Map::new(),
                meta(json!({META_MODE: mode})),
                None,
                false,
            )
            .err()
            .unwrap_or_default()
        };
        assert!(
            refused(json!("background"))
                .starts_with("[rejected] Background mode is not available over MCP")
        );
        let with_tasks = read_call(
            "search_flights",
            Map::new(),
            meta(json!({META_MODE: "background"})),
            None,
            true,
        );
        assert_eq!(
            with_tasks.map(|(_, options)| options.mode),
            Ok(CallMode::Background),
            "a client that takes tasks gets one"
        );
        assert_eq!(
            refused(json!("later")),
            "[invalid_arguments] _meta faregate/mode: mode \"later\" is not valid; use \"interactive\" or \"background\""
        );
    }

    #[test]
    fn a_deadline_comes_from_meta_or_the_header_and_the_shorter_wins() {
        let deadline = |meta: Value, header: Option<&str>| {
            read_call(
                "search_flights",
                Map::new(),
                move |key: &str| meta.get(key).cloned(),
                header,
                false,
            )
            .map(|(_, options)| options.deadline)
        };
        let ms = std::time::Duration::from_millis;
        assert_eq!(deadline(json!({}), None), Ok(None));
        assert_eq!(
            deadline(json!({META_DEADLINE_MS: 4500}), None),
            Ok(Some(ms(4500)))
        );
        assert_eq!(deadline(json!({}), Some(" 4000 ")), Ok(Some(ms(4000))));
        assert_eq!(
            deadline(json!({META_DEADLINE_MS: 4500}), Some("3000")),
            Ok(Some(ms(3000)))
        );
        assert_eq!(
            deadline(json!({META_DEADLINE_MS: 2000}), Some("3000")),
            Ok(Some(ms(2000)))
        );
        assert_eq!(
            deadline(json!({META_DEADLINE_MS: "2500"}), None),
            Ok(Some(ms(2500))),
            "digits in a string, as key=value flags send them"
        );
        assert_eq!(
            deadline(json!({META_DEADLINE_MS: 0}), None),
            Err("[invalid_arguments] _meta faregate/deadline_ms: must be a whole number of milliseconds, at least 1; got 0".into())
        );
        assert_eq!(
            deadline(json!({}), Some("5s")),
            Err("[invalid_arguments] header Faregate-Deadline-Ms: must be a whole number of milliseconds, at least 1; got \"5s\"".into())
        );
    }
}

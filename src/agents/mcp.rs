//! The parts of MCP that are not its transport: which `_meta` keys faregate reads on
//! `tools/call`, how they become a call, and which JSON-RPC messages are tool calls.
//!
//! MCP `tools/call` has no field for the call mode or an idempotency key, so they travel in the
//! request's `_meta`: `"faregate/mode"` (`"interactive"` or `"background"`) and
//! `"faregate/idempotency_key"` (a booking's key; without it the key is derived from the
//! arguments, see [`super::idempotency`]). `"faregate/mode": "background"` is answered with an
//! error result pointing to the endpoints that queue jobs: a queued job has no result matching
//! the tool's `outputSchema`, which MCP requires of a successful result.

use serde_json::{Map, Value};

use super::call::AgentCall;
use super::options::{CallOptions, parse_mode};
use crate::texts::agents as texts;
use crate::tools::CallMode;

/// The `_meta` key selecting the call mode (`"interactive"` or `"background"`).
pub const META_MODE: &str = "faregate/mode";

/// The `_meta` key carrying a booking's idempotency key.
pub const META_IDEMPOTENCY_KEY: &str = "faregate/idempotency_key";

/// A `tools/call` as a call, or the error result text to answer instead. `meta` looks a key up
/// in the request's `_meta`.
pub fn read_call(
    name: &str,
    arguments: Map<String, Value>,
    meta: impl Fn(&str) -> Option<Value>,
) -> Result<(AgentCall, CallOptions), String> {
    let mut options = CallOptions::default();
    if let Some(mode) = meta(META_MODE) {
        match parse_mode(&mode) {
            Ok(CallMode::Background) => {
                return Err(texts::unavailable(None, texts::MCP_BACKGROUND));
            }
            Ok(mode) => options.mode = mode,
            Err(problem) => {
                return Err(texts::invalid_arguments(&texts::invalid_meta(
                    META_MODE, &problem,
                )));
            }
        }
    }
    let idempotency_key = meta(META_IDEMPOTENCY_KEY)
        .as_ref()
        .and_then(Value::as_str)
        .map(str::to_string);
    let call = AgentCall {
        tool: name.to_string(),
        arguments: Ok(Value::Object(arguments)),
        call_id: None,
        idempotency_key,
    };
    Ok((call, options))
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
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(call.arguments, Ok(json!({})));
        assert_eq!(options, CallOptions::default());
        let refused = |mode: Value| {
            read_call("search_flights", Map::new(), meta(json!({META_MODE: mode})))
                .err()
                .unwrap_or_default()
        };
        assert!(
            refused(json!("background"))
                .starts_with("[unavailable] Background mode is not available over MCP")
        );
        assert_eq!(
            refused(json!("later")),
            "[invalid_arguments] _meta faregate/mode: mode \"later\" is not valid; use \"interactive\" or \"background\""
        );
    }
}

//! The native call body (`POST /v1/tools/{tool}/call`): `{"arguments": {…}}` and the optional
//! `mode`, `call_id`, `idempotency_key`, `deadline_ms` and `callback_url`.
//!
//! Unknown fields are refused (a typo such as `idempotencykey` must not silently book
//! without a key). The ids are echoed into answers, logs and provider metadata, so they must be
//! printable, bounded text: a value cannot forge log lines or headers. `callback_url` only
//! makes sense for a background call.

use serde::Deserialize;
use serde_json::Value;

use super::error::ProtocolError;
use super::options::CallOptions;
use crate::tools::CallMode;

/// The longest `call_id`, in characters.
const MAX_CALL_ID: usize = 256;
/// The longest `idempotency_key`, in characters: the booking tools' limit
/// (`tools::idempotency_key`), so every protocol and tool says the same.
const MAX_IDEMPOTENCY_KEY: usize = 200;

/// The body as sent. Only `arguments` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallBody {
    arguments: Value,
    #[serde(default)]
    mode: Option<Value>,
    // The text fields are read as values and checked here, so that a wrong type names its
    // field (serde's own error says only "invalid type: integer `5`, expected a string").
    #[serde(default)]
    call_id: Option<Value>,
    #[serde(default)]
    idempotency_key: Option<Value>,
    #[serde(default)]
    deadline_ms: Option<Value>,
    #[serde(default)]
    callback_url: Option<Value>,
}

/// A native call after every check that needs no tool.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCall {
    /// The tool's name, from the path.
    pub tool: String,
    /// The arguments, unvalidated.
    pub arguments: Value,
    /// The caller's id for the call.
    pub call_id: Option<String>,
    /// The caller's idempotency key.
    pub idempotency_key: Option<String>,
    /// Mode and deadline.
    pub options: CallOptions,
    /// Where a background job's result is posted (background mode only).
    pub callback_url: Option<String>,
}

/// Reads the body of a call to `tool`.
pub fn parse(tool: &str, body: Value) -> Result<NativeCall, ProtocolError> {
    // serde would read an array by position ("expected struct CallBody with 6 elements", or an
    // object in it taken as `arguments`), naming a type the client never sees.
    if !body.is_object() {
        return Err(ProtocolError::new(
            "the body must be a JSON object such as {\"arguments\": {…}}",
        ));
    }
    let body: CallBody = serde_json::from_value(body)
        .map_err(|e| ProtocolError::new(format!("unexpected JSON: {e}")))?;
    let call_id = text("call_id", body.call_id)?;
    check_text("call_id", call_id.as_deref(), MAX_CALL_ID)?;
    let idempotency_key = text("idempotency_key", body.idempotency_key)?;
    check_text(
        "idempotency_key",
        idempotency_key.as_deref(),
        MAX_IDEMPOTENCY_KEY,
    )?;
    let callback_url = text("callback_url", body.callback_url)?;
    let options = CallOptions::read(body.mode.as_ref(), body.deadline_ms.as_ref())?;
    if options.mode != CallMode::Background && callback_url.is_some() {
        return Err(ProtocolError::new(
            "callback_url is only used with mode \"background\"",
        ));
    }
    Ok(NativeCall {
        tool: tool.to_string(),
        arguments: body.arguments,
        call_id,
        idempotency_key,
        options,
        callback_url,
    })
}

/// A text field of the body: absent or `null` is none; anything but a string is refused,
/// naming the field and what came.
fn text(field: &str, value: Option<Value>) -> Result<Option<String>, ProtocolError> {
    let what = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => return Ok(Some(text)),
        Some(Value::Bool(b)) => format!("the boolean {b}"),
        Some(Value::Number(n)) => format!("the number {n}"),
        Some(Value::Array(_)) => "an array".to_string(),
        Some(Value::Object(_)) => "an object".to_string(),
    };
    Err(ProtocolError::new(format!(
        "{field} must be a string (JSON text in quotes); got {what}"
    )))
}

fn check_text(field: &str, value: Option<&str>, max: usize) -> Result<(), ProtocolError> {
    let Some(v) = value else { return Ok(()) };
    if v.is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(ProtocolError::new(format!(
            "{field} must be 1 to {max} printable characters (no line breaks or control characters)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn refused(body: Value) -> String {
        parse("search_flights", body)
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn a_full_body_is_read_field_by_field() {
        let call = parse(
            "search_flights",
            json!({"arguments": {"origin": "JFK"}, "mode": "background", "call_id": "c1",
                   "idempotency_key": "k1", "deadline_ms": 900, "callback_url": "https://x.example/cb"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call.tool, "search_flights");
        assert_eq!(call.arguments, json!({"origin": "JFK"}));
        assert_eq!(call.call_id.as_deref(), Some("c1"));
        assert_eq!(call.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(call.options.mode, CallMode::Background);
        assert_eq!(call.options.deadline, Some(Duration::from_millis(900)));
        assert_eq!(call.callback_url.as_deref(), Some("https://x.example/cb"));
        // `null` is as absent.
        let call = parse(
            "search_flights",
            json!({"arguments": {}, "call_id": null, "idempotency_key": null}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((call.call_id, call.idempotency_key), (None, None));
    }

    #[test]
    fn bodies_the_endpoint_refuses_say_why() {
        let cases = [
            (
                json!([]),
                "the body must be a JSON object such as {\"arguments\": {…}}",
            ),
            (
                json!([{"arguments": {}}]),
                "the body must be a JSON object such as {\"arguments\": {…}}",
            ),
            (json!("x"), "the body must be a JSON object"),
            (json!({}), "missing field `arguments`"),
            (
                json!({"arguments": {}, "tool": "x"}),
                "unknown field `tool`",
            ),
            (
                json!({"arguments": {}, "call_id": ""}),
                "call_id must be 1 to 256",
            ),
            (
                json!({"arguments": {}, "call_id": "a\nb"}),
                "call_id must be 1 to 256",
            ),
            (
                json!({"arguments": {}, "idempotency_key": "k".repeat(256)}),
                "idempotency_key must be 1 to 200",
            ),
            (
                json!({"arguments": {}, "mode": "urgent"}),
                "mode \"urgent\" is not valid",
            ),
            (
                json!({"arguments": {}, "deadline_ms": 0}),
                "deadline_ms must be a whole number",
            ),
            (
                json!({"arguments": {}, "callback_url": "https://x.example/cb"}),
                "callback_url is only used with mode \"background\"",
            ),
            (
                json!({"arguments": {}, "call_id": 5}),
                "call_id must be a string (JSON text in quotes); got the number 5",
            ),
            (
                json!({"arguments": {}, "idempotency_key": true}),
                "idempotency_key must be a string (JSON text in quotes); got the boolean true",
            ),
            (
                json!({"arguments": {}, "mode": "background", "callback_url": ["https://x"]}),
                "callback_url must be a string (JSON text in quotes); got an array",
            ),
        ];
        for (body, says) in cases {
            let message = refused(body.clone());
            assert!(message.contains(says), "{body}: {message}");
        }
    }
}

//! `POST /v1/openai/tool_calls`: OpenAI tool calls in, tool results out.
//!
//! Accepted bodies (a chat backend forwards what the model produced, unchanged):
//! - a Chat Completions assistant message (`{"role": "assistant", "tool_calls": [...]}`) or its
//!   `tool_calls` array; each call's `function.arguments` is a JSON **string** →
//!   `{"messages": [{"role": "tool", "tool_call_id", "content"}]}`;
//! - Responses API `function_call` items, as an array or as an object with `output` (a whole
//!   response: other item types such as `message` or `reasoning` are skipped) →
//!   `{"output": [{"type": "function_call_output", "call_id", "output"}]}`.
//!
//! Object bodies may add `mode` (`"interactive"`, `"background"`) and `deadline_ms`. Calls run
//! concurrently; results come back in the order the calls were received. OpenAI has no error
//! flag on tool results, so the status is in the text (see [`super::agent`]). A malformed
//! `arguments` string or an unknown tool is that call's error text, not a failed batch.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use serde_json::{Map, Value, json};

use super::AppState;
use super::agent::{self, AgentCall, AgentOptions};
use super::error::ApiError;
use super::json::json_body;

/// Which OpenAI API the calls came from, which decides the answer's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Responses,
}

const SHAPES: &str = "send a Chat Completions assistant message with tool_calls, its tool_calls array, or Responses API function_call items (an array, or an object with output)";

/// The handler.
pub(crate) async fn tool_calls(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body: Value = json_body(&headers, body, state.max_body_bytes)?;
    let (api, items, options) = parse(body)?;
    let ids: Vec<String> = items
        .iter()
        .map(|c| c.call_id.clone().unwrap_or_default())
        .collect();
    let results = agent::run_all(&state, items, options).await;
    let answer = match api {
        Api::Chat => json!({
            "messages": ids.iter().zip(&results).map(|(id, r)| json!({
                "role": "tool", "tool_call_id": id, "content": r.text,
            })).collect::<Vec<_>>()
        }),
        Api::Responses => json!({
            "output": ids.iter().zip(&results).map(|(id, r)| json!({
                "type": "function_call_output", "call_id": id, "output": r.text,
            })).collect::<Vec<_>>()
        }),
    };
    Ok(Json(answer))
}

pub(crate) fn parse(body: Value) -> Result<(Api, Vec<AgentCall>, AgentOptions), ApiError> {
    let (list, options) = match body {
        Value::Array(list) => (list, AgentOptions::default()),
        Value::Object(mut obj) => {
            let options = AgentOptions::from_body(&obj).map_err(ApiError::bad_request)?;
            let list = match (obj.remove("tool_calls"), obj.remove("output")) {
                (Some(Value::Array(l)), _) | (None, Some(Value::Array(l))) => l,
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "no tool calls found; {SHAPES}"
                    )));
                }
            };
            (list, options)
        }
        _ => return Err(ApiError::bad_request(format!("unexpected JSON; {SHAPES}"))),
    };
    let responses = list
        .iter()
        .any(|i| i.get("type").and_then(Value::as_str) == Some("function_call"));
    let mut calls = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            return Err(ApiError::bad_request(format!(
                "item {i} is not an object; {SHAPES}"
            )));
        };
        let call = if responses {
            if obj.get("type").and_then(Value::as_str) != Some("function_call") {
                continue; // messages, reasoning and other output items carry no call
            }
            AgentCall {
                tool: string_field(obj, "name", i)?,
                arguments: arguments(obj.get("arguments")),
                call_id: Some(string_field(obj, "call_id", i)?),
                idempotency_key: None,
            }
        } else {
            let Some(function) = obj.get("function").and_then(Value::as_object) else {
                return Err(ApiError::bad_request(format!(
                    "tool_calls[{i}] has no function object; {SHAPES}"
                )));
            };
            AgentCall {
                tool: string_field(function, "name", i)?,
                arguments: arguments(function.get("arguments")),
                call_id: Some(string_field(obj, "id", i)?),
                idempotency_key: None,
            }
        };
        calls.push(call);
    }
    if calls.is_empty() {
        return Err(ApiError::bad_request(format!(
            "no tool calls found; {SHAPES}"
        )));
    }
    let api = if responses { Api::Responses } else { Api::Chat };
    Ok((api, calls, options))
}

fn string_field(obj: &Map<String, Value>, key: &str, i: usize) -> Result<String, ApiError> {
    match obj.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ApiError::bad_request(format!(
            "call {i} has no \"{key}\" string; {SHAPES}"
        ))),
    }
}

/// `arguments` is a JSON string in both APIs; an object is accepted as is, and an empty string
/// means no arguments (models send `""` for functions without parameters).
fn arguments(raw: Option<&Value>) -> Result<Value, String> {
    match raw {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(json!({})),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
            format!(
                "the arguments string is not valid JSON ({e}); send the arguments as one JSON object"
            )
        }),
        Some(Value::Object(o)) => Ok(Value::Object(o.clone())),
        Some(other) => Err(format!(
            "arguments must be a JSON object encoded as a string, got {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_messages_arrays_and_responses_items_are_recognised() {
        let call = json!({"id": "call_1", "type": "function",
                          "function": {"name": "search_hotels", "arguments": "{\"city_code\":\"PAR\"}"}});
        let (api, calls, _) =
            parse(json!({"role": "assistant", "content": null, "tool_calls": [call.clone()]}))
                .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(api, Api::Chat);
        assert_eq!(calls[0].call_id.as_deref(), Some("call_1"));
        assert_eq!(calls[0].arguments, Ok(json!({"city_code": "PAR"})));
        let (api, _, _) = parse(json!([call])).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(api, Api::Chat);

        let items = json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "search_flights", "arguments": "{not json"}
        ]);
        let (api, calls, _) = parse(json!({"output": items, "mode": "interactive"}))
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(api, Api::Responses);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].call_id.as_deref(), Some("call_9"));
        assert!(
            calls[0].arguments.is_err(),
            "malformed arguments stay per call"
        );
    }

    #[test]
    fn bodies_without_calls_say_what_to_send() {
        for body in [
            json!({}),
            json!([]),
            json!("x"),
            json!({"tool_calls": [{"id": "c"}]}),
        ] {
            assert!(parse(body).is_err());
        }
        assert!(parse(json!({"tool_calls": [], "mode": "later"})).is_err());
    }
}

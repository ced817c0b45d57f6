//! `POST /v1/anthropic/tool_use`: Anthropic `tool_use` blocks in, `tool_result` blocks out.
//!
//! Accepted bodies: an assistant message (`{"role": "assistant", "content": [...]}`), a whole
//! Messages API response (its `content`), or the content array itself. `tool_use` blocks are
//! run concurrently; other blocks (`text`, `thinking`) are skipped. The answer is the user
//! message to append, with one `tool_result` per `tool_use` in the same order (Anthropic wants
//! them first in that message): `{"role": "user", "content": [{"type": "tool_result",
//! "tool_use_id", "content", "is_error"}]}`. Object bodies may add `mode` and `deadline_ms`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use serde_json::{Value, json};

use super::AppState;
use super::agent::{self, AgentCall, AgentOptions};
use super::error::ApiError;
use super::json::json_body;

const SHAPES: &str = "send an assistant message (or a Messages API response) whose content has tool_use blocks, or the content array itself";

/// The handler.
pub(crate) async fn tool_use(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body: Value = json_body(&headers, body, state.max_body_bytes)?;
    let (calls, options) = parse(body)?;
    let ids: Vec<String> = calls
        .iter()
        .map(|c| c.call_id.clone().unwrap_or_default())
        .collect();
    let results = agent::run_all(&state, calls, options).await;
    let content: Vec<Value> = ids
        .iter()
        .zip(&results)
        .map(|(id, r)| {
            json!({"type": "tool_result", "tool_use_id": id, "content": r.text, "is_error": r.is_error})
        })
        .collect();
    Ok(Json(json!({ "role": "user", "content": content })))
}

pub(crate) fn parse(body: Value) -> Result<(Vec<AgentCall>, AgentOptions), ApiError> {
    let (blocks, options) = match body {
        Value::Array(blocks) => (blocks, AgentOptions::default()),
        Value::Object(mut obj) => {
            let options = AgentOptions::from_body(&obj).map_err(ApiError::bad_request)?;
            match obj.remove("content") {
                Some(Value::Array(blocks)) => (blocks, options),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "no content array found; {SHAPES}"
                    )));
                }
            }
        }
        _ => return Err(ApiError::bad_request(format!("unexpected JSON; {SHAPES}"))),
    };
    let mut calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let field = |key: &str| match block.get(key).and_then(Value::as_str) {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(ApiError::bad_request(format!(
                "content[{i}] is a tool_use block without a \"{key}\" string; {SHAPES}"
            ))),
        };
        let arguments = match block.get("input") {
            None | Some(Value::Null) => Ok(json!({})),
            Some(Value::Object(o)) => Ok(Value::Object(o.clone())),
            Some(other) => Err(format!("input must be a JSON object, got {other}")),
        };
        calls.push(AgentCall {
            tool: field("name")?,
            arguments,
            call_id: Some(field("id")?),
            idempotency_key: None,
        });
    }
    if calls.is_empty() {
        return Err(ApiError::bad_request(format!(
            "no tool_use blocks found; {SHAPES}"
        )));
    }
    Ok((calls, options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_use_blocks_are_taken_in_order_and_other_blocks_skipped() {
        let msg = json!({"role": "assistant", "mode": "background", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "search_hotels", "input": {"city_code": "PAR"}},
            {"type": "tool_use", "id": "toolu_2", "name": "search_flights", "input": "oops"}
        ]});
        let (calls, options) = parse(msg).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(options.mode, crate::tools::CallMode::Background);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].call_id.as_deref(), Some("toolu_1"));
        assert!(calls[1].arguments.is_err());
    }

    #[test]
    fn bodies_without_tool_use_say_what_to_send() {
        for body in [
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({}),
            json!(1),
        ] {
            assert!(parse(body).is_err());
        }
    }
}

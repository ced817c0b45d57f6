//! Anthropic `tool_use` blocks in, `tool_result` blocks out (`POST /v1/anthropic/tool_use`).
//!
//! Accepted bodies: an assistant message (`{"role": "assistant", "content": [...]}`), a whole
//! Messages API response (its `content`), or the content array itself. `tool_use` blocks are
//! read in order; other blocks (`text`, `thinking`) are skipped. The answer is the user message
//! to append, with one `tool_result` per `tool_use` in the same order (Anthropic wants them
//! first in that message): `{"role": "user", "content": [{"type": "tool_result",
//! "tool_use_id", "content", "is_error"}]}`. Object bodies may add `mode` and `deadline_ms`.

use serde_json::{Value, json};

use super::call::{AgentCall, AgentResult, absent_arguments, repeated_call_id};
use super::error::ProtocolError;
use super::options::CallOptions;
use crate::texts;

/// The calls of one body.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicCalls {
    /// The `tool_use` blocks, in order (never empty).
    pub calls: Vec<AgentCall>,
    /// Mode and deadline for every call.
    pub options: CallOptions,
}

const SHAPES: &str = "send an assistant message (or a Messages API response) whose content has tool_use blocks, or the content array itself";

/// Reads a body; a refusal says which shapes are accepted.
pub fn parse(body: Value) -> Result<AnthropicCalls, ProtocolError> {
    let refuse = |what: String| ProtocolError::new(format!("{what}; {SHAPES}"));
    let (blocks, options) = match body {
        Value::Array(blocks) => (blocks, CallOptions::default()),
        Value::Object(mut obj) => {
            let options = CallOptions::from_body(&obj)?;
            match obj.remove("content") {
                Some(Value::Array(blocks)) => (blocks, options),
                _ => return Err(refuse("no content array found".into())),
            }
        }
        _ => return Err(refuse("unexpected JSON".into())),
    };
    let mut calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let field = |key: &str| match block.get(key).and_then(Value::as_str) {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(refuse(format!(
                "content[{i}] is a tool_use block without a string \"{key}\""
            ))),
        };
        let arguments = match block.get("input") {
            None | Some(Value::Null) => absent_arguments(
                block.as_object(),
                ("tool_use block", "input"),
                &["arguments", "parameters"],
            ),
            Some(Value::Object(o)) => Ok(Value::Object(o.clone())),
            Some(other) => Err(texts::agents::input_not_an_object(&other.to_string())),
        };
        calls.push(AgentCall {
            tool: field("name")?,
            arguments,
            call_id: Some(field("id")?),
            idempotency_key: None,
            trace: None,
        });
    }
    if calls.is_empty() {
        return Err(refuse("no tool_use blocks found".into()));
    }
    if let Some(id) = repeated_call_id(&calls) {
        return Err(ProtocolError::new(texts::agents::repeated_call_id(
            "id", id,
        )));
    }
    Ok(AnthropicCalls { calls, options })
}

/// The answer: the user message with one `tool_result` per result, in order.
pub fn render(results: &[AgentResult]) -> Value {
    let content: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.text, "is_error": r.is_error})
        })
        .collect();
    json!({ "role": "user", "content": content })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallMode;

    #[test]
    fn tool_use_blocks_are_taken_in_order_and_other_blocks_skipped() {
        let msg = json!({"role": "assistant", "mode": "background", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "search_hotels", "input": {"city_code": "PAR"}},
            {"type": "tool_use", "id": "toolu_2", "name": "search_flights", "input": "oops"}
        ]});
        let read = parse(msg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.options.mode, CallMode::Background);
        assert_eq!(read.calls.len(), 2);
        assert_eq!(read.calls[0].call_id.as_deref(), Some("toolu_1"));
        assert!(read.calls[1].arguments.is_err());
    }

    #[test]
    fn arguments_put_where_openai_keeps_them_are_named_not_dropped() {
        let read = parse(json!([
            {"type": "tool_use", "id": "toolu_1", "name": "search_hotels",
             "arguments": {"city_code": "PAR"}},
            {"type": "tool_use", "id": "toolu_2", "name": "search_hotels"}
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read.calls[0].arguments,
            Err("this tool_use block has its arguments in \"arguments\", but it carries them in \"input\"; move them there and call again".into())
        );
        assert_eq!(
            read.calls[1].arguments,
            Ok(json!({})),
            "no arguments at all"
        );
    }

    #[test]
    fn bodies_without_tool_use_say_what_to_send() {
        for body in [
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({}),
            json!([]),
            json!(1),
            json!([{"type": "tool_use", "name": "search_hotels"}]),
        ] {
            let e = parse(body.clone())
                .err()
                .unwrap_or_else(|| panic!("{body}"));
            assert!(e.message().ends_with(SHAPES), "{e}");
        }
    }

    #[test]
    fn two_tool_use_blocks_under_one_id_are_refused_naming_it() {
        let body = json!([
            {"type": "tool_use", "id": "toolu_1", "name": "search_hotels", "input": {}},
            {"type": "tool_use", "id": "toolu_1", "name": "search_flights", "input": {}}
        ]);
        let e = parse(body).err().unwrap_or_else(|| panic!("refused"));
        assert!(e.message().contains("\"toolu_1\""), "{e}");
        assert!(e.message().contains("its own"), "{e}");
    }

    #[test]
    fn results_carry_the_error_flag() {
        let results = [AgentResult::not_run(
            Some("toolu_1".into()),
            "[unavailable] x".into(),
        )];
        assert_eq!(
            render(&results),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                   "content": "[unavailable] x", "is_error": true}]})
        );
    }
}

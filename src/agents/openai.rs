//! OpenAI tool calls in, tool results out (`POST /v1/openai/tool_calls`).
//!
//! Accepted bodies (a chat backend forwards what the model produced, unchanged):
//! - a Chat Completions assistant message (`{"role": "assistant", "tool_calls": [...]}`) or its
//!   `tool_calls` array; each call's `function.arguments` is a JSON **string** →
//!   `{"messages": [{"role": "tool", "tool_call_id", "content"}]}`;
//! - Responses API `function_call` items, as an array or as an object with `output` (a whole
//!   response: other item types such as `message` or `reasoning` are skipped) →
//!   `{"output": [{"type": "function_call_output", "call_id", "output"}]}`.
//!
//! A custom tool call (free-form `input`: Chat Completions `type: "custom"`, a Responses API
//! `custom_tool_call`) is answered in its place, as that call's error text: every tool here is
//! a function tool. Left out, its id would get no output, and OpenAI refuses the next request
//! of a conversation that leaves a call unanswered.
//!
//! Object bodies may add `mode` (`"interactive"`, `"background"`) and `deadline_ms`. Results
//! come back in the order the calls were received. OpenAI has no error flag on tool results,
//! so the status is in the text (see [`super::text`]). A malformed `arguments` string is that
//! call's error text, not a refused body.

use serde_json::{Map, Value, json};

use super::call::{AgentCall, AgentResult, absent_arguments, repeated_call_id};
use super::error::ProtocolError;
use super::options::CallOptions;
use crate::texts;

/// Which OpenAI API the calls came from, which decides the answer's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Chat Completions `tool_calls`.
    Chat,
    /// Responses API `function_call` items.
    Responses,
}

/// The calls of one body.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiCalls {
    /// The API the answer is shaped for.
    pub api: Api,
    /// The calls, in the order received (never empty).
    pub calls: Vec<AgentCall>,
    /// Mode and deadline for every call.
    pub options: CallOptions,
    /// The ids of the custom tool calls among `calls`: a Responses API answer gives each a
    /// `custom_tool_call_output`.
    pub custom: Vec<String>,
}

/// The Responses API item of a custom tool call.
const CUSTOM_ITEM: &str = "custom_tool_call";

const SHAPES: &str = "send a Chat Completions assistant message with tool_calls, its tool_calls array, or Responses API function_call items (an array, or an object with output)";

/// Reads a body; a refusal says which shapes are accepted.
pub fn parse(body: Value) -> Result<OpenAiCalls, ProtocolError> {
    let refuse = |what: String| ProtocolError::new(format!("{what}; {SHAPES}"));
    let (list, options) = match body {
        Value::Array(list) => (list, CallOptions::default()),
        Value::Object(mut obj) => {
            let options = CallOptions::from_body(&obj)?;
            let list = match (obj.remove("tool_calls"), obj.remove("output")) {
                (Some(Value::Array(l)), _) | (None, Some(Value::Array(l))) => l,
                (Some(other), _) => {
                    return Err(refuse(format!(
                        "tool_calls must be an array of tool calls, but it is {}",
                        crate::tools::json_type(&other)
                    )));
                }
                // A whole Chat Completions response: the message is one level down.
                _ if obj.contains_key("choices") => {
                    return Err(refuse(
                        "no tool calls found: this is a whole Chat Completions response; send the message of the choice to run (choices[0].message)".into(),
                    ));
                }
                _ => return Err(refuse("no tool calls found".into())),
            };
            (list, options)
        }
        _ => return Err(refuse("unexpected JSON".into())),
    };
    let responses = list.iter().any(|i| {
        matches!(
            i.get("type").and_then(Value::as_str),
            Some("function_call" | CUSTOM_ITEM)
        )
    });
    if !responses && let Some(kinds) = responses_items_without_calls(&list) {
        return Err(refuse(format!(
            "no function_call items found: these Responses API items ({kinds}) carry no tool call, so the model called no tool"
        )));
    }
    let mut calls = Vec::new();
    let mut custom = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            return Err(refuse(format!("item {i} is not an object")));
        };
        let kind = obj.get("type").and_then(Value::as_str);
        let call = if responses && kind == Some(CUSTOM_ITEM) {
            let call = custom_call(obj, obj, "call_id", i)?;
            custom.extend(call.call_id.clone());
            call
        } else if responses {
            if kind != Some("function_call") {
                continue; // messages, reasoning and other output items carry no call
            }
            AgentCall {
                tool: string_field(obj, "name", i)?,
                arguments: arguments(obj.get("arguments")),
                call_id: Some(string_field(obj, "call_id", i)?),
                idempotency_key: None,
                trace: None,
            }
        } else if kind == Some("custom")
            && let Some(input) = obj.get("custom").and_then(Value::as_object)
        {
            custom_call(input, obj, "id", i)?
        } else {
            let Some(function) = obj.get("function").and_then(Value::as_object) else {
                return Err(refuse(format!("tool_calls[{i}] has no function object")));
            };
            AgentCall {
                tool: string_field(function, "name", i)?,
                arguments: match function.get("arguments") {
                    None => absent_arguments(
                        Some(function),
                        ("tool call's function", "arguments"),
                        &["input", "parameters"],
                    ),
                    raw => arguments(raw),
                },
                call_id: Some(string_field(obj, "id", i)?),
                idempotency_key: None,
                trace: None,
            }
        };
        calls.push(call);
    }
    if calls.is_empty() {
        return Err(refuse("no tool calls found".into()));
    }
    if let Some(id) = repeated_call_id(&calls) {
        let field = if responses { "call_id" } else { "id" };
        return Err(ProtocolError::new(texts::agents::repeated_call_id(
            field, id,
        )));
    }
    let api = if responses { Api::Responses } else { Api::Chat };
    Ok(OpenAiCalls {
        api,
        calls,
        options,
        custom,
    })
}

/// A custom tool call, named in `named` and identified by `id_key` in `obj`: its free-form
/// input is not read, and its error text says to call the tool as a function.
fn custom_call(
    named: &Map<String, Value>,
    obj: &Map<String, Value>,
    id_key: &str,
    i: usize,
) -> Result<AgentCall, ProtocolError> {
    Ok(AgentCall {
        tool: string_field(named, "name", i)?,
        arguments: Err(texts::agents::custom_tool_call()),
        call_id: Some(string_field(obj, id_key, i)?),
        idempotency_key: None,
        trace: None,
    })
}

/// The answer: one tool message (Chat) or `function_call_output` item (Responses; a
/// `custom_tool_call_output` for a call among `custom`) per result, in order.
pub fn render(api: Api, custom: &[String], results: &[AgentResult]) -> Value {
    match api {
        Api::Chat => json!({
            "messages": results.iter().map(|r| json!({
                "role": "tool", "tool_call_id": r.call_id, "content": r.text,
            })).collect::<Vec<_>>()
        }),
        Api::Responses => json!({
            "output": results.iter().map(|r| {
                let kind = if custom.contains(&r.call_id) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                json!({"type": kind, "call_id": r.call_id, "output": r.text})
            }).collect::<Vec<_>>()
        }),
    }
}

/// The `type`s of a list of Responses API items none of which is a call (a `message`, a
/// `reasoning` item), or `None` when the list looks like anything else. Chat Completions
/// calls carry a `function` object and the type `"function"`.
fn responses_items_without_calls(list: &[Value]) -> Option<String> {
    let mut kinds: Vec<&str> = Vec::new();
    for item in list {
        let kind = item.get("type").and_then(Value::as_str)?;
        if kind == "function" || item.get("function").is_some() || item.get("custom").is_some() {
            return None;
        }
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    (!kinds.is_empty()).then(|| kinds.join(", "))
}

fn string_field(obj: &Map<String, Value>, key: &str, i: usize) -> Result<String, ProtocolError> {
    match obj.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ProtocolError::new(format!(
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
        Some(Value::String(s)) => super::body::parse_strict(s.as_bytes())
            .map_err(|e| texts::agents::arguments_not_json(&super::body::explain(&e))),
        Some(Value::Object(o)) => Ok(Value::Object(o.clone())),
        Some(other) => Err(texts::agents::arguments_not_a_string(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_that_repeat_a_key_are_that_calls_error_naming_the_key() {
        let body = json!([{"id": "call_1", "type": "function", "function": {
            "name": "search_flights",
            "arguments": "{\"origin\":\"JFK\",\"origin\":\"BOS\",\"destination\":\"LHR\"}"}}]);
        let calls = parse(body).unwrap_or_else(|e| panic!("{e}"));
        let arguments = &calls.calls[0].arguments;
        assert!(
            arguments
                .as_ref()
                .is_err_and(|e| e.contains("duplicate key \"origin\"")),
            "{arguments:?}"
        );
    }

    #[test]
    fn two_tool_calls_under_one_id_are_refused_naming_the_field() {
        let call = |name: &str| json!({"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}});
        let e = parse(json!([call("search_hotels"), call("search_flights")]))
            .err()
            .unwrap_or_else(|| panic!("refused"));
        assert!(e.message().contains("id \"call_1\""), "{e}");
        let item = |name: &str| json!({"type": "function_call", "call_id": "call_9", "name": name, "arguments": "{}"});
        let e = parse(json!([item("search_hotels"), item("search_flights")]))
            .err()
            .unwrap_or_else(|| panic!("refused"));
        assert!(e.message().contains("call_id \"call_9\""), "{e}");
    }

    #[test]
    fn chat_messages_arrays_and_responses_items_are_recognised() {
        let call = json!({"id": "call_1", "type": "function",
                          "function": {"name": "search_hotels", "arguments": "{\"city_code\":\"PAR\"}"}});
        let read =
            parse(json!({"role": "assistant", "content": null, "tool_calls": [call.clone()]}))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.api, Api::Chat);
        assert_eq!(read.calls[0].call_id.as_deref(), Some("call_1"));
        assert_eq!(read.calls[0].arguments, Ok(json!({"city_code": "PAR"})));
        let read = parse(json!([call])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.api, Api::Chat);

        let items = json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "search_flights", "arguments": "{not json"}
        ]);
        let read = parse(json!({"output": items, "mode": "interactive"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.api, Api::Responses);
        assert_eq!(read.calls.len(), 1);
        assert_eq!(read.calls[0].call_id.as_deref(), Some("call_9"));
        assert!(
            read.calls[0].arguments.is_err(),
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
            let e = parse(body.clone())
                .err()
                .unwrap_or_else(|| panic!("{body}"));
            assert!(e.message().ends_with(SHAPES), "{e}");
        }
        assert!(parse(json!({"tool_calls": [], "mode": "later"})).is_err());
        let whole = json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "tool_calls": []}}]});
        let e = parse(whole)
            .err()
            .unwrap_or_else(|| panic!("a whole response"));
        assert!(
            e.message()
                .contains("a whole Chat Completions response; send the message of the choice to run (choices[0].message)"),
            "{e}"
        );
    }

    #[test]
    fn a_response_without_calls_and_arguments_under_another_name_are_explained() {
        let answer_only = json!({"id": "resp_1", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": []}]});
        let e = parse(answer_only)
            .err()
            .unwrap_or_else(|| panic!("a response with no call"));
        assert!(
            e.message().starts_with(
                "no function_call items found: these Responses API items (reasoning, message) carry no tool call"
            ) && e.message().ends_with(SHAPES),
            "{e}"
        );
        let read = parse(json!({"tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "search_hotels", "parameters": {"city_code": "PAR"}}},
            {"id": "call_2", "type": "function", "function": {"name": "search_hotels"}}]}))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read.calls[0].arguments,
            Err("this tool call's function has its arguments in \"parameters\", but it carries them in \"arguments\"; move them there and call again".into())
        );
        assert_eq!(read.calls[1].arguments, Ok(json!({})));
    }

    /// A custom tool call is that call's error text, in either API, never a refused body nor
    /// a call left unanswered; a Responses API one is answered as a custom tool's output.
    #[test]
    fn custom_tool_calls_are_answered_as_calls_to_make_as_functions() {
        let function = json!({"id": "call_1", "type": "function",
                              "function": {"name": "search_hotels", "arguments": "{}"}});
        let custom = json!({"id": "call_2", "type": "custom",
                            "custom": {"name": "search_flights", "input": "JFK to LHR"}});
        for list in [json!([function.clone(), custom.clone()]), json!([custom])] {
            let read = parse(json!({"tool_calls": list})).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read.api, Api::Chat);
            let last = read.calls.last().unwrap_or_else(|| panic!("calls"));
            assert_eq!(
                (last.tool.as_str(), last.call_id.as_deref()),
                ("search_flights", Some("call_2"))
            );
            assert_eq!(last.arguments, Err(texts::agents::custom_tool_call()));
        }

        let items = json!([
            {"type": "function_call", "call_id": "call_8", "name": "search_hotels", "arguments": "{}"},
            {"type": "custom_tool_call", "call_id": "call_9", "name": "search_flights", "input": "JFK"}
        ]);
        for list in [items.clone(), json!([items[1].clone()])] {
            let read = parse(json!({"output": list})).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read.api, Api::Responses);
            assert_eq!(read.custom, ["call_9"]);
            let results: Vec<AgentResult> = read
                .calls
                .iter()
                .map(|c| AgentResult::not_run(c.call_id.clone(), "x".into()))
                .collect();
            let output = render(read.api, &read.custom, &results);
            let last = output["output"].as_array().and_then(|o| o.last()).cloned();
            assert_eq!(
                last,
                Some(
                    json!({"type": "custom_tool_call_output", "call_id": "call_9", "output": "x"})
                )
            );
        }
    }

    #[test]
    fn answers_keep_the_order_and_ids_of_the_calls() {
        let results = [
            AgentResult::not_run(Some("a".into()), "one".into()),
            AgentResult::not_run(Some("b".into()), "two".into()),
        ];
        assert_eq!(
            render(Api::Chat, &[], &results),
            json!({"messages": [
                {"role": "tool", "tool_call_id": "a", "content": "one"},
                {"role": "tool", "tool_call_id": "b", "content": "two"}]})
        );
        assert_eq!(
            render(Api::Responses, &[], &results),
            json!({"output": [
                {"type": "function_call_output", "call_id": "a", "output": "one"},
                {"type": "function_call_output", "call_id": "b", "output": "two"}]})
        );
    }
}

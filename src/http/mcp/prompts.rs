//! MCP prompts: the agent guidance and a short usage prompt per tool.
//!
//! Why prompts: a client that builds its system prompt from the server (Claude Desktop's prompt
//! picker, the Inspector, SDK clients calling `prompts/get`) then tells its model how to treat
//! `stale` and `unavailable` results, the one thing a model cannot learn from a tool schema.
//! The guidance is the same text as `GET /v1/prompts/agent-guidance` and the `initialize`
//! instructions, so a 2026-07-28 client (which has no `initialize`) can read it too.
//!
//! Both are per caller: the guidance without the lines about tools the client may not call, and
//! usage prompts only for the tools it may call. Neither takes arguments. The usage prompt's
//! sentences are in [`crate::texts::agents::tool_usage`]; the argument names come from the
//! tool's input schema, so they cannot drift from what the tool accepts.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, ListPromptsResult, Prompt, PromptMessage, Role};
use serde_json::{Value, json};

use crate::call::ServedTool;
use crate::clients::Scope;
use crate::http::api::catalog::guidance_for;
use crate::http::calls::in_scope;
use crate::http::state::AppState;
use crate::texts::agents as texts;

/// The name of the guidance prompt.
pub(super) const GUIDANCE: &str = "agent-guidance";

/// `prompts/list`: the guidance (when `prompts/agent-guidance.md` exists), then one usage prompt
/// per tool the caller may call, in catalog order.
pub(super) fn list(state: &AppState, scope: &Scope) -> ListPromptsResult {
    let mut prompts = Vec::new();
    if guidance_for(state, scope).is_some() {
        prompts.push(
            Prompt::new(
                GUIDANCE,
                Some("How to treat faregate's tool results (ok, stale, unavailable, rejected, invalid_arguments, queued) and bookings; use it as (part of) the system prompt."),
                None,
            )
            .with_title("faregate agent guidance"),
        );
    }
    for tool in state.gateway.tools().iter().filter(|t| in_scope(scope, t)) {
        prompts.push(
            Prompt::new(
                tool.spec.name,
                Some(format!(
                    "How to use {} ({}): its arguments, and whether it books.",
                    tool.spec.name, tool.spec.title
                )),
                None,
            )
            .with_title(format!("Using {}", tool.spec.name)),
        );
    }
    ListPromptsResult::with_all_items(prompts)
}

/// `prompts/get`: one user message with the prompt's text, or `-32602` naming the prompts the
/// caller may read.
pub(super) fn get(
    state: &AppState,
    scope: &Scope,
    name: &str,
) -> Result<GetPromptResult, ErrorData> {
    if name == GUIDANCE
        && let Some(text) = guidance_for(state, scope)
    {
        return Ok(result("faregate agent guidance", text.trim()));
    }
    let tool = state.gateway.tool(name).filter(|t| in_scope(scope, t));
    match tool {
        Some(tool) => Ok(result(&format!("Using {}", tool.spec.name), &usage(&tool))),
        None => {
            let known: Vec<String> = list(state, scope)
                .prompts
                .into_iter()
                .map(|p| p.name)
                .collect();
            Err(ErrorData::invalid_params(
                format!(
                    "there is no prompt named {name:?}; the prompts are: {}",
                    known.join(", ")
                ),
                Some(json!({ "prompts": known })),
            ))
        }
    }
}

fn result(description: &str, text: &str) -> GetPromptResult {
    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
        .with_description(description)
}

/// The usage text of `tool`, with its argument names read from its input schema.
fn usage(tool: &ServedTool) -> String {
    let schema = tool.spec.input_schema();
    let (required, optional) = argument_names(&schema);
    let required: Vec<&str> = required.iter().map(String::as_str).collect();
    let optional: Vec<&str> = optional.iter().map(String::as_str).collect();
    texts::tool_usage(
        tool.spec.name,
        tool.spec.title,
        &tool.config.description,
        &required,
        &optional,
        tool.is_write(),
    )
}

/// The schema's top-level property names, required ones first, each in schema order.
fn argument_names(schema: &Value) -> (Vec<String>, Vec<String>) {
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let optional = schema["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .filter(|k| !required.contains(k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    (required, optional)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_names_split_required_from_optional() {
        let schema = json!({
            "type": "object",
            "properties": {"origin": {}, "destination": {}, "cabin": {}},
            "required": ["origin", "destination"],
        });
        let (required, optional) = argument_names(&schema);
        assert_eq!(required, ["origin", "destination"]);
        assert_eq!(optional, ["cabin"]);
        assert_eq!(argument_names(&json!({})), (vec![], vec![]));
    }
}

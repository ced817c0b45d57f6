//! The watch tools over MCP: `watch_create`, `watch_list` and `watch_delete` in `tools/list`
//! (after the catalog's tools, for a client that is offered them) and their `tools/call`,
//! carried out by the same code as the OpenAI and Anthropic routes
//! ([`crate::http::api::watch_tools`]), so a model reads the same text in every protocol.
//!
//! A watch tool's result is text only (no `structuredContent`, no `outputSchema`), with
//! `isError` raised when the call was refused; a refusal is a tool result the model reads,
//! never a JSON-RPC error.

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use serde_json::Value;

use crate::agents::manifest;
use crate::agents::watch_tools;
use crate::clients::Scope;
use crate::http::api::watch_tools::{offered, run};
use crate::http::edge::Caller;
use crate::http::state::AppState;

/// The watch tools as rmcp `Tool`s, where the gateway keeps watches (each client is shown them
/// only if it is offered them: [`listed`]).
pub(super) fn tools(state: &AppState) -> Vec<Tool> {
    if state.watches.is_none() {
        return Vec::new();
    }
    watch_tools::TOOLS
        .iter()
        .filter_map(|t| {
            match serde_json::from_value::<Tool>(manifest::mcp_watch_tool(t)) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    // The manifest tests pin this shape; a failure here is a bug.
                    tracing::error!(tool = t.name, error = %e, "MCP tool object rejected by rmcp");
                    None
                }
            }
        })
        .collect()
}

/// Whether `tools/list` shows the tool `name` to a client with `scope` as a watch tool.
pub(super) fn listed(state: &AppState, scope: &Scope, name: &str) -> bool {
    offered(state, scope).iter().any(|t| t.name == name)
}

/// The result of a watch tool's `tools/call`; `None` when the request names no watch tool.
pub(super) async fn call(
    state: &AppState,
    caller: &Caller,
    request: &CallToolRequestParams,
) -> Option<CallToolResult> {
    let arguments = Ok(Value::Object(request.arguments.clone().unwrap_or_default()));
    let result = run(state, caller, &request.name, &arguments, None).await?;
    let mut out = CallToolResult::success(vec![ContentBlock::text(result.text)]);
    out.is_error = Some(result.is_error);
    Some(out)
}

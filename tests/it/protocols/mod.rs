//! The agent protocol endpoints (OpenAI, Anthropic, MCP, manifests, OpenAPI) end to end
//! ([`endpoints`]), background mode through them ([`background`]), what an MCP client
//! reads from `tools/call` ([`mcp_results`]), and MCP Tasks over the job queue ([`mcp_tasks`]). This file holds their
//! helpers: the bodies a chat backend sends and the text a model reads.

mod background;
mod endpoints;
mod mcp_cancel;
mod mcp_fleet;
mod mcp_list_changed;
mod mcp_progress;
mod mcp_prompts;
mod mcp_results;
mod mcp_tasks;

use serde_json::{Value, json};

use crate::support::in_days;

/// A valid `search_hotels` argument object (three weeks ahead).
pub(crate) fn hotels_args() -> Value {
    json!({"city_code": "PAR", "check_in_date": in_days(21), "check_out_date": in_days(23)})
}

pub(crate) fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

pub(crate) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

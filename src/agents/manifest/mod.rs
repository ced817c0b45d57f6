//! Tool manifests in every format a model provider or MCP client reads.
//!
//! **Architecture invariant:** this is the only module that knows the OpenAI, Anthropic,
//! Gemini and MCP tool JSON shapes, and the only one that reshapes the schemas schemars derives
//! from the tool types (OpenAI strict mode, portable formats). `GET /v1/tools?format=…`,
//! `faregate manifest --format …` and MCP `tools/list` all render through here, so they cannot
//! drift apart.
//!
//! Formats (each an object whose `tools` value is ready to paste into a request):
//! - `openai`: Chat Completions function tools, `strict: true`, with [`openai_strict`] schemas;
//! - `anthropic`: `{name, description, input_schema}`;
//! - `gemini`: one `functionDeclarations` entry with `parametersJsonSchema`;
//! - `mcp`: MCP `Tool` objects with `inputSchema`, `outputSchema` and `annotations`.
//!
//! After the catalog's tools come the watch tools ([`super::watch_tools`]) where the gateway
//! keeps watches, in every format but `native`.
//!
//! All four take the schemas through [`portable`] first: the root `title` (the Rust type's
//! name) and schemars' Rust-only `format` values (`uint8`, `double`, …) are dropped (see
//! `schema.rs`).

mod schema;

use serde_json::{Value, json};

pub use schema::{drop_optional_nulls, openai_strict, portable, without_dialect};

use super::watch_tools::WatchTool;
use crate::config::ToolConfig;
use crate::tools::{Access, CallMode, ToolSpec};

/// A manifest format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The gateway's own shape (`GET /v1/tools` without `format`).
    Native,
    /// OpenAI Chat Completions function tools (strict mode).
    OpenAi,
    /// Anthropic Messages API tools.
    Anthropic,
    /// MCP `tools/list` tool objects.
    Mcp,
    /// Gemini function declarations.
    Gemini,
}

impl Format {
    /// Every format's name, for messages.
    pub const NAMES: &'static str = "native, openai, anthropic, mcp, gemini";

    /// Parses a format name.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "native" => Ok(Format::Native),
            "openai" => Ok(Format::OpenAi),
            "anthropic" => Ok(Format::Anthropic),
            "mcp" => Ok(Format::Mcp),
            "gemini" => Ok(Format::Gemini),
            other => Err(format!(
                "format \"{other}\" is not known; use one of: {}",
                Self::NAMES
            )),
        }
    }
}

/// One tool as a manifest shows it: its catalog entry and its configuration (the description
/// the model reads, and for `native` the policy and providers).
#[derive(Debug, Clone, Copy)]
pub struct ManifestTool<'a> {
    /// The catalog entry (name, title, access, schemas).
    pub spec: &'static ToolSpec,
    /// Its `tools/<tool>.toml`.
    pub config: &'a ToolConfig,
}

/// The native description of one tool: its catalog facts, its policy and `providers` (those
/// of its chain that serve it), as `GET /v1/tools` and `faregate manifest` both show it.
pub fn native_entry(spec: &ToolSpec, c: &ToolConfig, providers: &[&str]) -> Value {
    json!({
        "name": spec.name,
        "title": spec.title,
        "description": c.description.trim(),
        "kind": match spec.access { Access::Read => "read", Access::Write => "write" },
        "idempotent": spec.idempotent,
        "built_for": match spec.built_for { CallMode::Interactive => "interactive", CallMode::Background => "background" },
        "needs_idempotency_key": spec.needs_idempotency_key,
        "input_schema": spec.input_schema(),
        "output_schema": spec.output_schema(),
        "providers": providers,
        "policy": {
            "timeout_ms": c.timeout.as_millis() as u64,
            "deadline_ms": c.deadline.as_millis() as u64,
            "max_concurrent": c.max_concurrent,
            "stale_for_s": c.stale_for.as_secs(),
            "fresh_for_s": c.fresh_for.as_secs(),
            "retry_attempts": if spec.idempotent { c.retry.attempts() } else { 1 },
        },
    })
}

/// Renders `tools`, in the order given (the catalog's), then `watch_tools`, as `{"tools": …}`
/// in `format`.
///
/// `Native` is [`native_entry`] of each tool with the providers its configuration names, what
/// `faregate manifest` prints (`GET /v1/tools` gives the providers that serve it). It lists no
/// watch tool: the native API has `/v1/watches` instead.
pub fn render(format: Format, tools: &[ManifestTool<'_>], watch_tools: &[&WatchTool]) -> Value {
    if format == Format::Native {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let providers: Vec<&str> = t.config.providers.iter().map(String::as_str).collect();
                native_entry(t.spec, t.config, &providers)
            })
            .collect();
        return json!({ "tools": tools });
    }
    let entries: Vec<Entry<'_>> = tools
        .iter()
        .map(|t| Entry::of_tool(t.spec, &t.config.description))
        .chain(watch_tools.iter().map(|t| Entry::of_watch_tool(t)))
        .collect();
    let tools: Vec<Value> = match format {
        Format::OpenAi => entries.iter().map(openai_tool).collect(),
        Format::Anthropic => entries.iter().map(anthropic_tool).collect(),
        Format::Mcp => entries.iter().map(mcp_entry).collect(),
        Format::Native | Format::Gemini => {
            let declarations: Vec<Value> = entries.iter().map(gemini_declaration).collect();
            return json!({ "tools": [{ "functionDeclarations": declarations }] });
        }
    };
    json!({ "tools": tools })
}

/// What every format shows of one tool, whether a catalog tool or a watch tool.
#[derive(Debug)]
struct Entry<'a> {
    name: &'static str,
    title: &'static str,
    description: &'a str,
    input_schema: Value,
    /// `None` for a watch tool, whose answer is text only.
    output_schema: Option<Value>,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

impl<'a> Entry<'a> {
    fn of_tool(spec: &'static ToolSpec, description: &'a str) -> Self {
        let read = spec.access == Access::Read;
        Entry {
            name: spec.name,
            title: spec.title,
            description: description.trim(),
            input_schema: spec.input_schema(),
            output_schema: Some(spec.output_schema()),
            read_only: read,
            // See `mcp_tool` for why a booking is destructive.
            destructive: !read,
            idempotent: spec.idempotent,
            open_world: true,
        }
    }

    fn of_watch_tool(tool: &WatchTool) -> Self {
        Entry {
            name: tool.name,
            title: tool.title,
            description: tool.description,
            input_schema: tool.input_schema(),
            output_schema: None,
            read_only: tool.read_only,
            destructive: tool.destructive,
            idempotent: tool.idempotent,
            open_world: tool.open_world,
        }
    }
}

fn openai_tool(t: &Entry<'_>) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": openai_strict(&t.input_schema),
            "strict": true,
        }
    })
}

fn anthropic_tool(t: &Entry<'_>) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "input_schema": without_dialect(portable(&t.input_schema)),
    })
}

fn gemini_declaration(t: &Entry<'_>) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "parametersJsonSchema": without_dialect(portable(&t.input_schema)),
    })
}

/// The MCP `Tool` object of one tool (also what `/mcp` answers to `tools/list`).
///
/// Annotations: reads are `readOnlyHint`; every tool reaches a provider outside the gateway
/// (`openWorldHint`); `idempotentHint` is the catalog's `idempotent`. `book_flight` is
/// `destructiveHint: true`: a booking only adds an order, but it spends the traveller's money
/// and this gateway cannot undo it, and clients use the hint to ask the user before calling,
/// which is what a booking needs (it is also the MCP default when the hint is absent).
pub fn mcp_tool(spec: &'static ToolSpec, description: &str) -> Value {
    mcp_entry(&Entry::of_tool(spec, description))
}

/// The MCP `Tool` object of a watch tool: no `outputSchema` (its answer is text), and
/// `watch_delete` is destructive (it removes the watch and its news).
pub fn mcp_watch_tool(tool: &WatchTool) -> Value {
    mcp_entry(&Entry::of_watch_tool(tool))
}

fn mcp_entry(t: &Entry<'_>) -> Value {
    let mut tool = json!({
        "name": t.name,
        "title": t.title,
        "description": t.description,
        "inputSchema": portable(&t.input_schema),
        "annotations": {
            "title": t.title,
            "readOnlyHint": t.read_only,
            "destructiveHint": t.destructive,
            "idempotentHint": t.idempotent,
            "openWorldHint": t.open_world,
        },
    });
    if let Some(output) = &t.output_schema {
        tool["outputSchema"] = portable(output);
    }
    tool
}

#[cfg(test)]
mod tests;

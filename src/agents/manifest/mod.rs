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
//! All four take the schemas through [`portable`] first: the root `title` (the Rust type's
//! name) and schemars' Rust-only `format` values (`uint8`, `double`, …) are dropped (see
//! `schema.rs`).

mod schema;

use serde_json::{Value, json};

pub use schema::{drop_optional_nulls, openai_strict, portable, without_dialect};

use crate::tools::{Access, ToolSpec};

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

/// One tool as a manifest shows it: its catalog entry and the configured description.
#[derive(Debug, Clone, Copy)]
pub struct ManifestTool<'a> {
    /// The catalog entry (name, title, access, schemas).
    pub spec: &'static ToolSpec,
    /// The description the model reads (`tools/<tool>.toml`).
    pub description: &'a str,
}

/// Renders `tools`, in the order given (the catalog's), as `{"tools": …}` in `format`.
///
/// `Native` here is the configuration-only view `faregate manifest` prints (name, description,
/// schemas); `GET /v1/tools` adds providers, policy and breaker facts itself.
pub fn render(format: Format, tools: &[ManifestTool<'_>]) -> Value {
    let tools: Vec<Value> = match format {
        Format::Native => tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.spec.name,
                    "description": t.description.trim(),
                    "input_schema": t.spec.input_schema(),
                    "output_schema": t.spec.output_schema(),
                })
            })
            .collect(),
        Format::OpenAi => tools.iter().map(|t| openai_tool(*t)).collect(),
        Format::Anthropic => tools.iter().map(|t| anthropic_tool(*t)).collect(),
        Format::Mcp => tools
            .iter()
            .map(|t| mcp_tool(t.spec, t.description))
            .collect(),
        Format::Gemini => {
            let declarations: Vec<Value> = tools.iter().map(|t| gemini_declaration(*t)).collect();
            return json!({ "tools": [{ "functionDeclarations": declarations }] });
        }
    };
    json!({ "tools": tools })
}

fn openai_tool(t: ManifestTool<'_>) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": t.spec.name,
            "description": t.description.trim(),
            "parameters": openai_strict(&t.spec.input_schema()),
            "strict": true,
        }
    })
}

fn anthropic_tool(t: ManifestTool<'_>) -> Value {
    json!({
        "name": t.spec.name,
        "description": t.description.trim(),
        "input_schema": without_dialect(portable(&t.spec.input_schema())),
    })
}

fn gemini_declaration(t: ManifestTool<'_>) -> Value {
    json!({
        "name": t.spec.name,
        "description": t.description.trim(),
        "parametersJsonSchema": without_dialect(portable(&t.spec.input_schema())),
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
    let read = spec.access == Access::Read;
    json!({
        "name": spec.name,
        "title": spec.title,
        "description": description.trim(),
        "inputSchema": portable(&spec.input_schema()),
        "outputSchema": portable(&spec.output_schema()),
        "annotations": {
            "title": spec.title,
            "readOnlyHint": read,
            "destructiveHint": !read,
            "idempotentHint": spec.idempotent,
            "openWorldHint": true,
        },
    })
}

#[cfg(test)]
mod tests;

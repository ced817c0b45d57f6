//! `GET /v1/tools`, `GET /v1/tools/{tool}` and `GET /v1/prompts/agent-guidance`: what a
//! developer registers with a model.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::agents::manifest::{self, Format, ManifestTool};
use crate::agents::{guidance, watch_tools};
use crate::call::ServedTool;
use crate::clients::Scope;
use crate::http::calls::{allowed_tools, in_scope, out_of_scope, unknown_tool};
use crate::http::edge::{ApiError, Caller, PathParam};
use crate::http::state::{AppState, SharedState};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CatalogQuery {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    available: Option<bool>,
}

/// The native description of one served tool, with the providers that serve it.
fn describe(tool: &ServedTool) -> Value {
    manifest::native_entry(tool.spec, &tool.config, &tool.provider_names())
}

/// `GET /v1/tools?format=native|openai|anthropic|mcp|gemini&available=true`.
///
/// The list is in catalog order and stable; `available=true` leaves out tools none of whose
/// breakers admits calls now, for agents that pick their tools per turn. Every format but
/// `native` ends with the watch tools the caller is offered.
pub(crate) async fn list(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<CatalogQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let scope = caller.scope();
    let Query(q) = query.map_err(|e| {
        let accepted = format!(
            "the parameters are format ({}) and available (true or false)",
            Format::NAMES
        );
        ApiError::bad_query(e, &accepted)
    })?;
    let format =
        Format::parse(q.format.as_deref().unwrap_or("native")).map_err(ApiError::bad_request)?;
    let now = Instant::now();
    let served: Vec<Arc<ServedTool>> = state
        .gateway
        .tools()
        .into_iter()
        .filter(|t| in_scope(&scope, t))
        .filter(|t| !q.available.unwrap_or(false) || state.gateway.is_available(t, now))
        .collect();
    if format == Format::Native {
        let tools: Vec<Value> = served.iter().map(|t| describe(t)).collect();
        return Ok(Json(json!({ "tools": tools })).into_response());
    }
    let tools: Vec<ManifestTool<'_>> = served
        .iter()
        .map(|t| ManifestTool {
            spec: t.spec,
            config: &t.config,
        })
        .collect();
    let watch_tools = super::watch_tools::offered(&state, &scope);
    Ok(Json(manifest::render(format, &tools, &watch_tools)).into_response())
}

/// `GET /v1/tools/{tool}`.
pub(crate) async fn one(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    PathParam(name): PathParam,
) -> Result<Response, ApiError> {
    let scope = caller.scope();
    let tool = state
        .gateway
        .tool(&name)
        .ok_or_else(|| unknown_tool(&state, &scope, &name))?;
    if !in_scope(&scope, &tool) {
        return Err(out_of_scope(&state, &scope, &name));
    }
    Ok(Json(describe(&tool)).into_response())
}

/// `GET /v1/prompts/agent-guidance`: the guidance without the lines about tools the caller may
/// not call.
pub(crate) async fn agent_guidance(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    match guidance_for(&state, &caller.scope()) {
        Some(text) => Ok(Json(json!({ "guidance": text })).into_response()),
        None => Err(ApiError::not_found(
            "no agent-guidance.md in the prompts directory",
        )),
    }
}

/// `prompts/agent-guidance.md` as a client with `scope` reads it (also the MCP server's
/// instructions), without the lines about tools it may not call or is not offered; `None`
/// without the file.
pub(crate) fn guidance_for(state: &AppState, scope: &Scope) -> Option<String> {
    let config = state.config();
    let text = config.prompts.get("agent-guidance.md")?;
    // The watch tools count as tools here: a line about them is left out where they are not
    // offered.
    let watch_tools = watch_tools::TOOLS.iter().map(|t| t.name);
    let catalog: Vec<&str> = state
        .gateway
        .tools()
        .iter()
        .map(|t| t.spec.name)
        .chain(watch_tools)
        .collect();
    let offered = super::watch_tools::offered(state, scope);
    let allowed: Vec<&str> = allowed_tools(state, scope)
        .into_iter()
        .chain(offered.iter().map(|t| t.name))
        .collect();
    Some(guidance::for_tools(text, &catalog, &allowed))
}

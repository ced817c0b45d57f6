//! `GET /v1/tools`, `GET /v1/tools/{tool}` and `GET /v1/prompts/agent-guidance`: what a
//! developer registers with a model.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use super::native::unknown_tool;
use crate::call::ServedTool;
use crate::tools::{Access, CallMode};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CatalogQuery {
    #[serde(default)]
    format: Option<String>,
}

/// The native description of one served tool.
fn describe(tool: &ServedTool) -> Value {
    let c = &tool.config;
    json!({
        "name": tool.spec.name,
        "title": tool.spec.title,
        "description": c.description.trim(),
        "kind": match tool.spec.access { Access::Read => "read", Access::Write => "write" },
        "idempotent": tool.spec.idempotent,
        "built_for": match tool.spec.built_for { CallMode::Interactive => "interactive", CallMode::Background => "background" },
        "needs_idempotency_key": tool.spec.needs_idempotency_key,
        "input_schema": tool.spec.input_schema(),
        "output_schema": tool.spec.output_schema(),
        "providers": tool.provider_names(),
        "policy": {
            "timeout_ms": c.timeout.as_millis() as u64,
            "deadline_ms": c.deadline.as_millis() as u64,
            "max_concurrent": c.max_concurrent,
            "stale_for_s": c.stale_for.as_secs(),
            "retry_attempts": if tool.spec.idempotent { c.retry.attempts } else { 1 },
        },
    })
}

/// `GET /v1/tools`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(q): Query<CatalogQuery>,
) -> Result<Response, ApiError> {
    match q.format.as_deref() {
        None | Some("native") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format \"{other}\" is not available in this build; use format=native (OpenAI, Anthropic, MCP and Gemini manifests are coming)"
            )));
        }
    }
    let tools: Vec<Value> = state.gateway.tools().iter().map(|t| describe(t)).collect();
    Ok(Json(json!({ "tools": tools })).into_response())
}

/// `GET /v1/tools/{tool}`.
pub(crate) async fn one(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let tool = state
        .gateway
        .tool(&name)
        .ok_or_else(|| unknown_tool(&state, &name))?;
    Ok(Json(describe(&tool)).into_response())
}

/// `GET /v1/prompts/agent-guidance`.
pub(crate) async fn agent_guidance(State(state): State<AppState>) -> Result<Response, ApiError> {
    match state.config.prompts.get("agent-guidance.md") {
        Some(text) => Ok(Json(json!({ "guidance": text.trim() })).into_response()),
        None => Err(ApiError::not_found(
            "no agent-guidance.md in the prompts directory",
        )),
    }
}

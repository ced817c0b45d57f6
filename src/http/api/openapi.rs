//! `GET /openapi.json`: the gateway's own OpenAPI 3.1 document.
//!
//! Written by hand rather than derived (utoipa, aide): the request and answer bodies of these
//! routes are built as JSON in the handlers (the agent endpoints accept several shapes of other
//! vendors' messages), so there are no Rust types to derive from, and a derive crate would add
//! a second schema system next to schemars. OpenAPI 3.1 schemas are JSON Schema 2020-12, so
//! each served tool's argument and result schemas (from schemars, like every manifest) are
//! included as components. Accuracy is checked by tests: every route of [`super::router`]
//! appears here and every path here is routed, and CI validates the document with
//! `openapi-spec-validator`.

use serde_json::{Map, Value, json};

use crate::http::state::AppState;
use crate::agents::manifest;

/// The document for the served tools.
pub(crate) fn document(state: &AppState) -> Value {
    let mut schemas = base_schemas();
    let mut tool_names = Vec::new();
    for tool in state.gateway.tools() {
        let name = tool.spec.name;
        tool_names.push(json!(name));
        schemas.insert(
            format!("{name}.arguments"),
            manifest::without_dialect(manifest::portable(&tool.spec.input_schema())),
        );
        schemas.insert(
            format!("{name}.data"),
            manifest::without_dialect(manifest::portable(&tool.spec.output_schema())),
        );
    }
    let tool_param = json!({
        "name": "tool", "in": "path", "required": true,
        "description": "A served tool's name; its arguments are the component schema `<tool>.arguments`.",
        "schema": {"type": "string", "enum": tool_names},
    });
    let error = |description: &str| {
        json!({"description": description,
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
    };
    let json_body = |schema: Value| json!({"required": true, "content": {"application/json": {"schema": schema}}});
    let ok_json = |description: &str, schema: Value| json!({"description": description, "content": {"application/json": {"schema": schema}}});
    let open = json!([]); // no security requirement
    let limited = json!({"description": "This client is over its request rate or its calls in flight ([limits]); retry after Retry-After seconds.",
                         "headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}},
                         "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "faregate",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A tool-call gateway for AI travel agents: per-tool circuit breakers, honest fallbacks. Tool failures are results (status 200 with status unavailable/rejected), not transport errors.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "security": [{"clientKey": []}],
        "paths": {
            "/healthz": {"get": {
                "operationId": "healthz", "summary": "Liveness.", "security": open,
                "responses": {"200": ok_json("Alive.", json!({"type": "object"}))}}},
            "/readyz": {"get": {
                "operationId": "readyz", "summary": "Readiness: at least one tool is served.", "security": open,
                "responses": {"200": ok_json("Ready.", json!({"type": "object"})),
                              "503": ok_json("No tool is served.", json!({"type": "object"}))}}},
            "/openapi.json": {"get": {
                "operationId": "openapi", "summary": "This document.",
                "responses": {"200": ok_json("The OpenAPI 3.1 document.", json!({"type": "object"})),
                              "401": error("Missing or wrong client key.")}}},
            "/v1/tools": {"get": {
                "operationId": "listTools",
                "summary": "The tool manifest, natively or ready to paste into an OpenAI, Anthropic, Gemini or MCP request.",
                "parameters": [
                    {"name": "format", "in": "query", "required": false,
                     "schema": {"type": "string", "enum": ["native", "openai", "anthropic", "mcp", "gemini"], "default": "native"}},
                    {"name": "available", "in": "query", "required": false,
                     "description": "true: leave out tools whose breakers are all open.",
                     "schema": {"type": "boolean", "default": false}}],
                "responses": {"200": ok_json("`{\"tools\": …}` in the format asked for.", json!({"type": "object", "required": ["tools"]})),
                              "400": error("Unknown format or parameter."),
                              "401": error("Missing or wrong client key.")}}},
            "/v1/tools/{tool}": {"get": {
                "operationId": "getTool", "summary": "One tool with its schemas, policy and providers.",
                "parameters": [tool_param.clone()],
                "responses": {"200": ok_json("The tool.", json!({"type": "object"})),
                              "400": error("A tool name that is not UTF-8 once percent-decoded."),
                              "401": error("Missing or wrong client key."),
                              "404": error("Unknown tool; the body lists the known ones.")}}},
            "/v1/tools/{tool}/call": {"post": {
                "operationId": "callTool", "summary": "Run one tool call; the answer is a tool result envelope.",
                "parameters": [tool_param],
                "requestBody": json_body(json!({"$ref": "#/components/schemas/CallBody"})),
                "responses": {
                    "200": ok_json("ok, stale, unavailable or rejected.", json!({"$ref": "#/components/schemas/Envelope"})),
                    "202": ok_json("queued: a background call was accepted (or its idempotency key named an existing job); job_id set.", json!({"$ref": "#/components/schemas/Envelope"})),
                    "400": error("Malformed JSON or body: syntax, nesting deeper than 128, duplicate keys, unknown fields, wrong types, unprintable call_id or idempotency_key; or a tool name that is not UTF-8 once percent-decoded."),
                    "401": error("Missing or wrong client key."),
                    "404": error("Unknown tool; the body lists the known ones."),
                    "413": error("Body too large."),
                    "415": error("The body is declared as something other than JSON."),
                    "422": ok_json("invalid_arguments (an envelope naming each bad field), or a callback_url refused by the allowlist or the private-address check (an error naming the field).",
                                   json!({"oneOf": [{"$ref": "#/components/schemas/Envelope"}, {"$ref": "#/components/schemas/Error"}]})),
                    "429": limited.clone(),
                    "501": error("mode background on a gateway without a job store."),
                    "503": error("The job store did not answer (the background call was not accepted), or the request took longer than [server] request_timeout.")}}},
            "/v1/breakers": {"get": {
                "operationId": "listBreakers", "summary": "Every breaker: state, since, failure and slow-call rates, calls in the window, open until, ramp stage, history.",
                "responses": {"200": ok_json("The breakers.", json!({"type": "object"})),
                              "401": error("Missing or wrong key.")}}},
            "/v1/breakers/{key}": {"get": {
                "operationId": "getBreaker", "summary": "One breaker; the key is tool.provider, e.g. search_flights.duffel.",
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": ok_json("The breaker.", json!({"type": "object"})),
                              "400": error("A key that is not UTF-8 once percent-decoded."),
                              "401": error("Missing or wrong key."),
                              "404": error("No such breaker.")}}},
            "/v1/breakers/{key}/force": {"post": {
                "operationId": "forceBreaker", "summary": "Force a breaker open or closed, or back to automatic (admin key).",
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}}],
                "requestBody": json_body(json!({"type": "object", "required": ["state"], "properties": {"state": {"type": "string", "enum": ["open", "closed", "auto"]}}})),
                "responses": {"200": ok_json("The breaker after the change.", json!({"type": "object"})),
                              "400": error("Unknown state or malformed body, or a key that is not UTF-8 once percent-decoded."),
                              "401": error("Missing or wrong key."),
                              "403": error("A client key cannot force breakers; use the admin key."),
                              "404": error("No such breaker.")}}},
            "/v1/alerts": {"get": {
                "operationId": "listAlerts", "summary": "Active alerts: breaker open too long, flapping, trip storm, shared dependency.",
                "responses": {"200": ok_json("The active alerts.", json!({"type": "object"})),
                              "401": error("Missing or wrong key.")}}},
            "/v1/events": {"get": {
                "operationId": "events", "summary": "Server-sent events: breaker transitions and alerts.",
                "responses": {"200": {"description": "An event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                              "401": error("Missing or wrong key.")}}},
            "/metrics": {"get": {
                "operationId": "metrics", "summary": "Prometheus text format (open unless telemetry.metrics_public = false).",
                "security": [{}, {"clientKey": []}],
                "responses": {"200": {"description": "Metrics.", "content": {"text/plain": {"schema": {"type": "string"}}}},
                              "401": error("Missing or wrong key, when metrics are not public.")}}},
            "/dashboard": {"get": {
                "operationId": "dashboard", "summary": "The operator's dashboard page (holds no data; reads the APIs with a key kept in session storage).",
                "security": open,
                "responses": {"200": {"description": "An HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}}}}},
            "/v1/jobs": {"get": {
                "operationId": "listJobs", "summary": "Background jobs of every client, newest first (admin key).",
                "parameters": [
                    {"name": "status", "in": "query", "required": false, "schema": {"type": "string", "enum": ["queued", "running", "retry_scheduled", "succeeded", "dead"]}},
                    {"name": "tool", "in": "query", "required": false, "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "required": false,
                     "description": "At most this many jobs (default 100); values outside 1 to 1000 are clamped to it.",
                     "schema": {"type": "integer", "minimum": 0, "maximum": 4294967295_u64}}],
                "responses": {"200": ok_json("The jobs.", json!({"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}}}})),
                              "400": error("Unknown status or query parameter."),
                              "401": error("Missing or wrong key."),
                              "403": error("A client key cannot list every job; use the admin key."),
                              "501": error("No job store."),
                              "503": error("The job store did not answer.")}}},
            "/v1/jobs/{job_id}": {"get": {
                "operationId": "getJob", "summary": "One background job: status, attempts, next attempt, result envelope, last error.",
                "parameters": [{"name": "job_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": ok_json("The job.", json!({"$ref": "#/components/schemas/Job"})),
                              "400": error("A job id that is not UTF-8 once percent-decoded."),
                              "401": error("Missing or wrong client key."),
                              "404": error("No such job."),
                              "501": error("No job store."),
                              "503": error("The job store did not answer.")}}},
            "/v1/prompts/agent-guidance": {"get": {
                "operationId": "agentGuidance", "summary": "A system-prompt fragment: how a model should treat each result status.",
                "responses": {"200": ok_json("The guidance.", json!({"type": "object", "required": ["guidance"], "properties": {"guidance": {"type": "string"}}})),
                              "401": error("Missing or wrong client key.")}}},
            "/v1/openai/tool_calls": {"post": {
                "operationId": "openaiToolCalls",
                "summary": "Run an OpenAI assistant message's tool calls (Chat Completions) or function_call items (Responses API), concurrently; results in the order received.",
                "requestBody": json_body(json!({"$ref": "#/components/schemas/OpenAiToolCalls"})),
                "responses": {"200": ok_json("Tool messages (Chat Completions) or function_call_output items (Responses API).", json!({"$ref": "#/components/schemas/OpenAiResults"})),
                              "400": error("No tool calls found, or malformed JSON."),
                              "401": error("Missing or wrong client key."),
                              "413": error("Body too large."),
                              "415": error("The body is declared as something other than JSON."),
                              "429": limited.clone(),
                              "503": error("The request took longer than [server] request_timeout.")}}},
            "/v1/anthropic/tool_use": {"post": {
                "operationId": "anthropicToolUse",
                "summary": "Run an Anthropic assistant message's tool_use blocks concurrently; answers the user message with tool_result blocks.",
                "requestBody": json_body(json!({"$ref": "#/components/schemas/AnthropicToolUse"})),
                "responses": {"200": ok_json("The user message to append.", json!({"$ref": "#/components/schemas/AnthropicResults"})),
                              "400": error("No tool_use blocks found, or malformed JSON."),
                              "401": error("Missing or wrong client key."),
                              "413": error("Body too large."),
                              "415": error("The body is declared as something other than JSON."),
                              "429": limited.clone(),
                              "503": error("The request took longer than [server] request_timeout.")}}},
            "/mcp": {
                "post": {"operationId": "mcpPost",
                         "summary": "Model Context Protocol, Streamable HTTP (revisions 2025-06-18, 2025-11-25 with Mcp-Session-Id sessions; 2026-07-28 stateless). One JSON-RPC message per request.",
                         "requestBody": json_body(json!({"type": "object", "description": "A JSON-RPC 2.0 message."})),
                         "responses": {"200": {"description": "A JSON-RPC response (application/json or text/event-stream).",
                                               "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {"schema": {"type": "string"}}}},
                                       "202": {"description": "A notification or response was accepted."},
                                       "400": {"description": "Bad request (e.g. missing session id, unsupported protocol version)."},
                                       "401": error("Missing or wrong client key."),
                                       "403": {"description": "Host or Origin not allowed ([mcp] allowed_hosts, allowed_origins)."},
                                       "404": {"description": "Unknown or expired session: initialize again."},
                                       "413": error("Body too large."),
                                       "415": {"description": "The body is not JSON (rmcp's answer to malformed JSON too)."},
                                       "429": limited.clone()}},
                "get": {"operationId": "mcpGet", "summary": "The server-to-client event stream of a legacy session.",
                        "responses": {"200": {"description": "An event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                                      "401": error("Missing or wrong client key."),
                                      "405": {"description": "Not offered (stateless mode)."}}},
                "delete": {"operationId": "mcpDelete", "summary": "End a legacy session.",
                           "responses": {"202": {"description": "Session ended."},
                                         "401": error("Missing or wrong client key."),
                                         "405": {"description": "Not offered (stateless mode)."}}}},
        },
        "components": {
            "securitySchemes": {"clientKey": {"type": "http", "scheme": "bearer",
                "description": "A client key from FAREGATE_CLIENT_KEYS (auth is off when none is configured)."}},
            "schemas": Value::Object(schemas),
        },
    })
}

fn base_schemas() -> Map<String, Value> {
    let status = json!({"type": "string", "enum": ["ok", "stale", "unavailable", "rejected", "invalid_arguments", "queued"]});
    let mode = json!({"type": "string", "enum": ["interactive", "background"], "default": "interactive",
                      "description": "background answers 501 (native) or an error result until durable jobs land."});
    let nullable_string = json!({"type": ["string", "null"]});
    let nullable_int = json!({"type": ["integer", "null"], "minimum": 0});
    let schemas = json!({
        "Error": {"type": "object", "required": ["message"],
                  "properties": {"message": {"type": "string", "description": "What to fix."}}},
        "CallBody": {"type": "object", "required": ["arguments"], "additionalProperties": false,
            "properties": {
                "arguments": {"type": "object", "description": "The tool's arguments (component schema `<tool>.arguments`)."},
                "mode": mode.clone(),
                "call_id": nullable_string.clone(),
                "idempotency_key": {"type": ["string", "null"], "description": "Required by book_flight."},
                "deadline_ms": {"type": ["integer", "null"], "minimum": 1},
                "callback_url": nullable_string.clone()}},
        "Envelope": {"type": "object",
            "required": ["call_id", "tool", "status", "content", "data", "stale_age_s", "retry_after_s", "breaker", "job_id", "provider"],
            "properties": {
                "call_id": {"type": "string"}, "tool": {"type": "string"}, "status": status,
                "content": {"type": "string", "description": "Text a model can read and relay."},
                "data": {"description": "The result (component schema `<tool>.data`) for ok and stale, else null."},
                "stale_age_s": nullable_int.clone(), "retry_after_s": nullable_int,
                "breaker": {"type": "string"}, "job_id": nullable_string.clone(), "provider": nullable_string.clone()}},
        "Job": {"type": "object",
            "required": ["job_id", "tool", "status", "attempts", "next_attempt_at", "created_at", "updated_at", "result", "last_error"],
            "properties": {
                "job_id": {"type": "string"}, "tool": {"type": "string"},
                "status": {"type": "string", "enum": ["queued", "running", "retry_scheduled", "succeeded", "dead"]},
                "attempts": {"type": "integer", "minimum": 0},
                "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
                "created_at": {"type": "string", "format": "date-time"},
                "updated_at": {"type": "string", "format": "date-time"},
                "call_id": nullable_string.clone(), "idempotency_key": nullable_string.clone(),
                "result": {"description": "The final envelope (succeeded; dead when one exists), else null."},
                "last_error": nullable_string.clone(),
                "callback": {"type": ["object", "null"], "properties": {
                    "url": {"type": "string"}, "state": {"type": "string", "enum": ["pending", "sent", "failed"]},
                    "attempts": {"type": "integer"}}}}},
        "OpenAiToolCall": {"type": "object", "required": ["id", "function"],
            "properties": {"id": {"type": "string"}, "type": {"const": "function"},
                           "function": {"type": "object", "required": ["name"],
                                        "properties": {"name": {"type": "string"},
                                                       "arguments": {"type": "string", "description": "JSON-encoded arguments."}}}}},
        "OpenAiFunctionCall": {"type": "object", "required": ["type", "call_id", "name"],
            "properties": {"type": {"const": "function_call"}, "id": {"type": "string"}, "call_id": {"type": "string"},
                           "name": {"type": "string"}, "arguments": {"type": "string"}}},
        "OpenAiToolCalls": {"description": "A Chat Completions assistant message with tool_calls, its tool_calls array, Responses API function_call items, or an object with output (a whole response). Object forms may add mode and deadline_ms.",
            "anyOf": [
                {"type": "object", "required": ["tool_calls"], "properties": {
                    "tool_calls": {"type": "array", "items": {"$ref": "#/components/schemas/OpenAiToolCall"}},
                    "mode": mode.clone(), "deadline_ms": {"type": "integer", "minimum": 1}}},
                {"type": "array", "items": {"$ref": "#/components/schemas/OpenAiToolCall"}},
                {"type": "object", "required": ["output"], "properties": {
                    "output": {"type": "array", "items": {"type": "object"}},
                    "mode": mode.clone(), "deadline_ms": {"type": "integer", "minimum": 1}}},
                {"type": "array", "items": {"type": "object"}}]},
        "OpenAiResults": {"anyOf": [
            {"type": "object", "required": ["messages"], "properties": {"messages": {"type": "array", "items": {
                "type": "object", "required": ["role", "tool_call_id", "content"],
                "properties": {"role": {"const": "tool"}, "tool_call_id": {"type": "string"}, "content": {"type": "string"}}}}}},
            {"type": "object", "required": ["output"], "properties": {"output": {"type": "array", "items": {
                "type": "object", "required": ["type", "call_id", "output"],
                "properties": {"type": {"const": "function_call_output"}, "call_id": {"type": "string"}, "output": {"type": "string"}}}}}}]},
        "AnthropicToolUse": {"description": "An assistant message (or Messages API response) whose content has tool_use blocks, or the content array. Object forms may add mode and deadline_ms.",
            "anyOf": [
                {"type": "object", "required": ["content"], "properties": {
                    "content": {"type": "array", "items": {"type": "object"}},
                    "mode": mode, "deadline_ms": {"type": "integer", "minimum": 1}}},
                {"type": "array", "items": {"type": "object"}}]},
        "AnthropicResults": {"type": "object", "required": ["role", "content"], "properties": {
            "role": {"const": "user"},
            "content": {"type": "array", "items": {"type": "object", "required": ["type", "tool_use_id", "content", "is_error"],
                "properties": {"type": {"const": "tool_result"}, "tool_use_id": {"type": "string"},
                               "content": {"type": "string"}, "is_error": {"type": "boolean"}}}}}},
    });
    match schemas {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every path the router serves, read from the router's source.
    fn routed_paths() -> BTreeSet<String> {
        let source = concat!(include_str!("../mod.rs"), include_str!("../ops/mod.rs"));
        let mut out = BTreeSet::new();
        for marker in [".route(\"", ".route_service(\""] {
            for (i, _) in source.match_indices(marker) {
                let rest = &source[i + marker.len()..];
                if let Some(end) = rest.find('"') {
                    out.insert(rest[..end].to_string());
                }
            }
        }
        out
    }

    /// `ROUTED_PATHS` is exactly what the router serves; `tests/protocols.rs` then checks the
    /// document against `ROUTED_PATHS` on a running gateway.
    #[test]
    fn routed_paths_is_the_router_exactly() {
        let listed: BTreeSet<String> = crate::http::ROUTED_PATHS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let routed = routed_paths();
        assert!(routed.contains("/mcp"), "{routed:?}");
        assert_eq!(routed, listed);
    }
}

//! `GET /openapi.json`: the gateway's own OpenAPI 3.1 document.
//!
//! The `paths` are rendered from the route table (`table.rs`), the same table the router
//! is built from, so every routed path is documented and every documented path is routed. Each
//! operation lists the answers of its handler and, added here, those of the edge layers its
//! guard puts in front of it (401 without a key, 413 for a body over the limit, 429 over a
//! client's limits, 503 at the request timeout).
//!
//! The schemas are written by hand rather than derived (utoipa, aide): the request and answer
//! bodies of these routes are built as JSON in the handlers (the agent endpoints accept
//! several shapes of other vendors' messages), so there are no Rust types to derive from, and
//! a derive crate would add a second schema system next to schemars. They describe what the
//! parsers accept, as closely as JSON Schema can: a body a schema admits is not refused as a
//! whole (its calls may still be answered `invalid_arguments`). OpenAPI 3.1 schemas are JSON
//! Schema 2020-12, so each served tool's argument and result schemas (from schemars, like
//! every manifest) are included as components.
//!
//! The document is the caller's: a client whose scope names some tools reads only those in the
//! tool components and the `{tool}` parameters, as it reads them in every tool list (the admin
//! key, and every caller with client keys off, read every served tool).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::row::{Answer, Guard, Operation, ParamSchema, Place, Reply, Route, Security, Verb};
use crate::agents::manifest;
use crate::clients::Scope;
use crate::http::calls::in_scope;
use crate::http::state::AppState;

/// The document of `routes` (the route table) for the served tools `scope` allows.
pub(crate) fn document(state: &AppState, routes: &[Route], scope: &Scope) -> Value {
    let mut schemas = schemas();
    let mut tools = Vec::new();
    for tool in state.gateway.tools().iter().filter(|t| in_scope(scope, t)) {
        let name = tool.spec.name;
        tools.push(name);
        schemas.insert(
            format!("{name}.arguments"),
            manifest::without_dialect(manifest::portable(&tool.spec.input_schema())),
        );
        schemas.insert(
            format!("{name}.data"),
            manifest::without_dialect(manifest::portable(&tool.spec.output_schema())),
        );
    }
    let mut paths = Map::new();
    for route in routes {
        let item: Map<String, Value> = route
            .operations
            .iter()
            .map(|op| (op.verb.openapi().to_string(), operation(route, op, &tools)))
            .collect();
        paths.insert(route.path.to_string(), Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "faregate",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A tool-call gateway for AI travel agents: per-tool circuit breakers, honest fallbacks. Tool failures are results (status 200 with status unavailable/rejected), not transport errors. Every refusal is JSON: the gateway's `{\"message\": …}`, or on /mcp a JSON-RPC error where MCP asks for one.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "security": [{"clientKey": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "clientKey": {"type": "http", "scheme": "bearer",
                    "description": "A client key: one of FAREGATE_CLIENT_KEYS, or a [[clients]] entry's (key_env or key_sha256); the admin key works here too. Auth is off when no client key is configured."},
                "adminKey": {"type": "http", "scheme": "bearer",
                    "description": "The admin key (FAREGATE_ADMIN_KEY): forcing breakers, reloading the configuration, listing the replicas; a client key is refused (403)."}},
            "schemas": Value::Object(schemas),
        },
    })
}

/// One operation: its own answers, then its guard's where it does not list them itself.
fn operation(route: &Route, op: &Operation, tools: &[&str]) -> Value {
    let mut out = Map::new();
    out.insert("operationId".into(), json!(op.id));
    out.insert("summary".into(), json!(op.summary));
    match op.security {
        Security::Key => {}
        Security::Open => {
            out.insert("security".into(), json!([]));
        }
        Security::Optional => {
            out.insert("security".into(), json!([{}, {"clientKey": []}]));
        }
        Security::Admin => {
            out.insert("security".into(), json!([{"adminKey": []}]));
        }
    }
    if !op.params.is_empty() {
        let params: Vec<Value> = op
            .params
            .iter()
            .map(|p| {
                let schema = match p.schema {
                    ParamSchema::Text => json!({"type": "string"}),
                    ParamSchema::ServedTool => json!({"type": "string", "enum": tools}),
                    ParamSchema::Inline(make) => make(),
                };
                let mut param = json!({
                    "name": p.name,
                    "in": match p.place { Place::Path => "path", Place::Query => "query" },
                    "required": p.place == Place::Path,
                    "schema": schema,
                });
                if let Some(d) = p.description {
                    param["description"] = json!(d);
                }
                param
            })
            .collect();
        out.insert("parameters".into(), Value::Array(params));
    }
    if let Some(body) = op.body {
        out.insert(
            "requestBody".into(),
            json!({"required": true, "content": {"application/json": {"schema": body.json()}}}),
        );
    }
    let mut responses: BTreeMap<u16, Value> =
        op.answers.iter().map(|a| (a.status, response(a))).collect();
    for (status, answer) in guard_answers(route.guard, op) {
        match responses.entry(status) {
            std::collections::btree_map::Entry::Vacant(free) => {
                free.insert(answer);
            }
            // The operation says what its own answer of that status holds; the headers the
            // guard's answer has (Retry-After) it has too.
            std::collections::btree_map::Entry::Occupied(mut own) => {
                if let (Some(headers), Value::Object(own)) = (answer.get("headers"), own.get_mut())
                {
                    own.entry("headers").or_insert_with(|| headers.clone());
                }
            }
        }
    }
    let responses: Map<String, Value> = responses
        .into_iter()
        .map(|(status, r)| (status.to_string(), r))
        .collect();
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

fn response(a: &Answer) -> Value {
    let content = |media: &str, schema: Value| json!({ media: {"schema": schema} });
    match a.reply {
        Reply::Error => json!({"description": a.description,
            "content": content("application/json", json!({"$ref": "#/components/schemas/Error"}))}),
        Reply::Json(schema) => json!({"description": a.description,
            "content": content("application/json", schema.json())}),
        Reply::Media(media) => json!({"description": a.description,
            "content": content(media, json!({"type": "string"}))}),
        Reply::Nothing => json!({"description": a.description}),
    }
}

/// What the edge layers in front of an operation answer.
fn guard_answers(guard: Guard, op: &Operation) -> Vec<(u16, Value)> {
    let error = |description: &str| {
        json!({"description": description,
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
    };
    let mut out = Vec::new();
    if matches!(guard, Guard::Client | Guard::Call) {
        out.push((401, error("Missing or wrong client key.")));
    }
    if op.body.is_some() {
        out.push((413, error("The body is larger than [server] max_body_bytes (refused from its Content-Length at once when that says so).")));
    }
    if guard == Guard::Call && op.verb == Verb::Post {
        out.push((429, json!({
            "description": "This client is over its request rate or its calls in flight ([limits]); retry after Retry-After seconds.",
            "headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})));
    }
    out.push((
        503,
        error("The request took longer than [server] request_timeout."),
    ));
    out
}

/// The component schemas of the gateway's own bodies.
fn schemas() -> Map<String, Value> {
    let status = json!({"type": "string", "enum": ["ok", "stale", "unavailable", "rejected", "invalid_arguments", "queued"]});
    let mode = json!({"type": ["string", "null"], "enum": ["interactive", "background", null], "default": "interactive",
                      "description": "background stores the call as a job (501 without a job store)."});
    let deadline = json!({"type": ["integer", "null"], "minimum": 1, "maximum": u64::MAX,
                          "description": "The caller's deadline per call in milliseconds, capped by the tool's."});
    // `call_id` and `idempotency_key` are echoed into answers and logs: printable only.
    let printable = |max: u64| {
        json!({"type": ["string", "null"], "minLength": 1, "maxLength": max,
                                      "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"})
    };
    let nullable_string = json!({"type": ["string", "null"]});
    let nullable_int = json!({"type": ["integer", "null"], "minimum": 0});
    let non_empty = json!({"type": "string", "minLength": 1});
    // The options an agent body's object form may carry; other keys are the vendor's.
    let options = json!({"mode": mode.clone(), "deadline_ms": deadline.clone()});
    let with_options = |key: &str, list: &str, extra: Value| {
        let mut properties = options.clone();
        properties[key] = json!({"$ref": format!("#/components/schemas/{list}")});
        let mut object = json!({"type": "object", "required": [key], "properties": properties});
        if let (Value::Object(o), Value::Object(e)) = (&mut object, extra) {
            o.extend(e);
        }
        object
    };
    let schemas = json!({
        "Error": {"type": "object", "required": ["message"],
                  "properties": {"message": {"type": "string", "description": "What to fix."}}},
        "CallBody": {"type": "object", "required": ["arguments"], "additionalProperties": false,
            "properties": {
                "arguments": {"type": "object", "description": "The tool's arguments (component schema `<tool>.arguments`)."},
                "mode": mode,
                "call_id": printable(256),
                "idempotency_key": {"description": "Required by book_flight and book_hotel.", "allOf": [printable(200)]},
                "deadline_ms": deadline,
                "callback_url": {"type": ["string", "null"], "description": "Where the job's result is posted; background mode only."}},
            "if": {"not": {"required": ["mode"], "properties": {"mode": {"const": "background"}}}},
            "then": {"properties": {"callback_url": {"type": "null"}}}},
        "Envelope": {"type": "object",
            "required": ["call_id", "tool", "status", "content", "data", "stale_age_s", "cached_age_s", "retry_after_s", "breaker", "job_id", "provider"],
            "properties": {
                "call_id": {"type": "string", "description": "The caller's call_id, echoed; fg_<tag>_<n> when none was sent (the tag is drawn at each start, so the id is unique across replicas and restarts), or for a background call the job's id (its queued answer and its result carry the same one)."}, "tool": {"type": "string"}, "status": status,
                "content": {"type": "string", "description": "Text a model can read and relay."},
                "data": {"description": "The result (component schema `<tool>.data`) for ok and stale, else null."},
                "stale_age_s": nullable_int.clone(),
                "cached_age_s": {"type": ["integer", "null"], "minimum": 0, "description": "Set on an ok answered from memory within the tool's fresh_for (a repeat of the same read), not by a provider just now: the result's age in seconds, never more than fresh_for. Null when a provider just answered."},
                "retry_after_s": nullable_int,
                "breaker": {"type": "string", "description": "The state of the breaker that decided the call (closed, open, half_open, …). Empty when no breaker decided it: a background call's queued answer, and every invalid_arguments answer (its arguments refused before any breaker was asked)."}, "job_id": nullable_string.clone(), "provider": nullable_string.clone(),
                "limit": {"type": "string", "enum": ["client_share_of_tool", "client_share_of_provider"], "description": "Present only on a call refused as its client's own doing, while several clients call: client_share_of_tool, the client already holds its share of the tool's concurrent calls ([limits] client_share_of_tool); client_share_of_provider, the client sent more than its fair part of the requests to the tool's providers in their rate-limit windows while they run low ([limits] provider_reserve). Status rejected, retry_after_s set (for client_share_of_provider: until the provider's window resets), nothing sent to a provider; the native route answers it 429 with Retry-After."}}},
        "Job": {"type": "object",
            "required": ["job_id", "tool", "client", "status", "attempts", "next_attempt_at", "created_at", "updated_at", "result", "last_error"],
            "properties": {
                "job_id": {"type": "string"}, "tool": {"type": "string"},
                "client": {"type": "string", "description": "The client that submitted the job."},
                "status": {"type": "string", "enum": ["queued", "running", "retry_scheduled", "succeeded", "dead", "cancelled"]},
                "attempts": {"type": "integer", "minimum": 0},
                "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
                "created_at": {"type": "string", "format": "date-time"},
                "updated_at": {"type": "string", "format": "date-time"},
                "call_id": nullable_string.clone(), "idempotency_key": nullable_string.clone(),
                "result": {"description": "The final envelope (succeeded; dead when one exists), else null."},
                "last_error": nullable_string.clone(),
                "spooled": {"type": "string", "description": "Present while the job waits in the spool of the replica that accepted it, because the job store did not answer; it moves into the store (keeping its id) when the store returns."},
                "as_seen": {"type": "string", "description": "Present when the job store did not answer: the job is shown as this replica last saw it (it accepted, ran or read the job), at `as_of`."},
                "as_of": {"type": "string", "format": "date-time", "description": "With `as_seen`: when this replica last saw the job in this state."},
                "booking": {"type": "object", "description": "GET /v1/jobs/{job_id} only, for a booking job with an entry in the booking ledger: the entry as GET /v1/bookings shows it, as it stands now (a job that ended with an unknown outcome keeps that result, while reconciliation settles its entry booked or failed)."},
                "waiting": {"type": "string", "description": "GET /v1/jobs/{job_id} only: present when the job is due (its next_attempt_at has passed) but its tool admits no calls now (every provider's breaker open, forced open or in maintenance), or this replica's configuration does not serve it (a reload removed it); it runs, silently, once one admits calls or a replica serves it."},
                "callback": {"type": ["object", "null"], "properties": {
                    "url": {"type": "string"}, "state": {"type": "string", "enum": ["pending", "sent", "failed"]},
                    "attempts": {"type": "integer"},
                    "last_error": {"type": ["string", "null"], "description": "Why the last delivery failed (the receiver's status, or why it could not be reached or was not sent); null once one is delivered."}}}}},
        "OpenAiChatCalls": {"description": "A Chat Completions tool_calls array: objects with an id and a function with a name; arguments is a JSON-encoded string (a string that is not JSON is that call's error text). A custom tool call (type custom, with a custom object naming the tool) is answered as that call's error text: every tool here is a function tool.",
            "type": "array", "minItems": 1,
            "items": {"anyOf": [
                {"type": "object", "required": ["id", "function"],
                 "properties": {"id": non_empty.clone(),
                                "type": {"not": {"enum": ["function_call", "custom"]}},
                                "function": {"type": "object", "required": ["name"],
                                             "properties": {"name": non_empty.clone(),
                                                            "arguments": {"type": ["string", "object", "null"], "description": "JSON-encoded arguments."}}}}},
                {"type": "object", "required": ["id", "type", "custom"],
                 "properties": {"id": non_empty.clone(), "type": {"const": "custom"},
                                "custom": {"type": "object", "required": ["name"], "properties": {"name": non_empty.clone()}}}}]}},
        "OpenAiResponsesItems": {"description": "Responses API output items with at least one function_call or custom_tool_call (answered as that call's error text: every tool here is a function tool); other item types are skipped.",
            "type": "array",
            "items": {"type": "object",
                "if": {"required": ["type"], "properties": {"type": {"enum": ["function_call", "custom_tool_call"]}}},
                "then": {"required": ["call_id", "name"], "properties": {
                    "call_id": non_empty.clone(), "name": non_empty.clone(),
                    "arguments": {"type": ["string", "object", "null"], "description": "JSON-encoded arguments."}}}},
            "contains": {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["function_call", "custom_tool_call"]}}}},
        "OpenAiCalls": {"anyOf": [{"$ref": "#/components/schemas/OpenAiChatCalls"}, {"$ref": "#/components/schemas/OpenAiResponsesItems"}]},
        "OpenAiToolCalls": {"description": "A Chat Completions assistant message with tool_calls, its tool_calls array, Responses API function_call items, or an object with output (a whole response). Object forms may add mode and deadline_ms.",
            "anyOf": [
                {"$ref": "#/components/schemas/OpenAiCalls"},
                with_options("tool_calls", "OpenAiCalls", json!({})),
                with_options("output", "OpenAiCalls", json!({"not": {"required": ["tool_calls"]}}))]},
        "OpenAiResults": {"anyOf": [
            {"type": "object", "required": ["messages"], "properties": {"messages": {"type": "array", "items": {
                "type": "object", "required": ["role", "tool_call_id", "content"],
                "properties": {"role": {"const": "tool"}, "tool_call_id": {"type": "string"}, "content": {"type": "string"}}}}}},
            {"type": "object", "required": ["output"], "properties": {"output": {"type": "array", "items": {
                "type": "object", "required": ["type", "call_id", "output"],
                "properties": {"type": {"enum": ["function_call_output", "custom_tool_call_output"]}, "call_id": {"type": "string"}, "output": {"type": "string"}}}}}}]},
        "AnthropicContent": {"description": "Content blocks with at least one tool_use block; other blocks are skipped. A tool_use input that is not an object is that call's error text.",
            "type": "array",
            "items": {
                "if": {"type": "object", "required": ["type"], "properties": {"type": {"const": "tool_use"}}},
                "then": {"required": ["id", "name"], "properties": {"id": non_empty.clone(), "name": non_empty}}},
            "contains": {"type": "object", "required": ["type"], "properties": {"type": {"const": "tool_use"}}}},
        "AnthropicToolUse": {"description": "An assistant message (or Messages API response) whose content has tool_use blocks, or the content array. The object form may add mode and deadline_ms.",
            "anyOf": [
                {"$ref": "#/components/schemas/AnthropicContent"},
                with_options("content", "AnthropicContent", json!({}))]},
        "AnthropicResults": {"type": "object", "required": ["role", "content"], "properties": {
            "role": {"const": "user"},
            "content": {"type": "array", "items": {"type": "object", "required": ["type", "tool_use_id", "content", "is_error"],
                "properties": {"type": {"const": "tool_result"}, "tool_use_id": {"type": "string"},
                               "content": {"type": "string"}, "is_error": {"type": "boolean"}}}}}},
        "JsonRpcMessage": {"type": "object", "required": ["jsonrpc"], "description": "A JSON-RPC 2.0 message (request, notification or response).",
            "properties": {"jsonrpc": {"const": "2.0"}, "method": {"type": "string"}}},
        "JsonRpcError": {"type": "object", "required": ["jsonrpc", "id", "error"],
            "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
                           "error": {"type": "object", "required": ["code", "message"],
                                     "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}}}},
    });
    match schemas {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

//! A `/mcp` body that is not a JSON-RPC message is answered 400 with a JSON-RPC error, as MCP
//! asks (JSON-RPC 2.0: `-32700` "Parse error" for a body that is not JSON, `-32600` "Invalid
//! Request" for JSON that is not a message); rmcp itself answers both with a plain-text 415.
//!
//! A request for a method rmcp serves whose params do not have that method's shape (a
//! `tools/call` without a `name`, `arguments` that are a string) is answered `-32602` "Invalid
//! params", naming the field and the shape, before rmcp sees it: rmcp reads such a request as
//! a method it does not know and answers `-32601 method not found: tools/call`, which tells a
//! client that the server has no tools at all.
//!
//! rmcp checks the declared content type before it reads the body, so its 415 for a request
//! declared as `application/json` can only mean that the body did not deserialize; only then
//! is the body looked at again, to tell the two errors apart. A body over the limit is refused
//! before rmcp sees it, with the 413 every route gives.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorData;

use crate::http::edge::ApiError;

/// Middleware in front of rmcp's service; `max` is the body limit.
pub(super) async fn parse_errors(
    State(max): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !declares_json(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return ApiError::too_large(max).into_response();
    };
    if let Some(refusal) = invalid_params(&bytes) {
        return json_response(StatusCode::OK, refusal.to_string().into_bytes());
    }
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if res.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return res;
    }
    let error = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(e) => ErrorData::parse_error(
            format!("Parse error: the body is not JSON ({e}); send one JSON-RPC 2.0 message"),
            None,
        ),
        Ok(serde_json::Value::Array(_)) => ErrorData::invalid_request(
            "Invalid Request: a JSON-RPC batch (an array of messages) is not served; send one JSON-RPC 2.0 message per request",
            None,
        ),
        Ok(message) if message.get("id").is_some_and(serde_json::Value::is_null) => {
            ErrorData::invalid_request(
                "Invalid Request: a request's id must be a string or a number, not null (a notification has no id member at all)",
                None,
            )
        }
        Ok(_) => ErrorData::invalid_request(
            "Invalid Request: the body is JSON but not a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\" and a method, or a result or error with an id)",
            None,
        ),
    };
    // JSON-RPC 2.0 (§5): when the request's id could not be read, the answer's id is null,
    // present, not left out.
    let body = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": error,
    }))
    .unwrap_or_default();
    json_response(StatusCode::BAD_REQUEST, body)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut res = (status, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// The shape of the params of each method rmcp serves that takes any: the members that must
/// be strings, the members that may be objects (or absent, or null), and the shape in words.
const SHAPES: &[(&str, &[&str], &[&str], &str)] = &[
    (
        "initialize",
        &["protocolVersion"],
        &["capabilities", "clientInfo", "_meta"],
        r#"{"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "<client>", "version": "<version>"}}"#,
    ),
    (
        "tools/call",
        &["name"],
        &["arguments", "_meta"],
        r#"{"name": "<tool>", "arguments": {…}}"#,
    ),
    (
        "prompts/get",
        &["name"],
        &["arguments", "_meta"],
        r#"{"name": "<prompt>", "arguments": {…}}"#,
    ),
    (
        "resources/read",
        &["uri"],
        &["_meta"],
        r#"{"uri": "<resource uri>"}"#,
    ),
    (
        "resources/subscribe",
        &["uri"],
        &["_meta"],
        r#"{"uri": "<resource uri>"}"#,
    ),
    (
        "resources/unsubscribe",
        &["uri"],
        &["_meta"],
        r#"{"uri": "<resource uri>"}"#,
    ),
    (
        "tasks/get",
        &["taskId"],
        &["_meta"],
        r#"{"taskId": "<task id>"}"#,
    ),
    (
        "tasks/cancel",
        &["taskId"],
        &["_meta"],
        r#"{"taskId": "<task id>"}"#,
    ),
];

/// The objects of [`SHAPES`] a method cannot do without (rmcp answers their absence as if the
/// method did not exist: "method not found: initialize").
const REQUIRED_OBJECTS: &[(&str, &[&str])] = &[("initialize", &["capabilities", "clientInfo"])];

/// The `-32602` answer to a request (it has an `id`) for a method of [`SHAPES`] whose params
/// lack that shape, or to any request that repeats a key (`{"origin": "JFK", "origin": "BOS"}`
/// in a tool's arguments means two things, and rmcp would quietly keep the last, as the native
/// and Anthropic routes never do); `None` for anything else, which rmcp answers.
fn invalid_params(body: &[u8]) -> Option<serde_json::Value> {
    let (message, repeated) = match crate::agents::body::parse_strict(body) {
        Ok(message) => (message, None),
        Err(e) => (serde_json::from_slice(body).ok()?, Some(e)),
    };
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let method = message.get("method")?.as_str()?;
    if let Some(e) = repeated {
        return Some(serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32602, "message": format!("Invalid params: {e}")},
        }));
    }
    let (_, strings, objects, shape) = SHAPES.iter().find(|(m, ..)| *m == method)?;
    let params = message.get("params");
    let fault = match params {
        None | Some(serde_json::Value::Null) => "params are missing".to_string(),
        Some(serde_json::Value::Object(params)) => {
            let missing = strings
                .iter()
                .find(|name| !params.get(**name).is_some_and(serde_json::Value::is_string));
            let not_object = objects.iter().find(|name| {
                params
                    .get(**name)
                    .is_some_and(|v| !v.is_object() && !v.is_null())
            });
            let absent = REQUIRED_OBJECTS
                .iter()
                .filter(|(m, _)| *m == method)
                .flat_map(|(_, names)| names.iter())
                .find(|name| !params.contains_key(**name));
            match (missing, not_object, absent) {
                (Some(name), ..) if params.contains_key(*name) => {
                    format!("{name} must be a string")
                }
                (Some(name), ..) => format!("{name} is missing"),
                (None, Some(name), _) => format!("{name} must be an object"),
                (None, None, Some(name)) => format!("{name} is missing"),
                (None, None, None) => return None,
            }
        }
        Some(_) => "params must be an object".to_string(),
    };
    Some(serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32602,
            "message": format!("Invalid params: {method} takes params {shape}; {fault}"),
        },
    }))
}

/// Whether the request says its body is JSON (rmcp's own test of the content type).
fn declares_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_served_method_with_params_of_the_wrong_shape_is_invalid_params_naming_the_field() {
        let refused = |body: serde_json::Value| {
            invalid_params(body.to_string().as_bytes()).map(|r| {
                assert_eq!(r["id"], body["id"], "{r}");
                assert_eq!(r["error"]["code"], -32602, "{r}");
                r["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
        };
        let call = |params: serde_json::Value| json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
        assert_eq!(
            refused(call(json!({"arguments": {}}))).as_deref(),
            Some(
                r#"Invalid params: tools/call takes params {"name": "<tool>", "arguments": {…}}; name is missing"#
            )
        );
        for (params, fault) in [
            (json!({"name": 7}), "name must be a string"),
            (
                json!({"name": "search_flights", "arguments": "x"}),
                "arguments must be an object",
            ),
            (json!("x"), "params must be an object"),
            (json!(null), "params are missing"),
        ] {
            let said = refused(call(params.clone())).unwrap_or_default();
            assert!(said.ends_with(fault), "{params}: {said}");
        }
        // A repeated key means two things: refused wherever it is, naming it.
        let repeated = br#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search_flights", "arguments": {"origin": "JFK", "origin": "BOS"}}}"#;
        let said = invalid_params(repeated).unwrap_or_default();
        assert_eq!(
            (said["id"].clone(), said["error"]["code"].clone()),
            (json!(4), json!(-32602))
        );
        assert!(
            said["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("duplicate key \"origin\"")),
            "{said}"
        );
        let read = json!({"jsonrpc": "2.0", "id": "r1", "method": "resources/read", "params": {}});
        assert!(refused(read).is_some_and(|m| m.ends_with("uri is missing")));
        // `initialize` without the params it needs names the first missing (rmcp answered
        // "method not found: initialize").
        let init = |params: serde_json::Value| json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params});
        let client = json!({"name": "probe", "version": "1"});
        for (params, fault) in [
            (json!(null), "params are missing"),
            (json!({}), "protocolVersion is missing"),
            (
                json!({"protocolVersion": "2025-06-18", "clientInfo": client}),
                "capabilities is missing",
            ),
            (
                json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
                "clientInfo is missing",
            ),
            (
                json!({"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": client}),
                "capabilities must be an object",
            ),
        ] {
            let said = refused(init(params.clone())).unwrap_or_default();
            assert!(
                said.starts_with("Invalid params: initialize takes params {\"protocolVersion\"")
                    && said.ends_with(fault),
                "{params}: {said}"
            );
        }
        let good =
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client});
        assert_eq!(refused(init(good)), None);
        // What rmcp reads is left to it: good params, no-param methods, unknown methods,
        // notifications (no id).
        for passes in [
            call(json!({"name": "search_flights"})),
            call(
                json!({"name": "search_flights", "arguments": null, "_meta": {"progressToken": 1}}),
            ),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/frobnicate", "params": "x"}),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {}}),
        ] {
            assert_eq!(refused(passes.clone()), None, "{passes}");
        }
    }
}

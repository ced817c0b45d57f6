//! The one place where gateway errors become HTTP responses: a status and a JSON body whose
//! `message` says what to fix. Internal details are logged, never sent.
//!
//! Some refusals are not written by faregate's handlers: axum answers a wrong method with an
//! empty 405, and rmcp answers its own refusals in plain text. [`method_not_allowed`] is each
//! route's method fallback and [`refusals_as_json`] wraps rmcp's route, so a client parses every
//! refusal the same way and the calls that are not refused pass no extra layer.

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The most of a plain-text refusal that is read to become its JSON message; refusals are a
/// line or two, and a larger body is not read at all.
const PLAIN_REFUSAL_MAX: usize = 16 * 1024;

/// An error answered to an HTTP client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    extra: Map<String, Value>,
    /// Whether the connection closes after this answer (`Connection: close`).
    close: bool,
}

impl ApiError {
    /// An error with a status and a message saying what to fix.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            extra: Map::new(),
            close: false,
        }
    }

    /// 413 for a body over the `limit` in bytes. The connection closes after it: the rest of
    /// the body is not read as a request, and the client learns not to send more on it.
    pub fn too_large(limit: usize) -> Self {
        ApiError {
            close: true,
            ..Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than the {limit}-byte limit ([server] max_body_bytes); send less, e.g. fewer calls per request"
                ),
            )
        }
    }

    /// Adds a field to the body (e.g. `known_tools`).
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_string(), value);
        self
    }

    /// 400 with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 400 for a query string the route cannot read, with axum's reason and `accepted`, the
    /// parameters the route takes (axum's own rejection is text/plain; every error here is JSON).
    pub(crate) fn bad_query(rejection: QueryRejection, accepted: &str) -> Self {
        Self::bad_request(format!("{}; {accepted}", rejection.body_text()))
    }

    /// The `limit` of a list route: 100 when not asked, else what was asked if it is 1 to 1000,
    /// else 400 saying so (a `limit=0` or `limit=5000` is not quietly read as another number).
    pub(crate) fn list_limit(asked: Option<u32>) -> Result<u32, Self> {
        match asked {
            None => Ok(100),
            Some(n @ 1..=1000) => Ok(n),
            Some(n) => Err(Self::bad_request(format!(
                "limit must be 1 to 1000 (got {n}); leave it out for the newest 100"
            ))),
        }
    }

    /// 400 for a query string sent to `route`, which reads none: a filter it does not have
    /// would otherwise be ignored, and the whole list answered as if it had been applied.
    pub(crate) fn no_query(query: Option<&str>, route: &str) -> Result<(), Self> {
        let Some(query) = query.filter(|q| !q.is_empty()) else {
            return Ok(());
        };
        let names: Vec<String> = query
            .split('&')
            .filter_map(|pair| pair.split('=').next())
            .filter(|name| !name.is_empty())
            .take(5)
            .map(|name| format!("\"{}\"", name.chars().take(40).collect::<String>()))
            .collect();
        Err(Self::bad_request(format!(
            "{route} takes no query parameters, and filters nothing (found {}); drop the query to get the whole list",
            names.join(", ")
        )))
    }

    /// 404 with a message.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
}

/// A body that is not a call in its protocol: 400 with the parser's message.
impl From<crate::agents::ProtocolError> for ApiError {
    fn from(e: crate::agents::ProtocolError) -> Self {
        ApiError::bad_request(e.message())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("message".into(), json!(self.message));
        body.extend(self.extra);
        let mut res = (self.status, Json(Value::Object(body))).into_response();
        if self.close {
            res.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        res
    }
}

/// The JSON-RPC error code of an edge refusal on `/mcp`, by its HTTP status. MCP defines none for
/// these, and 2026-07-28 asks applications to stay outside -32768..=-32000 (reserved for JSON-RPC
/// and the specification); the HTTP status is in the digits.
fn json_rpc_code(status: StatusCode) -> Option<i64> {
    Some(match status {
        // No valid key.
        StatusCode::UNAUTHORIZED => -31401,
        // A Host or Origin that may not use `/mcp`.
        StatusCode::FORBIDDEN => -31403,
        // A body over the limit.
        StatusCode::PAYLOAD_TOO_LARGE => -31413,
        // The client's rate or in-flight limit.
        StatusCode::TOO_MANY_REQUESTS => -31429,
        // The request timeout.
        StatusCode::SERVICE_UNAVAILABLE => -31503,
        // rmcp's own refusals: a missing session id or an unsupported revision (400), an
        // unknown session (404), a method or `Accept` it does not serve (405, 406), a body not
        // declared as JSON (415).
        StatusCode::BAD_REQUEST => -31400,
        StatusCode::NOT_FOUND => -31404,
        StatusCode::METHOD_NOT_ALLOWED => -31405,
        StatusCode::NOT_ACCEPTABLE => -31406,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => -31415,
        _ => return None,
    })
}

/// The most of a refusal body that is read to take its message over; refusals are a line.
const REFUSAL_MAX: usize = 16 * 1024;

/// An edge refusal (400, 401, 403, 404, 405, 406, 413, 415, 429, 503) as MCP clients read it:
/// the same status and headers (`Retry-After`, `Allow` stay) with a JSON-RPC error whose
/// message is the refusal's own text, as `explain` words it. A body that is a JSON-RPC message
/// already (the `-32700` and `-32600` of a body rmcp could not read) is left as it is. The
/// official Python SDK (and every client on top of it) surfaces a non-2xx body only when it is a
/// JSON-RPC error; anything else becomes "Server returned an error response". The refusal is
/// written before the body is read, so the request's id is not known and the error's `id` is
/// `null`, as JSON-RPC 2.0 asks. Any other answer is returned as it is.
pub(crate) async fn as_json_rpc(res: Response, explain: fn(String) -> String) -> Response {
    let Some(code) = json_rpc_code(res.status()) else {
        return res;
    };
    let (mut parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, REFUSAL_MAX)
        .await
        .unwrap_or_default();
    if serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v.get("jsonrpc").is_some()) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let message = explain(refusal_message(&bytes).unwrap_or_else(|| {
        parts
            .status
            .canonical_reason()
            .unwrap_or("refused")
            .to_string()
    }));
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// The `message` of the edge's JSON refusal, or the text of a plain one.
fn refusal_message(body: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => v.get("message").and_then(Value::as_str).map(str::to_string),
        Err(_) => {
            let text = String::from_utf8_lossy(body).trim().to_string();
            (!text.is_empty()).then_some(text)
        }
    }
}

/// A route's answer to a method it does not serve: 405 with the `Allow` header `allow` (the
/// route table's methods; axum keeps a header the answer already has) and a message naming
/// them.
pub(crate) fn method_not_allowed(
    allow: String,
) -> impl Fn(Method, Uri) -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
    move |method: Method, uri: Uri| {
        let message = format!(
            "{method} is not allowed on {}; it answers {allow}",
            uri.path()
        );
        let mut res = ApiError::new(StatusCode::METHOD_NOT_ALLOWED, message).into_response();
        if let Ok(value) = HeaderValue::from_str(&allow) {
            res.headers_mut().insert(header::ALLOW, value);
        }
        std::future::ready(res)
    }
}

/// Middleware on rmcp's route: an error answer that is not JSON (rmcp's plain-text refusals)
/// gets the JSON body every other refusal has, with its status and headers (`Allow` stays). A
/// 405 says which methods the path answers.
pub(crate) async fn refusals_as_json(request: Request, next: Next) -> Response {
    // A clone of the URI shares its bytes: no allocation on the calls that are not refused.
    let method = request.method().clone();
    let uri = request.uri().clone();
    let res = next.run(request).await;
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error())
        || method == Method::HEAD
        || is_json(res.headers())
    {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, PLAIN_REFUSAL_MAX)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allowed = parts
            .headers
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        // rmcp allows a stateless GET only to resume an event stream, so its `Allow` names GET
        // on a DELETE's 405 and not on a GET's own: both say when a GET is answered.
        let get = if method == Method::GET || allowed.contains("GET") {
            " (a GET only resumes an event stream: it needs the Last-Event-ID it stopped at)"
        } else {
            ""
        };
        format!(
            "{method} is not allowed on {}; it answers {allowed}{get}",
            uri.path()
        )
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        text
    };
    let body = json!({ "message": message }).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .is_some_and(|t| t == "application/json" || t.ends_with("+json"))
}

/// The fallback: a path no route serves.
pub(crate) async fn no_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(no_route_text(uri.path()))
}

/// What a path no route serves is told: the likely fix when the path shows it (a trailing
/// slash; a breaker named as `/v1/breakers` lists it, `tool/provider`, instead of by its key),
/// else where to start.
fn no_route_text(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.len() < path.len() && !trimmed.is_empty() {
        return format!("no route {path}; drop the trailing slash: {trimmed}");
    }
    if let Some(rest) = path.strip_prefix("/v1/breakers/")
        && let [tool, provider, ..] = rest.split('/').collect::<Vec<_>>()[..]
        && !tool.contains('.')
        && provider != "force"
    {
        return format!(
            "no route {path}; a breaker's key joins its tool and provider with a dot, as GET /v1/breakers lists it under \"key\": /v1/breakers/{tool}.{provider}"
        );
    }
    format!("no route {path}; see GET /v1/tools and POST /v1/tools/{{tool}}/call")
}

/// A route's one path parameter. axum's own `Path` rejection (a segment that is not UTF-8 once
/// percent-decoded, e.g. `%FF`) is text/plain; this answers the JSON 400 every other error
/// gets (schemathesis run: the OpenAPI document promises JSON errors).
#[derive(Debug)]
pub(crate) struct PathParam(pub(crate) String);

impl PathParam {
    /// The path parameter of `parts`, read at once, for a handler that reads its request itself.
    /// axum's `Path` only looks up a request extension and never waits; were it ever to, this
    /// answers 500 rather than block.
    pub(crate) fn read(parts: &mut Parts) -> Result<Self, ApiError> {
        use futures::FutureExt;
        Self::from_request_parts(parts, &())
            .now_or_never()
            .unwrap_or_else(|| {
                Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the path parameter could not be read at once",
                ))
            })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(PathParam(value)),
            Err(e) => Err(ApiError::bad_request(format!(
                "{}; a path parameter must be UTF-8 once percent-decoded",
                e.body_text()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edges_message_is_taken_over_from_json_or_plain_text() {
        assert_eq!(
            refusal_message(
                br#"{"message": "missing credentials; send `Authorization: Bearer <client key>`"}"#
            )
            .as_deref(),
            Some("missing credentials; send `Authorization: Bearer <client key>`")
        );
        assert_eq!(
            refusal_message(b"Forbidden: Host header is not allowed\n").as_deref(),
            Some("Forbidden: Host header is not allowed")
        );
        assert_eq!(refusal_message(b""), None);
        assert_eq!(refusal_message(br#"{"error": 1}"#), None);
    }

    #[test]
    fn a_path_no_route_serves_is_told_the_likely_fix() {
        assert_eq!(
            no_route_text("/v1/watches/"),
            "no route /v1/watches/; drop the trailing slash: /v1/watches"
        );
        assert_eq!(
            no_route_text("/v1/breakers/search_flights/duffel/force"),
            "no route /v1/breakers/search_flights/duffel/force; a breaker's key joins its tool and provider with a dot, as GET /v1/breakers lists it under \"key\": /v1/breakers/search_flights.duffel"
        );
        assert_eq!(
            no_route_text("/v2/tools"),
            "no route /v2/tools; see GET /v1/tools and POST /v1/tools/{tool}/call"
        );
        assert!(no_route_text("/").starts_with("no route /; see GET /v1/tools"));
    }

    #[tokio::test]
    async fn a_refusal_keeps_its_status_and_headers_and_carries_a_json_rpc_error() {
        let mut refused =
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, "retry after 3 s").into_response();
        refused
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("3"));
        let res = as_json_rpc(refused, |m| m).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "3");
        let body = axum::body::to_bytes(res.into_body(), REFUSAL_MAX)
            .await
            .unwrap_or_default();
        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -31429, "message": "retry after 3 s"}})
        );
        let ok = as_json_rpc(StatusCode::OK.into_response(), |m| m).await;
        assert_eq!(ok.status(), StatusCode::OK);
    }
}

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
        format!(
            "{method} is not allowed on {}; it answers {allowed}",
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
    ApiError::not_found(format!(
        "no route {}; see GET /v1/tools and POST /v1/tools/{{tool}}/call",
        uri.path()
    ))
}

/// A route's one path parameter. axum's own `Path` rejection (a segment that is not UTF-8 once
/// percent-decoded, e.g. `%FF`) is text/plain; this answers the JSON 400 every other error
/// gets (schemathesis run: the OpenAPI document promises JSON errors).
#[derive(Debug)]
pub(crate) struct PathParam(pub(crate) String);

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

//! The one place where gateway errors become HTTP responses: a status and a JSON body whose
//! `message` says what to fix. Internal details are logged, never sent.

use axum::Json;
use axum::extract::{FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// An error answered to an HTTP client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    extra: Map<String, Value>,
}

impl ApiError {
    /// An error with a status and a message saying what to fix.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            extra: Map::new(),
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
        (self.status, Json(Value::Object(body))).into_response()
    }
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

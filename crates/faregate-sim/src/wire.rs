//! Duffel wire conventions shared by every provider route: the error envelope, the request
//! headers Duffel requires, JSON body parsing and id formats.
//!
//! Everything a client can get wrong ends here as a documented Duffel error body
//! (`{"meta":{status,request_id},"errors":[…]}`); nothing in this module panics on input.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Where Duffel's error documentation lives; every error item links it.
const DOCS_URL: &str = "https://duffel.com/docs/api/overview/errors";

/// One item of a Duffel `errors[]` array.
#[derive(Debug, Clone)]
pub(crate) struct ErrorItem {
    pub(crate) kind: &'static str,
    pub(crate) code: &'static str,
    pub(crate) title: &'static str,
    pub(crate) message: String,
    /// `{pointer, field}` for validation errors.
    pub(crate) field: Option<String>,
}

impl ErrorItem {
    /// A `validation_error` item pointing at a body field (a JSON pointer without `/data`,
    /// as Duffel reports it, e.g. `/slices/0/origin`).
    pub(crate) fn validation(
        code: &'static str,
        pointer: &str,
        message: impl Into<String>,
    ) -> Self {
        let title = match code {
            "validation_required" => "Required field",
            "invalid_airport" => "Invalid airport",
            _ => "Invalid field",
        };
        ErrorItem {
            kind: "validation_error",
            code,
            title,
            message: message.into(),
            field: Some(pointer.to_owned()),
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "type": self.kind,
            "code": self.code,
            "title": self.title,
            "message": self.message,
            "documentation_url": DOCS_URL,
        });
        if let Some(pointer) = &self.field {
            let field = pointer
                .rsplit('/')
                .find(|s| s.parse::<usize>().is_err())
                .unwrap_or("");
            v["source"] = json!({ "pointer": pointer, "field": field });
        }
        v
    }
}

/// A Duffel error response: a status and one or more error items.
///
#[derive(Debug, Clone)]
pub(crate) struct DuffelError {
    pub(crate) status: StatusCode,
    pub(crate) errors: Vec<ErrorItem>,
}

impl DuffelError {
    /// A single-item error.
    pub(crate) fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        title: &'static str,
        message: impl Into<String>,
    ) -> Self {
        DuffelError {
            status,
            errors: vec![ErrorItem {
                kind,
                code,
                title,
                message: message.into(),
                field: None,
            }],
        }
    }

    /// A 422 with every validation problem found (Duffel lists them all).
    pub(crate) fn validation(errors: Vec<ErrorItem>) -> Self {
        DuffelError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            errors,
        }
    }

    /// 404 `invalid_request_error` / `not_found`.
    pub(crate) fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "not_found",
            "Not found",
            format!("The resource you are trying to access does not exist: {what}"),
        )
    }

    /// 422 `invalid_state_error` / `offer_no_longer_available` (the status Duffel documents for
    /// orders; the simulator uses it for `GET /air/offers/{id}` too).
    pub(crate) fn offer_gone() -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_state_error",
            "offer_no_longer_available",
            "Offer no longer available",
            "The provided offer is no longer available, please select another offer or create a new offer request to get the latest availability",
        )
    }

    /// The generic error body for a status injected by a fault (`error_rate`, `outage`).
    ///
    /// 5xx use `api_error` (502 on order creation is `order_not_created`, Duffel's promise that
    /// nothing was booked); 4xx use the type Duffel documents for that status.
    pub(crate) fn for_status(status: StatusCode, orders: bool) -> Self {
        let (kind, code, title) = match status.as_u16() {
            400 => ("invalid_request_error", "bad_request", "Bad request"),
            401 => (
                "authentication_error",
                "access_token_not_found",
                "Access token not found",
            ),
            403 => (
                "authentication_error",
                "insufficient_permissions",
                "Insufficient permissions",
            ),
            404 => ("invalid_request_error", "not_found", "Not found"),
            422 => ("validation_error", "validation_error", "Validation error"),
            429 => (
                "rate_limit_error",
                "rate_limit_exceeded",
                "Rate limit exceeded",
            ),
            502 if orders => ("api_error", "order_not_created", "Order not created"),
            502 => ("airline_error", "airline_unknown", "Airline error"),
            503 => ("api_error", "internal_server_error", "Service unavailable"),
            504 => ("api_error", "internal_server_error", "Gateway timeout"),
            _ => (
                "api_error",
                "internal_server_error",
                "Internal server error",
            ),
        };
        let message = format!(
            "The simulator injected this {} response (fault injection).",
            status.as_u16()
        );
        Self::new(status, kind, code, title, message)
    }
}

impl DuffelError {
    /// Renders the error body with the request id the fault layer assigned.
    pub(crate) fn render(&self, request_id: &str) -> Response {
        let body = json!({
            "meta": { "status": self.status.as_u16(), "request_id": request_id },
            "errors": self.errors.iter().map(ErrorItem::to_json).collect::<Vec<_>>(),
        });
        (self.status, axum::Json(body)).into_response()
    }
}

/// Handlers return errors through this impl; the fault layer finds the error in the response
/// extensions and renders it again with the request id, so body and `x-request-id` agree.
impl IntoResponse for DuffelError {
    fn into_response(self) -> Response {
        let mut res = self.render("");
        res.extensions_mut().insert(self);
        res
    }
}

/// Checks the headers Duffel requires on every request.
///
/// Order: authorization (401), then `Duffel-Version` (400), then `Accept` (406 when present and
/// neither JSON nor a wildcard).
pub(crate) fn check_headers(headers: &HeaderMap) -> Result<(), DuffelError> {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth {
        None => {
            return Err(DuffelError::new(
                StatusCode::UNAUTHORIZED,
                "authentication_error",
                "missing_authorization_header",
                "Missing authorization header",
                "The 'Authorization' header needs to be set and contain a valid API token.",
            ));
        }
        Some(v) => {
            let token = v.strip_prefix("Bearer ").map(str::trim).unwrap_or("");
            if token.is_empty() {
                return Err(DuffelError::new(
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    "access_token_not_found",
                    "Access token not found",
                    "The 'Authorization' header must be 'Bearer <token>' with a non-empty token.",
                ));
            }
        }
    }
    match headers
        .get("duffel-version")
        .map(|v| v.to_str().unwrap_or(""))
    {
        None => Err(DuffelError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "missing_version_header",
            "Missing version header",
            "The 'Duffel-Version' header is required; this simulator supports 'v2'.",
        )),
        Some("v2") => check_accept(headers),
        Some(other) => Err(DuffelError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "unsupported_version",
            "Unsupported version",
            format!("Duffel-Version '{other}' is not supported; use 'v2'."),
        )),
    }
}

fn check_accept(headers: &HeaderMap) -> Result<(), DuffelError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(());
    };
    if accept.contains("json") || accept.contains("*/*") || accept.trim().is_empty() {
        return Ok(());
    }
    Err(DuffelError::new(
        StatusCode::NOT_ACCEPTABLE,
        "invalid_request_error",
        "unsupported_format",
        "Unsupported format",
        "The 'Accept' header must allow 'application/json'.",
    ))
}

/// Parses a request body as `{"data": {...}}` and returns the inner object.
///
/// Bad JSON is a 400 `invalid_request_error` / `malformed_json` (code chosen by the simulator);
/// a missing or non-object `data` is a 422 on `/data`.
pub(crate) fn parse_data(body: &[u8]) -> Result<serde_json::Map<String, Value>, DuffelError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        DuffelError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "malformed_json",
            "Malformed JSON",
            format!("The request body is not valid JSON: {e}"),
        )
    })?;
    match v.get("data") {
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(DuffelError::validation(vec![ErrorItem::validation(
            "invalid_field",
            "/data",
            "Field 'data' must be an object",
        )])),
        None => Err(DuffelError::validation(vec![ErrorItem::validation(
            "validation_required",
            "/data",
            "The request body must be wrapped in {\"data\": {...}}",
        )])),
    }
}

/// Wraps a payload as a Duffel success response with `{"data": ...}`.
pub(crate) fn data_response(status: StatusCode, data: Value) -> Response {
    (status, axum::Json(json!({ "data": data }))).into_response()
}

/// Sets a header, ignoring values that are not valid header text (never the case for ours).
pub(crate) fn set_header(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A Duffel-looking id: `prefix_0000` followed by 18 base-62 characters derived from `n`.
pub(crate) fn duffel_id(prefix: &str, n: u64) -> String {
    let mut x = crate::data::mix(n);
    let mut y = crate::data::mix(x ^ 0x5bd1_e995);
    let mut s = format!("{prefix}_0000");
    for i in 0..18 {
        let src = if i < 9 { &mut x } else { &mut y };
        s.push(ALPHABET[(*src % 62) as usize] as char);
        *src /= 62;
    }
    s
}

/// A Duffel-style request id (20 URL-safe characters).
pub(crate) fn request_id(n: u64) -> String {
    const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut x = crate::data::mix(n ^ 0x00C0_FFEE);
    let mut y = crate::data::mix(x);
    (0..20)
        .map(|i| {
            let src = if i < 10 { &mut x } else { &mut y };
            let c = URL_SAFE[(*src % 64) as usize] as char;
            *src /= 64;
            c
        })
        .collect()
}

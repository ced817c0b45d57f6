//! The error body of the two example APIs the simulator serves (the flight tracker and the
//! hotel-content service): a small problem object, `{"title", "reason", "detail", "status"}`,
//! in the shape FlightAware AeroAPI documents for its errors. Shared by both so that a tool from
//! configuration reads a refusal's text at one JSONPath, `$.detail`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// One error answer of an example API.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    status: StatusCode,
    reason: &'static str,
    detail: String,
}

impl Problem {
    /// An error with this status, machine-readable reason and human-readable detail.
    pub(crate) fn new(status: StatusCode, reason: &'static str, detail: impl Into<String>) -> Self {
        Problem {
            status,
            reason,
            detail: detail.into(),
        }
    }

    /// The answer to a status injected by a fault.
    pub(crate) fn injected(status: StatusCode) -> Self {
        let reason = match status.as_u16() {
            429 => "TOO_MANY_REQUESTS",
            400..=499 => "INVALID_REQUEST",
            _ => "INTERNAL_ERROR",
        };
        Problem::new(
            status,
            reason,
            format!(
                "The simulator injected this {} response (fault injection).",
                status.as_u16()
            ),
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        (
            self.status,
            axum::Json(json!({
                "title": title,
                "reason": self.reason,
                "detail": self.detail,
                "status": self.status.as_u16(),
            })),
        )
            .into_response()
    }
}

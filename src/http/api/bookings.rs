//! `GET /v1/bookings?limit=`: the booking ledger as callers see it.
//!
//! A client sees its own bookings, the admin key every client's. An entry shows ids, amounts
//! and where the booking stands, never passenger data (the ledger keeps none).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::edge::{ApiError, Caller};
use crate::http::state::SharedState;
use crate::jobs::rfc3339;
use crate::ledger::Entry;

/// The entry as the API shows it.
/// The entry as the API shows it (here, and as a booking job's `booking`).
pub(crate) fn describe(entry: &Entry) -> Value {
    json!({
        "client": entry.client,
        "idempotency_key": entry.idempotency_key,
        "tool": entry.tool,
        "state": entry.state.as_str(),
        "provider": entry.provider,
        "order_id": entry.order_id,
        "booking_reference": entry.booking_reference,
        "amount": entry.amount,
        "currency": entry.currency,
        "reason": entry.reason,
        "arguments_sha256": entry.digest,
        "created_at": rfc3339(entry.created_at_ms),
        "updated_at": rfc3339(entry.updated_at_ms),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<u32>,
}

/// `GET /v1/bookings`: the caller's bookings, newest first (every client's for the admin key).
pub(crate) async fn list(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) =
        query.map_err(|e| ApiError::bad_query(e, "the one parameter is limit (1 to 1000)"))?;
    let ledger = state.gateway.ledger().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "the booking ledger is off: this gateway runs without a store",
        )
    })?;
    let client = match &caller {
        Caller::Admin(_) => None,
        other => Some(other.client()),
    };
    let limit = ApiError::list_limit(q.limit)?;
    let entries = ledger
        .list(
            client.as_ref().map(|c| c.as_str()),
            limit,
            crate::clock::epoch_ms(),
        )
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "booking ledger failed");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the booking ledger is not answering; try again shortly",
            )
        })?;
    Ok(Json(
        json!({ "bookings": entries.iter().map(describe).collect::<Vec<_>>() }),
    ))
}

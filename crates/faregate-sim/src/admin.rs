//! The admin HTTP API under `/_sim`: read and change faults at run time, read counters.
//!
//! Errors here are the simulator's own (`{"message": ...}`), not Duffel's: these routes are
//! for the person running the demo, not for the adapter under test.

use std::collections::BTreeMap;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{Fault, RouteGroup, Simulator};

/// The `/_sim` routes.
pub(crate) fn routes() -> Router<Simulator> {
    Router::new()
        .route("/_sim/faults", get(get_faults).delete(clear_all))
        .route(
            "/_sim/faults/{group}",
            get(get_one).put(put_fault).delete(clear_one),
        )
        .route("/_sim/stats", get(stats))
        .route(
            "/_sim/script",
            get(get_script).post(put_script).delete(clear_script),
        )
}

/// `GET /_sim/script`: the steps, how long ago the script was set, the price factor now.
async fn get_script(State(sim): State<Simulator>) -> Json<serde_json::Value> {
    Json(super::lock(&sim.inner.script).describe())
}

/// `POST /_sim/script` with `{"steps": [{"after_ms": 2000, "price_factor": 0.8}, {"after_ms":
/// 4000, "flight": "BA117", "delay_minutes": 45}, …]}`: replaces the script, timed from now.
async fn put_script(State(sim): State<Simulator>, body: Bytes) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        steps: Vec<super::ScriptStep>,
    }
    let parsed: Body = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return message(
                StatusCode::BAD_REQUEST,
                format!(
                    "{e}; write {{\"steps\": [{{\"after_ms\": 2000, \"price_factor\": 0.8}}, {{\"after_ms\": 4000, \"flight\": \"BA117\", \"delay_minutes\": 45, \"gate\": \"B12\"}}]}}"
                ),
            );
        }
    };
    match sim.script(parsed.steps) {
        Ok(()) => Json(super::lock(&sim.inner.script).describe()).into_response(),
        Err(problem) => message(StatusCode::BAD_REQUEST, problem),
    }
}

/// `DELETE /_sim/script`: prices and flights as generated again.
async fn clear_script(State(sim): State<Simulator>) -> Json<serde_json::Value> {
    // An empty script has no step to refuse.
    let _ = sim.script(Vec::new());
    Json(super::lock(&sim.inner.script).describe())
}

fn message(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(json!({ "message": msg.into() }))).into_response()
}

fn parse_group(name: &str) -> Result<RouteGroup, Box<Response>> {
    name.parse::<RouteGroup>().map_err(|e| {
        let valid: Vec<&str> = RouteGroup::ALL.iter().map(|g| g.as_str()).collect();
        Box::new(
            (
                StatusCode::NOT_FOUND,
                Json(json!({ "message": e.to_string(), "valid_groups": valid })),
            )
                .into_response(),
        )
    })
}

fn all_faults(sim: &Simulator) -> Json<BTreeMap<RouteGroup, Fault>> {
    Json(
        RouteGroup::ALL
            .into_iter()
            .map(|g| (g, sim.fault(g)))
            .collect(),
    )
}

async fn get_faults(State(sim): State<Simulator>) -> Json<BTreeMap<RouteGroup, Fault>> {
    all_faults(&sim)
}

async fn get_one(State(sim): State<Simulator>, Path(group): Path<String>) -> Response {
    match parse_group(&group) {
        Ok(g) => Json(sim.fault(g)).into_response(),
        Err(res) => *res,
    }
}

async fn put_fault(
    State(sim): State<Simulator>,
    Path(group): Path<String>,
    body: Bytes,
) -> Response {
    let g = match parse_group(&group) {
        Ok(g) => g,
        Err(res) => return *res,
    };
    let fault: Fault = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return message(StatusCode::BAD_REQUEST, format!("invalid fault JSON: {e}")),
    };
    if let Err(msg) = fault.validate() {
        return message(StatusCode::BAD_REQUEST, msg);
    }
    sim.set_fault(g, fault);
    tracing::info!(group = %g, fault = ?sim.fault(g), "sim fault set");
    Json(sim.fault(g)).into_response()
}

async fn clear_all(State(sim): State<Simulator>) -> Json<BTreeMap<RouteGroup, Fault>> {
    sim.clear_faults();
    all_faults(&sim)
}

async fn clear_one(State(sim): State<Simulator>, Path(group): Path<String>) -> Response {
    match parse_group(&group) {
        Ok(g) => {
            sim.set_fault(g, Fault::default());
            Json(sim.fault(g)).into_response()
        }
        Err(res) => *res,
    }
}

async fn stats(State(sim): State<Simulator>) -> Json<super::SimStats> {
    Json(sim.stats())
}

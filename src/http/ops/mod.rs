//! Operations routes: the probes, the breaker API, the event stream, alerts, `/metrics` and the
//! dashboard.
//!
//! | route | access |
//! |---|---|
//! | `GET /healthz`, `GET /readyz` | open: liveness and readiness probes |
//! | `GET /v1/breakers`, `GET /v1/breakers/{key}`, `GET /v1/alerts`, `GET /v1/events` | a client key or the admin key (open when client keys are off) |
//! | `POST /v1/breakers/{key}/force` | the admin key: 401 without a valid key, 403 with a client key |
//! | `POST /v1/admin/reload`, `GET /v1/admin/replicas` | the admin key |
//! | `GET /metrics` | open when `[telemetry] metrics_public = true` (the default), else as the reads |
//! | `GET /dashboard` | open: the page holds no data and asks for a key when the API says 401 |
//!
//! `GET /v1/breakers` also lists the scheduled maintenance windows (`maintenance`: each window's
//! occurrence in force now or next, soonest first), and each breaker says whether a window holds
//! it now (`maintenance`: until when and why, else `null`).
//!
//! A client sees the breakers as it sees the tools: with a key whose scope names some tools,
//! `GET /v1/breakers` lists only the breakers guarding one of them (each breaker's `tools`, the
//! per-tool figures and the windows only those tools), and `GET /v1/breakers/{key}` answers any
//! other key as a missing one. The admin key, and every caller with client keys off, see all.
//!
//! **Breaker keys in URLs** are `tool.provider` (`search_flights.duffel`): tool names never
//! contain a dot, so the first dot splits them, and the form needs no escaping. The display form
//! `search_flights/duffel` is accepted percent-encoded (`search_flights%2Fduffel`) too.
//! A breaker every tool of a provider shares (breaker scope `provider` or `credential`) is
//! `*.duffel`, or `*.duffel@<digest of the credential>`; each breaker's JSON lists the tools it
//! guards (`tools`) and its `scope`. Reading a tool's key on such a provider answers the shared
//! breaker; forcing it is refused with the shared key to force instead, because that force
//! holds every tool on the provider and the operator should say so.
//!
//! With neither client keys nor an admin key configured (the demo), every route is open, and
//! start-up says so. With client keys but no admin key, forcing is refused (403) rather than
//! left to any client.

mod alerts;
mod breakers;
mod reload;
mod replicas;

pub(crate) use alerts::{events, list_alerts};
pub(crate) use breakers::{force_breaker, list_breakers, one_breaker};

pub(crate) use reload::reload;
pub(crate) use replicas::{keep_in_step, list as list_replicas};

use std::sync::LazyLock;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::http::edge::{Caller, Role};
use crate::http::state::{AppState, SharedState};

/// The dashboard page, served as is (no build step, no external assets).
const DASHBOARD: &str = include_str!("dashboard.html");

/// `GET /healthz`: alive.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: ready when at least one tool is served. A replica whose fleet store is away
/// is still ready (it serves on its own breakers); `fleet` says so. With background jobs,
/// `store` says which database holds them and whether it answered a statement within a second:
/// a store that does not answer leaves the replica ready (reads need no store, and a PostgreSQL
/// replica spools submissions), so the probe reports it instead of failing, and says that
/// bookings are refused meanwhile (a booking's ledger entry needs the store). `config` is the
/// fingerprint of the configuration in force and when it was loaded.
pub(crate) async fn readyz(State(state): State<SharedState>) -> Response {
    let tools = state.gateway.tools().len();
    let store = match &state.jobs {
        None => None,
        Some(jobs) => {
            let kind = if jobs.store().db().is_postgres() {
                "postgres"
            } else {
                "sqlite"
            };
            Some(match jobs.store_answers().await {
                Ok(()) => json!({ "kind": kind, "answers": true }),
                Err(e) => json!({
                    "kind": kind,
                    "answers": false,
                    "message": format!("the job store does not answer ({e}): reads are served, but every booking is refused before its provider is asked (its ledger entry needs the store), and background submissions wait in the spool (PostgreSQL) or are refused with 503, until it does"),
                }),
            })
        }
    };
    let config = json!({
        "fingerprint": state.config().fingerprint,
        "loaded_at": chrono::DateTime::from_timestamp_millis(state.loaded_at_ms())
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true)),
    });
    let fleet = state.fleet.as_ref().map(|f| {
        let status = f.status();
        json!({
            "replica": status.replica,
            "shared": status.shared,
            "connected": status.connected,
            "mode": if status.connected { "fleet" } else { "degraded: the store does not answer; this replica serves reads on its own breakers and refuses bookings unsent until it returns" },
        })
    });
    if tools == 0 {
        (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not_ready", "message": "no tool is served" })),
        )
            .into_response()
    } else {
        let mut body = json!({ "status": "ready", "tools": tools, "config": config });
        if let Some(fleet) = fleet {
            body["fleet"] = fleet;
        }
        if let Some(store) = store {
            body["store"] = store;
        }
        Json(body).into_response()
    }
}

/// Authorizes an operations request: reads need a client key or the admin key, forcing
/// needs the admin key.
fn authorize(state: &AppState, headers: &HeaderMap, role: Role) -> Result<Caller, Box<Response>> {
    state.authorize(headers, role, "forcing breakers")
}

pub(crate) async fn metrics(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if !state.config().telemetry.metrics_public
        && let Err(res) = authorize(&state, &headers, Role::Client)
    {
        return *res;
    }
    let metrics = state.telemetry.metrics();
    let now = Instant::now();
    for breaker in state.gateway.breakers().all() {
        metrics.observe_breaker(&breaker.snapshot(now));
    }
    for tool in state.gateway.tools() {
        metrics.set_bulkhead_in_use(tool.spec.name, tool.in_flight());
    }
    let held = state.gateway.maintenance_now();
    let held: Vec<(&str, &str, bool)> = held.iter().map(|(t, p, h)| (*t, p.as_str(), *h)).collect();
    metrics.set_maintenance_active(&held);
    if let Some(fleet) = &state.fleet {
        metrics.set_fleet_connected(fleet.status().connected);
    }
    (
        [(header::CONTENT_TYPE, metrics.content_type())],
        metrics.render(),
    )
        .into_response()
}

/// The dashboard's Content-Security-Policy: its one script allowed by its SHA-256 (so no
/// script injected into the page would run, should an escape ever be missed), no base URL or
/// form target of another origin, requests to this gateway only.
static DASHBOARD_CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'",
        script_digest(DASHBOARD)
    )
});

/// The base64 SHA-256 of the text of a page's one inline `<script>`, as CSP's hash source
/// names it.
fn script_digest(page: &str) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let script = page
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(script, _)| script);
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()))
}

pub(crate) async fn dashboard() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, DASHBOARD_CSP.as_str()),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        DASHBOARD,
    )
        .into_response()
}

//! The replicas of a fleet and their configurations: `GET /v1/admin/replicas` (admin key) lists
//! the live replicas with the fingerprint of the configuration each runs and says whether they
//! agree; the task beside the server writes this replica's row every few seconds (and at once
//! after a reload) and reloads this replica when another one was asked to reload
//! (`POST /v1/admin/reload`), so a reload through a balancer reaches every live replica.
//!
//! The rows and the reload request are kept by `fleet::Replicas` (PostgreSQL only). On SQLite
//! there is one replica, which lists itself. Each replica reads its own files: a reload asked
//! of the fleet makes every replica read its files again, it does not copy one replica's files
//! to the others. A replica whose reload fails keeps serving its running configuration (and says
//! why at ERROR, as for SIGHUP), and the listing shows the configuration it still runs beside the others'.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::epoch_ms;
use crate::fleet::{LIVE_FOR, PUBLISH_EVERY, ReplicaConfig, Replicas};
use crate::http::edge::{ApiError, Role};
use crate::http::state::{AppState, ReloadError, SharedState};
use crate::store::Listener;

/// How long after a lost notification connection this replica listens again.
const LISTEN_AGAIN: Duration = Duration::from_secs(5);

/// `GET /v1/admin/replicas`.
pub(crate) async fn list(
    State(state): State<SharedState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err(res) = state.authorize(&headers, Role::Admin, "listing the replicas") {
        return *res;
    }
    if let Err(e) = ApiError::no_query(query.as_deref(), "GET /v1/admin/replicas") {
        return e.into_response();
    }
    let now = epoch_ms();
    let here = this_replica(&state, now);
    let mut rows = match &state.replicas {
        None => Vec::new(),
        Some(replicas) => match replicas.live(now).await {
            Ok(rows) => rows,
            Err(e) => {
                return ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "the fleet's store did not answer ({e}), so the other replicas are not known; this replica runs {}",
                        here.fingerprint
                    ),
                )
                .into_response();
            }
        },
    };
    // This replica as it is now, not as it last wrote its row.
    rows.retain(|r| r.replica != here.replica);
    rows.push(here.clone());
    rows.sort_by(|a, b| a.replica.cmp(&b.replica));
    let configurations = by_fingerprint(&rows);
    Json(json!({
        "shared": state.replicas.is_some(),
        "agree": configurations.len() <= 1,
        "configurations": configurations,
        "live_for": humantime::format_duration(LIVE_FOR).to_string(),
        "replicas": rows.iter().map(|r| json!({
            "replica": r.replica,
            "fingerprint": r.fingerprint,
            "loaded_at": rfc3339(r.loaded_at_ms),
            "seen_at": rfc3339(r.seen_at_ms),
            "this": r.replica == here.replica,
        })).collect::<Vec<_>>(),
    }))
    .into_response()
}

/// This replica's row as of `now_ms`.
fn this_replica(state: &AppState, now_ms: i64) -> ReplicaConfig {
    let replica = match (&state.replicas, &state.fleet) {
        (Some(replicas), _) => replicas.replica().to_string(),
        (None, Some(fleet)) => fleet.status().replica,
        (None, None) => "this replica".to_string(),
    };
    ReplicaConfig {
        replica,
        fingerprint: state.config().fingerprint.clone(),
        loaded_at_ms: state.loaded_at_ms(),
        seen_at_ms: now_ms,
    }
}

/// Fingerprint → the replicas that run it.
fn by_fingerprint(rows: &[ReplicaConfig]) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in rows {
        out.entry(&r.fingerprint).or_default().push(&r.replica);
    }
    out
}

/// `None` when `rows` all run one configuration, else which runs what, in one line.
fn drift(rows: &[ReplicaConfig]) -> Option<String> {
    let configurations = by_fingerprint(rows);
    (configurations.len() > 1).then(|| {
        configurations
            .iter()
            .map(|(fingerprint, replicas)| format!("{fingerprint} on {}", replicas.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

fn rfc3339(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// After a reload this replica did for `POST /v1/admin/reload`: asks every other replica of the
/// fleet to reload too. How many live replicas were asked (0 without a fleet on PostgreSQL), or
/// why none was.
pub(super) async fn ask_others(state: &AppState) -> Result<usize, String> {
    let Some(replicas) = &state.replicas else {
        return Ok(0);
    };
    let now = epoch_ms();
    let generation = replicas.ask_reload(now).await.map_err(|e| {
        tracing::warn!(error = %e, "fleet: the other replicas were not asked to reload");
        format!(
            "this replica reloaded, but the fleet's store did not answer ({e}), so the other replicas were not asked; reload again"
        )
    })?;
    let others = replicas.live(now).await.map_or(0, |rows| {
        rows.iter()
            .filter(|r| r.replica != replicas.replica())
            .count()
    });
    tracing::info!(
        generation,
        asked = others,
        "fleet: the other live replicas were asked to reload"
    );
    Ok(others)
}

/// Keeps this replica's row in `replicas` and follows the fleet's reload requests until
/// `stop`: writes the row every [`PUBLISH_EVERY`] and when woken (after a reload), reloads when
/// a newer request is stored (heard at once by notification, or found on the next write), and
/// tells telemetry whether the live replicas agree.
pub(crate) async fn keep_in_step(state: SharedState, replicas: Replicas, stop: CancellationToken) {
    let mut listener: Option<Listener> = None;
    let mut listen_at = Instant::now();
    let mut away = false;
    loop {
        if listener.is_none() && Instant::now() >= listen_at {
            listener = replicas.listen().await.ok().flatten();
            listen_at = Instant::now() + LISTEN_AGAIN;
        }
        step(&state, &replicas, &mut away).await;
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(PUBLISH_EVERY) => {}
            () = replicas.woken() => {}
            heard = next(&mut listener) => {
                if !heard {
                    listener = None;
                }
            }
        }
    }
}

/// The next notification (or a reconnection, after which the stored request is read anyway);
/// `false` when the connection broke. Never completes without a listener.
async fn next(listener: &mut Option<Listener>) -> bool {
    match listener {
        Some(l) => l.next().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// One write of this replica's row, the reload it finds asked, and the drift it sees.
async fn step(state: &SharedState, replicas: &Replicas, away: &mut bool) {
    let now = epoch_ms();
    let fingerprint = state.config().fingerprint.clone();
    match replicas.seen(&fingerprint, state.loaded_at_ms(), now).await {
        Ok(asked) => {
            if *away {
                *away = false;
                tracing::info!(
                    "fleet: the store answers again; this replica's configuration is shown to the fleet again"
                );
            }
            if let Some(generation) = asked {
                // The reload wakes this task, whose next step writes the new fingerprint.
                reload_asked(state, generation).await;
            }
        }
        Err(e) => {
            if !*away {
                *away = true;
                tracing::warn!(error = %e, "fleet: the store does not answer; the other replicas do not see this replica's configuration, nor this one a reload they ask for, until it does");
            }
            return;
        }
    }
    if let Ok(rows) = replicas.live(now).await {
        state
            .telemetry
            .on_config_drift(drift(&rows), Instant::now());
    }
}

/// Reloads this replica because another one asked the fleet to (`generation`); the outcome is
/// logged here (and each problem by `AppState::reload`, at ERROR).
async fn reload_asked(state: &SharedState, generation: i64) {
    let reloading = Arc::clone(state);
    match tokio::task::spawn_blocking(move || reloading.reload()).await {
        Ok(Ok(summary)) => tracing::info!(
            generation,
            fingerprint = %summary.fingerprint,
            added = ?summary.tools.added,
            removed = ?summary.tools.removed,
            changed = ?summary.tools.changed,
            "fleet: configuration reloaded, as the fleet was asked"
        ),
        Ok(Err(ReloadError::Problems(problems))) => tracing::error!(
            generation,
            problems = problems.len(),
            fingerprint = %state.config().fingerprint,
            "fleet: the reload the fleet was asked for failed here (its files have problems: `faregate check` lists them); this replica keeps serving its running configuration (the fingerprint above), which GET /v1/admin/replicas shows beside the others'"
        ),
        Ok(Err(ReloadError::NoSource)) => tracing::warn!(
            generation,
            "fleet: the fleet was asked to reload, but this replica has no configuration files to read again"
        ),
        Err(e) => {
            tracing::error!(generation, error = %e, "fleet: the reload the fleet was asked for did not finish")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(replica: &str, fingerprint: &str) -> ReplicaConfig {
        ReplicaConfig {
            replica: replica.into(),
            fingerprint: fingerprint.into(),
            loaded_at_ms: 0,
            seen_at_ms: 0,
        }
    }

    #[test]
    fn replicas_drift_when_they_run_more_than_one_fingerprint() {
        assert_eq!(drift(&[row("a", "f1"), row("b", "f1")]), None);
        assert_eq!(drift(&[row("a", "f1")]), None);
        assert_eq!(
            drift(&[row("a", "f1"), row("b", "f2"), row("c", "f1")]).as_deref(),
            Some("f1 on a, c; f2 on b")
        );
    }
}

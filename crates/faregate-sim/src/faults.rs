//! Fault injection and per-group accounting: the layer every provider request passes through.
//!
//! The layer owns the order in which faults apply (documented in the module root), the
//! rate-limit window, the common response headers (`x-request-id`, `ratelimit-*`) and the
//! counters. Handlers never see a fault; they only ever produce the "healthy" answer.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::amadeus_wire::{self, AmadeusError};
use super::problem::Problem;
use super::wire::{self, DuffelError};
use super::{GroupStats, RouteGroup, Simulator, lock};

/// The limit advertised in `ratelimit-limit` when no `requests_per_minute` fault is set.
const ADVERTISED_LIMIT: u32 = 600;
/// The rate-limit window, unless a fault's `window_ms` shrinks it.
const WINDOW: Duration = Duration::from_secs(60);
/// The longest `Retry-After` a fault may ask for (a day), so reset times stay representable.
const MAX_RETRY_AFTER_S: u64 = 86_400;

/// How one route group misbehaves. The default is a healthy provider.
///
/// All fields are optional in JSON (`#[serde(default)]`); unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fault {
    /// Delay added before answering, in milliseconds.
    pub latency_ms: u64,
    /// Delay added after the handler ran, in milliseconds: what the request did is done, and
    /// its answer is late.
    pub latency_after_ms: u64,
    /// Fraction (0..=1) of requests answered with `error_status`, spread evenly and
    /// deterministically (request n fails when `floor(n * rate)` increases).
    pub error_rate: f64,
    /// Status of injected errors; 0 means 503. The body is Duffel's error shape with the type
    /// matching the status (`api_error`/`internal_server_error` for 5xx).
    pub error_status: u16,
    /// Answer every request with 429 `rate_limit_error` and this `Retry-After`.
    pub rate_limited: Option<RateLimitFault>,
    /// Enforce this many requests per fixed one-minute window (429 beyond it).
    pub requests_per_minute: Option<u32>,
    /// The length of that "minute" in milliseconds (default 60 000): tests shrink it so that a
    /// scenario spanning several windows runs in seconds.
    pub window_ms: Option<u64>,
    /// Answer every request with 503 at once.
    pub outage: bool,
    /// Never answer (until the fault is cleared or the server shuts down).
    pub hang: bool,
    /// Replace successful bodies with `{"data":{"unexpected":true}}` (status kept).
    pub malformed: bool,
    /// Amadeus groups: answer every request with 429 code 38195 (monthly quota exhausted, no
    /// `Retry-After`). Ignored by Duffel groups, whose API has no such error.
    pub quota_exhausted: bool,
}

/// A forced 429: `Retry-After: retry_after_s` and `ratelimit-reset` = now + `retry_after_s`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitFault {
    /// Seconds the client should wait.
    pub retry_after_s: u64,
}

impl Fault {
    /// Checks ranges for the admin API; `Err` is a message naming the field.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(format!(
                "error_rate must be between 0 and 1, got {}",
                self.error_rate
            ));
        }
        if self.error_status != 0 && !(400..=599).contains(&self.error_status) {
            return Err(format!(
                "error_status must be an HTTP error status (400-599) or 0 for 503, got {}",
                self.error_status
            ));
        }
        if self.requests_per_minute == Some(0) {
            return Err("requests_per_minute must be at least 1 (omit it for no limit)".into());
        }
        if let Some(ms) = self.window_ms
            && !(100..=3_600_000).contains(&ms)
        {
            return Err(format!(
                "window_ms must be between 100 and 3600000 (omit it for one minute), got {ms}"
            ));
        }
        if let Some(rl) = &self.rate_limited
            && rl.retry_after_s > MAX_RETRY_AFTER_S
        {
            return Err(format!(
                "rate_limited.retry_after_s must be at most {MAX_RETRY_AFTER_S}, got {}",
                rl.retry_after_s
            ));
        }
        Ok(())
    }

    /// Clamps out-of-range values and fills `error_status` (503) when an error rate is set.
    pub(crate) fn normalized(mut self) -> Self {
        self.error_rate = if self.error_rate.is_nan() {
            0.0
        } else {
            self.error_rate.clamp(0.0, 1.0)
        };
        if !(400..=599).contains(&self.error_status) {
            self.error_status = if self.error_rate > 0.0 { 503 } else { 0 };
        }
        if self.requests_per_minute == Some(0) {
            self.requests_per_minute = None;
        }
        if let Some(rl) = &mut self.rate_limited {
            rl.retry_after_s = rl.retry_after_s.min(MAX_RETRY_AFTER_S);
        }
        self.window_ms = self.window_ms.map(|ms| ms.clamp(100, 3_600_000));
        self
    }

    /// The rate-limit window.
    fn window(&self) -> Duration {
        self.window_ms.map_or(WINDOW, Duration::from_millis)
    }
}

/// One group's fault, limiter window and counters.
#[derive(Debug, Default)]
pub(crate) struct GroupState {
    pub(crate) fault: Fault,
    /// Requests seen since the fault was set (drives the deterministic error rate).
    error_seq: u64,
    /// The current fixed rate-limit window: start (monotonic and wall clock) and admitted count.
    window: Option<(Instant, SystemTime, u32)>,
    pub(crate) stats: GroupStats,
}

impl GroupState {
    pub(crate) fn set_fault(&mut self, fault: Fault) {
        self.fault = fault;
        self.error_seq = 0;
        self.window = None;
    }

    /// Admits a request into the window; returns (limit, remaining, reset, admitted).
    fn admit(&mut self, now: Instant) -> (u32, u32, SystemTime, bool) {
        let limit = self.fault.requests_per_minute.unwrap_or(ADVERTISED_LIMIT);
        let (start, wall, count) = match self.window {
            Some((start, wall, count)) if now.duration_since(start) < self.fault.window() => {
                (start, wall, count)
            }
            _ => (now, SystemTime::now(), 0),
        };
        let enforced = self.fault.requests_per_minute.is_some();
        let admitted = !enforced || count < limit;
        let count = if admitted { count + 1 } else { count };
        self.window = Some((start, wall, count));
        let window = self.fault.window();
        (limit, limit.saturating_sub(count), wall + window, admitted)
    }

    /// Whether the next request under `error_rate` fails (Bresenham-style spreading).
    fn next_is_error(&mut self) -> bool {
        if self.fault.error_rate <= 0.0 {
            return false;
        }
        self.error_seq += 1;
        let n = self.error_seq as f64;
        let rate = self.fault.error_rate;
        ((n * rate) + 1e-9).floor() > (((n - 1.0) * rate) + 1e-9).floor()
    }
}

/// Rate-limit header values for one response.
struct Limits {
    limit: u32,
    remaining: u32,
    reset: SystemTime,
}

/// The fault layer (an axum `from_fn_with_state` middleware), one instance per group.
pub(crate) async fn fault_layer(
    State((sim, group)): State<(Simulator, RouteGroup)>,
    req: Request,
    next: Next,
) -> Response {
    let request_id = wire::request_id(sim.inner.seed ^ sim.next_seq());
    let correlation = req.headers().get("x-client-correlation-id").cloned();
    let fault = {
        let mut groups = lock(&sim.inner.groups);
        let second = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        groups[group.index()].stats.arrive(second);
        groups[group.index()].fault.clone()
    };
    // Counts the request as dropped unless it is answered: hyper drops this future when the
    // caller closes its connection first.
    let mut unanswered = Unanswered {
        sim: &sim,
        group,
        armed: true,
    };
    let (res, limits) = run_faults(&sim, group, fault, req, next).await;
    unanswered.armed = false;
    let mut res = match res.extensions().get::<DuffelError>() {
        Some(err) => {
            // Re-render with the request id, keeping headers such as `retry-after`.
            let mut rendered = err.render(&request_id);
            for (k, v) in res.headers() {
                if k != header::CONTENT_LENGTH && k != header::CONTENT_TYPE {
                    rendered.headers_mut().insert(k.clone(), v.clone());
                }
            }
            rendered
        }
        None => res,
    };
    let limits = limits.unwrap_or_else(|| {
        // Requests that never reached the limiter (outage, shutdown) report the window as is.
        let mut groups = lock(&sim.inner.groups);
        let state = &mut groups[group.index()];
        let limit = state.fault.requests_per_minute.unwrap_or(ADVERTISED_LIMIT);
        match state.window {
            Some((_, wall, count)) => Limits {
                limit,
                remaining: limit.saturating_sub(count),
                reset: wall + state.fault.window(),
            },
            None => Limits {
                limit,
                remaining: limit,
                reset: SystemTime::now() + state.fault.window(),
            },
        }
    });
    let headers = res.headers_mut();
    wire::set_header(headers, "x-request-id", &request_id);
    // Amadeus documents no rate-limit headers, so its groups send none.
    if !group.is_amadeus() {
        wire::set_header(headers, "ratelimit-limit", &limits.limit.to_string());
        wire::set_header(
            headers,
            "ratelimit-remaining",
            &limits.remaining.to_string(),
        );
        wire::set_header(
            headers,
            "ratelimit-reset",
            &httpdate::fmt_http_date(limits.reset),
        );
    }
    if let Some(c) = correlation {
        headers.insert("x-client-correlation-id", c);
    }
    let status = res.status().as_u16();
    *lock(&sim.inner.groups)[group.index()]
        .stats
        .statuses
        .entry(status)
        .or_insert(0) += 1;
    tracing::debug!(group = %group, status, request_id, "sim answered");
    res
}

/// Counts a request in its group's `dropped` when it is dropped before its answer.
struct Unanswered<'a> {
    sim: &'a Simulator,
    group: RouteGroup,
    armed: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.sim.inner.groups)[self.group.index()]
                .stats
                .dropped += 1;
        }
    }
}

/// Applies the faults in the documented order and runs the handler when they let it.
async fn run_faults(
    sim: &Simulator,
    group: RouteGroup,
    fault: Fault,
    req: Request,
    next: Next,
) -> (Response, Option<Limits>) {
    if fault.outage {
        return (injected(group, StatusCode::SERVICE_UNAVAILABLE), None);
    }
    if fault.hang && !wait_while_hung(sim, group).await {
        return (shutting_down(group), None);
    }
    if fault.latency_ms > 0
        && !sleep_unless_closing(sim, Duration::from_millis(fault.latency_ms)).await
    {
        return (shutting_down(group), None);
    }
    let (limit, remaining, reset, admitted, error) = {
        let mut groups = lock(&sim.inner.groups);
        let state = &mut groups[group.index()];
        let (limit, remaining, reset, admitted) = state.admit(Instant::now());
        let error = admitted && state.fault.rate_limited.is_none() && state.next_is_error();
        (limit, remaining, reset, admitted, error)
    };
    if !admitted {
        let wait = reset.duration_since(SystemTime::now()).unwrap_or_default();
        let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let limits = Limits {
            limit,
            remaining: 0,
            reset,
        };
        return (too_many_requests(group, retry_after.max(1)), Some(limits));
    }
    if let Some(rl) = &fault.rate_limited {
        let reset = SystemTime::now() + Duration::from_secs(rl.retry_after_s);
        return (
            too_many_requests(group, rl.retry_after_s),
            Some(Limits {
                limit,
                remaining: 0,
                reset,
            }),
        );
    }
    let limits = Some(Limits {
        limit,
        remaining,
        reset,
    });
    if fault.quota_exhausted && group.is_amadeus() {
        let quota = AmadeusError::new(
            StatusCode::TOO_MANY_REQUESTS,
            38195,
            "Quota limit exceeded",
            "The quota limit of the API is exceeded (fault injection).",
        );
        return (quota.into_response(), limits);
    }
    if error {
        let status =
            StatusCode::from_u16(fault.error_status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        return (injected(group, status), limits);
    }
    let checked = match group {
        RouteGroup::AmadeusAuth => Ok(()),
        g if g.is_example() => Ok(()),
        g if g.is_amadeus() => {
            amadeus_wire::check_bearer(sim, req.headers()).map_err(IntoResponse::into_response)
        }
        _ => wire::check_headers(req.headers()).map_err(IntoResponse::into_response),
    };
    if let Err(res) = checked {
        return (res, limits);
    }
    let res = next.run(req).await;
    if fault.latency_after_ms > 0
        && !sleep_unless_closing(sim, Duration::from_millis(fault.latency_after_ms)).await
    {
        return (shutting_down(group), limits);
    }
    if fault.malformed && res.status().is_success() {
        let mut bad = (
            res.status(),
            axum::Json(serde_json::json!({"data": {"unexpected": true}})),
        )
            .into_response();
        for (k, v) in res.headers() {
            if k != header::CONTENT_LENGTH {
                bad.headers_mut().insert(k.clone(), v.clone());
            }
        }
        return (bad, limits);
    }
    (res, limits)
}

/// The error body for an injected status, in the group's wire format.
fn injected(group: RouteGroup, status: StatusCode) -> Response {
    if group.is_example() {
        Problem::injected(status).into_response()
    } else if group.is_amadeus() {
        AmadeusError::for_status(status).into_response()
    } else {
        DuffelError::for_status(status, group == RouteGroup::DuffelAirOrders).into_response()
    }
}

/// 429 with `Retry-After`: Duffel's `rate_limit_error` (the `ratelimit-*` headers are added by
/// the caller) or Amadeus's 38194.
fn too_many_requests(group: RouteGroup, retry_after_s: u64) -> Response {
    let mut res = if group.is_example() {
        Problem::injected(StatusCode::TOO_MANY_REQUESTS).into_response()
    } else if group.is_amadeus() {
        AmadeusError::new(
            StatusCode::TOO_MANY_REQUESTS,
            38194,
            "Too many requests",
            "The network rate limit is exceeded, please try again later",
        )
        .into_response()
    } else {
        too_many_requests_duffel()
    };
    wire::set_header(res.headers_mut(), "retry-after", &retry_after_s.to_string());
    res
}

fn too_many_requests_duffel() -> Response {
    DuffelError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_error",
        "rate_limit_exceeded",
        "Rate limit exceeded",
        "Too many requests hit the API too quickly. Please retry your request after the time specified in the `ratelimit-reset` header.",
    )
    .into_response()
}

/// The answer for requests cut short because the simulator is shutting down.
fn shutting_down(group: RouteGroup) -> Response {
    if group.is_example() {
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "INTERNAL_ERROR",
            "The simulator is shutting down.",
        )
        .into_response();
    }
    if group.is_amadeus() {
        return AmadeusError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            38189,
            "Internal error",
            "The simulator is shutting down.",
        )
        .into_response();
    }
    DuffelError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "api_error",
        "internal_server_error",
        "Service unavailable",
        "The simulator is shutting down.",
    )
    .into_response()
}

/// Waits while the group's fault says `hang`. Returns false if the simulator shut down.
async fn wait_while_hung(sim: &Simulator, group: RouteGroup) -> bool {
    // Subscribe before checking, so a change between the check and the wait is not lost.
    let mut rx = sim.inner.epoch.subscribe();
    loop {
        if sim.inner.closing.load(Ordering::SeqCst) {
            return false;
        }
        if !sim.fault(group).hang {
            return true;
        }
        if rx.changed().await.is_err() {
            return false;
        }
    }
}

/// Sleeps, cut short by shutdown. Returns false if the simulator shut down.
async fn sleep_unless_closing(sim: &Simulator, d: Duration) -> bool {
    let mut rx = sim.inner.epoch.subscribe();
    let sleep = tokio::time::sleep(d);
    tokio::pin!(sleep);
    loop {
        if sim.inner.closing.load(Ordering::SeqCst) {
            return false;
        }
        tokio::select! {
            () = &mut sleep => return true,
            changed = rx.changed() => if changed.is_err() { return false },
        }
    }
}

/// Fallback for paths the simulator does not serve: a Duffel-shaped 404 with a request id
/// (not counted in any group).
pub(crate) async fn unknown_route(State(sim): State<Simulator>, req: Request) -> Response {
    let request_id = wire::request_id(sim.inner.seed ^ sim.next_seq());
    let what = format!("{} {}", req.method(), req.uri().path());
    let mut res = DuffelError::not_found(&what).render(&request_id);
    wire::set_header(res.headers_mut(), "x-request-id", &request_id);
    res
}

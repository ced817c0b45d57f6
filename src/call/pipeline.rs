//! The upstream part of a call: bulkhead → for each provider: breaker permit → attempt
//! (timeout within the deadline) → classify → record → retry or move on.
//!
//! # Why this order
//! - **The client's share, then the bulkhead, first**: the bulkhead bounds how many calls of one
//!   tool may be waiting on providers at all, so a slow provider can hold at most that many
//!   connections and tasks (one slow API must not exhaust the pool every other tool needs). It
//!   is taken once per call and held across retries and providers; a full bulkhead answers at
//!   once instead of queueing without bound. While several clients call, a client holds at most
//!   its share of those slots ([`Share`], `clients::ToolShare`), so one client's burst cannot
//!   fill the bulkhead and turn every other client away from a healthy tool. The share is asked
//!   first: a client at its share is told so (its own doing) even when the bulkhead is full too,
//!   and no breaker hears of it.
//! - **Maintenance before the breaker**: a key in a scheduled maintenance window is refused
//!   as a forced-open breaker would refuse it, and the call moves to the next provider. A
//!   chain held everywhere answers with every window (the tool is back when the first ends); a
//!   provider that failed otherwise answers for the chain, since it may be back much sooner.
//! - **The client's share of the provider's window, beside maintenance**: while the
//!   provider's latest announcement shows its window running low, a client that sent more
//!   than its fair part of this replica's requests to it in the window is refused before the
//!   breaker is asked (`clients::ProviderWindow`), so the provider's 429 (and the breaker's
//!   pause for every client) is not spent on it; no breaker hears of it, and the call moves to
//!   the next provider (another quota). A chain that refused the client everywhere answers
//!   with the first reset; a provider that failed otherwise answers for the chain. An attempt
//!   admitted is counted as the client's request there, and given back when the breaker
//!   refuses it after all; a retry is counted but never refused (the call was let in, and its
//!   answer is the provider's failure).
//! - **Breaker per attempt**: every attempt, first or retry, asks its tool × provider breaker,
//!   saying who asks (an interactive call leaves half-open probes to due background jobs). An
//!   open breaker stops retries dead (no retry ever fires into it) and moves the call to the
//!   next provider of the chain.
//! - **Timeout inside the deadline**: each attempt gets `min(timeout, deadline left)` (and
//!   the provider's `[providers.X] timeout`, when it has one, caps the tool's), so
//!   retries share the call's deadline instead of stacking timeouts.
//! - **Classify, then record, before deciding anything else**: the breaker learns about an
//!   attempt before the pipeline retries or falls back, so the next decision sees it. An
//!   attempt whose caller goes away is dropped with its permit, which records it as telling
//!   nothing about the provider.
//! - **Retry only idempotent tools**, with full-jitter backoff or the provider's own
//!   `Retry-After` when that fits in the deadline; a write is attempted once. A provider that
//!   fails is not retried when another one follows in the chain: failing over is a better use
//!   of the deadline than a backoff or a second timeout on a provider that just failed. The
//!   last provider of the chain gets the retries. A background job is not retried on a 429:
//!   it is requeued until the reset instead of holding a worker.
//!
//! At each failover and before each retry's wait the pipeline reports a [`Step`] through its
//! context, for the callers waiting on it (MCP progress notifications).
//!
//! The pipeline returns what happened ([`Success`] or [`Failure`]); what the caller is told is
//! decided by the answer policies (`answer.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::classify::classify;
use super::observe::Observer;
use super::outcome::{Failed, Failure, Held, Success};
use super::progress::{Step, Steps};
use super::retry::is_retryable;
use super::served::{Route, ServedTool};
use super::upstream::Upstream;
use crate::breaker::{BreakerState, Caller};
use crate::clients::{ClientName, ProviderReserve};
use crate::clock;
use crate::maintenance::{self, Schedule};
use crate::policy::SplitMix;
use crate::providers::{ErrorKind, RateLimits, UpstreamError};
use crate::tools::{CallMode, ToolOutput, ToolRequest};

mod shares;

pub(super) use self::shares::{Reach, Share, check_provider_shares, take_share};
use self::shares::{admit_client, rejects_everyone};

/// The longest a call waits for the fleet to grant this replica a half-open breaker's probe
/// lease that no other replica holds: the fleet takes leases every 250 ms, with one statement.
const LEASE_WAIT: Duration = Duration::from_millis(600);

/// What a run of the pipeline reports to, and draws its jitter from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Context<'a> {
    /// Where spans and metrics go.
    pub(super) observer: &'a Observer,
    /// The retry backoff's random source.
    pub(super) jitter: &'a SplitMix,
    /// Where an interactive attempt counts the request it sends (in memory; the job system
    /// spends the counts from the providers' buckets, so background claims make room).
    pub(super) rate_limits: &'a RateLimits,
    /// Where the steps a waiting caller may be told go (failing over, retrying), if anyone
    /// listens.
    pub(super) steps: Option<&'a Steps>,
    /// The scheduled maintenance windows: a key in one is not asked.
    pub(super) maintenance: &'a Schedule,
    /// The part of a provider's rate-limit window kept for clients under their fair share
    /// (`[limits] provider_reserve`), while several clients call; `None`: nobody is held to a
    /// share of a provider.
    pub(super) provider_reserve: Option<ProviderReserve>,
    /// The call this run is for, as its log lines name it.
    pub(super) call: CallTag<'a>,
}

/// What the pipeline's log lines name a call by, so an operator ties a provider's failure to
/// the call an agent reported and to its client: `call_id` (the caller's id, a job's, or the
/// gateway's `fg_N`) and `client` (its name: never a key). A read shared by identical callers
/// names the call that led it (the others are answered from the same failure); the gateway's
/// own probe for back-in-service notices names neither.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CallTag<'a> {
    /// The call's id.
    pub(super) call_id: Option<&'a str>,
    /// The client it is for.
    pub(super) client: Option<&'a ClientName>,
}

impl<'a> CallTag<'a> {
    /// The call `call_id` of `client`.
    pub(super) fn of(call_id: &'a str, client: &'a ClientName) -> Self {
        CallTag {
            call_id: Some(call_id),
            client: Some(client),
        }
    }

    /// The client's name, for a log line.
    fn client_name(&self) -> Option<&'a str> {
        self.client.map(ClientName::as_str)
    }
}

impl Context<'_> {
    /// Tells the callers waiting on this call about the step `step` builds (nobody listening
    /// is fine). A closure, so a step's texts are allocated only when somebody listens: on the
    /// fast-fail path (a rejection failing over to the next provider) nobody does.
    fn report(&self, step: impl FnOnce() -> Step) {
        if let Some(steps) = self.steps {
            steps.send(step());
        }
    }
}

/// Runs a validated request upstream: the client's share and the bulkhead, then the provider
/// chain.
///
/// `run` and `run_route` return `async move` blocks rather than being `async fn`s: an
/// `async fn` keeps its arguments twice across an await (as arguments and as locals), and this
/// future is kept for as long as a slow provider holds the call (memory per held call,
/// BENCHMARKS.md). For the same reason what a step needs only before or after an attempt sits
/// in a block of its own, and the failure kept across the chain is boxed.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
)]
pub(super) fn run<'a>(
    tool: &'a ServedTool,
    request: &'a ToolRequest,
    deadline: Instant,
    mode: CallMode,
    share: Share<'a>,
    cx: Context<'a>,
) -> impl Future<Output = Result<Success, Failure>> + Send + 'a {
    async move {
        let _share = take_share(tool, share, &cx)?;
        let Ok(_slot) = Arc::clone(&tool.bulkhead).try_acquire_owned() else {
            cx.observer.failed(tool.spec.name, &Failure::BulkheadFull);
            return Err(Failure::BulkheadFull);
        };
        // What to answer when no provider serves the call (`Failure::joined`); none yet is the
        // deadline passing.
        let mut last: Option<Box<Failure>> = None;
        // The first refusal of a provider that does not own the request: the answer only when
        // no provider that owns it was tried.
        let mut refused: Option<Box<Failure>> = None;
        // The providers that failed this call so far, in chain order (the answer names them all).
        let mut failed: Vec<Failed> = Vec::new();
        for (index, route) in tool.routes.iter().enumerate() {
            let has_next = index + 1 < tool.routes.len();
            // An id issued by another provider (an Amadeus offer at Duffel): skip this one
            // without a permit or a socket; if no provider owns it, the refusal is the answer.
            if let Some(refusal) = route.upstream.refuse(request) {
                if refused.is_none() {
                    refused = Some(Box::new(Failure::Upstream {
                        provider: route.name.clone(),
                        error: refusal,
                        failed: Vec::new(),
                    }));
                }
                continue;
            }
            match run_route(tool, route, request, deadline, mode, has_next, cx).await {
                Ok(success) => return Ok(success),
                Err(failure) => {
                    failed.extend(failure.as_failed());
                    // A refusal the gateway made itself (a spent budget) is no provider's
                    // failure: not logged as one.
                    if let Failure::Upstream {
                        provider, error, ..
                    } = &failure
                        && !error.is_refused_by_gateway()
                    {
                        tracing::warn!(
                            tool = tool.spec.name,
                            provider = %provider,
                            call_id = cx.call.call_id,
                            client = cx.call.client_name(),
                            error = %error,
                            "upstream failed"
                        );
                    }
                    let stop = failure.stops_chain(tool.is_write());
                    if !stop
                        && let (Some(failed), Some(next)) =
                            (failure.provider(), tool.routes.get(index + 1))
                    {
                        cx.report(|| Step::FailingOver {
                            tool: tool.spec.name,
                            failed: failed.to_string(),
                            why: failure.error_type(),
                            next: next.name.clone(),
                        });
                    }
                    last = Some(Failure::joined(last, failure));
                    if stop {
                        break;
                    }
                }
            }
        }
        let last = last
            .or(refused)
            .map_or(Failure::DeadlinePassed, |last| *last)
            .after(failed);
        cx.observer.failed(tool.spec.name, &last);
        Err(last)
    }
}

/// Attempts one provider, retrying while the policy, the breaker and the deadline allow.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
)]
fn run_route<'a>(
    tool: &'a ServedTool,
    route: &'a Route,
    request: &'a ToolRequest,
    deadline: Instant,
    mode: CallMode,
    has_next: bool,
    cx: Context<'a>,
) -> impl Future<Output = Result<Success, Failure>> + Send + 'a {
    async move {
        let attempts = if tool.spec.idempotent {
            tool.config.retry.attempts().max(1)
        } else {
            1
        };
        let backoff = tool.config.retry.backoff();
        let caller = match mode {
            CallMode::Background => Caller::Background,
            CallMode::Interactive => Caller::Interactive {
                background_due: tool.background_due(),
            },
        };
        let upstream_failed = |error| Failure::Upstream {
            provider: route.name.clone(),
            error,
            failed: Vec::new(),
        };
        for attempt in 0..attempts {
            // Everything up to the retry's wait, in a block: the attempt's result and error are
            // not kept while it waits.
            let wait = {
                let now = Instant::now();
                let remaining = deadline.saturating_duration_since(now);
                if remaining.is_zero() {
                    return Err(Failure::DeadlinePassed);
                }
                let span = Observer::attempt_span(tool.spec.name, &route.name, attempt + 1);
                // A scheduled window acts as a forced-open breaker: no permit, no request. (No
                // window configured, the usual case: no wall clock read for it.)
                let wall = (!cx.maintenance.windows().is_empty()).then(clock::utc_now);
                if let Some(wall) = wall
                    && let Some(active) = cx.maintenance.active(tool.spec.name, &route.name, wall)
                {
                    cx.observer.under_maintenance(&span);
                    return Err(Failure::Maintenance {
                        held: vec![Held {
                            provider: route.name.clone(),
                            left: maintenance::left(wall, active.until),
                            until: active.until,
                            reason: active.reason,
                        }],
                    });
                }
                // The client over its share of the provider's window: not sent, no breaker told.
                // Admitted, the request counts as the client's there (given back below if the
                // breaker refuses it). A retry is counted, never refused: the call was let in,
                // and its answer is the provider's failure, not "not called".
                // Unless the breaker is open: then nobody's request goes, and its answer (the
                // provider is not answering, back in so long) is the true one, not "the tool
                // itself is not failing".
                let counted = match admit_client(tool, route, (now, attempt > 0), &span, &cx) {
                    Ok(counted) => counted,
                    Err(_) if rejects_everyone(route, now) => None,
                    Err(over) => return Err(Failure::ProviderShareFull { over: vec![*over] }),
                };
                let mut acquired = route.breaker.try_acquire_as(now, caller);
                // In a fleet, a half-open breaker whose probe lease this replica is about to take
                // (no other replica holds it): the call waits a moment for the lease and probes,
                // rather than be told the provider is not answering when nobody asked it.
                // (Asked only of a half-open refusal: an open breaker's fast-fail pays nothing.)
                if acquired
                    .as_ref()
                    .is_err_and(|rejected| rejected.state == BreakerState::HalfOpen)
                    && let Some(granted) = route.breaker.probe_lease_coming(now, caller)
                {
                    // Granted, or not within the wait (the fleet may have recovered meanwhile
                    // on another replica's probe, and this one followed): asked again either way.
                    let wait = LEASE_WAIT.min(deadline.saturating_duration_since(now));
                    let _ = tokio::time::timeout(wait, granted).await;
                    acquired = route.breaker.try_acquire_as(Instant::now(), caller);
                }
                let permit = match acquired {
                    Ok(permit) => permit,
                    Err(rejected) => {
                        if let Some(client) = counted {
                            cx.rate_limits.unsent(&route.name, client);
                        }
                        cx.observer
                            .rejected(&span, tool.spec.name, &route.name, &rejected);
                        return Err(Failure::Breaker {
                            provider: route.name.clone(),
                            rejected,
                            failed: Vec::new(),
                        });
                    }
                };
                Observer::admitted(&span, permit.kind());
                if mode == CallMode::Interactive {
                    cx.rate_limits.spent_interactive(&route.name);
                }
                let started = Instant::now();
                let timeout = route
                    .timeout
                    .map_or(tool.config.timeout, |cap| cap.min(tool.config.timeout))
                    .min(remaining);
                let result = attempt_once(route.upstream.as_ref(), request, timeout)
                    .instrument(span.clone())
                    .await;
                let elapsed = started.elapsed();
                let outcome = classify(&result, elapsed);
                cx.observer.attempted(
                    &span,
                    tool.spec.name,
                    &route.name,
                    &result,
                    outcome,
                    elapsed,
                );
                permit.record(outcome, Instant::now());
                let error = match result {
                    Ok(output) => {
                        return Ok(Success {
                            output,
                            provider: route.name.clone(),
                            breaker: route.breaker.state(Instant::now()),
                        });
                    }
                    Err(error) => error,
                };
                if error.is_quota_exhausted()
                    && let Some(wait) = error.kind.retry_after()
                {
                    route.quota_exhausted_until(Instant::now() + wait);
                }
                let last_attempt = attempt + 1 >= attempts;
                // With another provider in the chain, failing over beats retrying: a retry
                // waits out a backoff (or a whole second timeout) on a provider that just
                // failed. A background job never waits out a rate limit on a worker (sixteen
                // workers stuck in backoff serve nobody): the job goes back to the queue until
                // the reset, the worker takes other work, and the job system learns the limit
                // from the 429.
                let rate_limited_job = mode == CallMode::Background
                    && matches!(error.kind, ErrorKind::RateLimited { .. });
                if last_attempt || has_next || rate_limited_job || !is_retryable(&error.kind) {
                    return Err(upstream_failed(error));
                }
                // The provider's own wait wins over our backoff; a wait that does not fit in
                // the deadline means answering now, with that wait as the retry estimate.
                let wait = error
                    .kind
                    .retry_after()
                    .unwrap_or_else(|| backoff.full_jitter(attempt, cx.jitter.next_unit()));
                if Instant::now() + wait >= deadline {
                    return Err(upstream_failed(error));
                }
                tracing::debug!(
                    tool = tool.spec.name,
                    provider = %route.name,
                    call_id = cx.call.call_id,
                    client = cx.call.client_name(),
                    attempt = attempt + 1,
                    wait_ms = wait.as_millis() as u64,
                    error = %error,
                    "retrying"
                );
                cx.report(|| Step::Retrying {
                    tool: tool.spec.name,
                    provider: route.name.clone(),
                    why: error.kind.as_str(),
                    wait,
                });
                wait
            };
            tokio::time::sleep(wait).await;
        }
        Err(Failure::DeadlinePassed)
    }
}

/// One upstream attempt: the provider call bounded by `timeout`. Dropping the provider's future
/// at the timeout cancels its request.
async fn attempt_once(
    upstream: &dyn Upstream,
    request: &ToolRequest,
    timeout: Duration,
) -> Result<ToolOutput, UpstreamError> {
    match tokio::time::timeout(timeout, upstream.call(request, timeout)).await {
        Ok(res) => res,
        Err(_) => Err(UpstreamError::new(
            ErrorKind::Timeout,
            format!("no answer within {}", readable(timeout)),
        )),
    }
}

/// A timeout as a person reads it in a job's `last_error`: to the millisecond ("3s 904ms"),
/// not the deadline's leftover nanoseconds ("3s 904ms 422us 923ns").
fn readable(timeout: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_millis(timeout.as_millis() as u64))
}

//! The upstream part of a call: bulkhead → for each provider: breaker permit → attempt
//! (timeout within the deadline) → classify → record → retry or move on.
//!
//! # Why this order
//! - **Bulkhead first**: it bounds how many calls of one tool may be waiting on providers at
//!   all, so a slow provider can hold at most that many connections and tasks (seed 000: the
//!   pool exhausted by one slow API). It is taken once per call and held across retries and
//!   providers; a full bulkhead answers at once instead of queueing without bound.
//! - **Breaker per attempt**: every attempt, first or retry, asks its tool × provider breaker.
//!   An open breaker stops retries dead (no retry ever fires into it) and moves the call to the
//!   next provider of the chain.
//! - **Timeout inside the deadline**: each attempt gets `min(timeout, deadline left)`, so
//!   retries share the call's deadline instead of stacking timeouts.
//! - **Classify, then record, before deciding anything else**: the breaker learns about an
//!   attempt before the pipeline retries or falls back, so the next decision sees it.
//! - **Retry only idempotent tools**, with full-jitter backoff or the provider's own
//!   `Retry-After` when that fits in the deadline; a write is attempted once. A provider that
//!   fails is not retried when another one follows in the chain: failing over is a better use
//!   of the deadline than a backoff or a second timeout on a provider that just failed. The
//!   last provider of the chain gets the retries. A background job is not retried on a 429:
//!   it is requeued until the reset instead of holding a worker (seed 001).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::{Gateway, Route, ServedTool, classify, observe, retry};
use crate::breaker::{BreakerState, RejectReason, Rejected};
use crate::providers::{ErrorKind, Provider, UpstreamError};
use crate::tools::CallMode;
use crate::tools::{ToolOutput, ToolRequest};

/// A provider's good answer.
#[derive(Debug)]
pub(crate) struct Success {
    /// The normalized result.
    pub output: ToolOutput,
    /// The provider that answered.
    pub provider: String,
    /// Its breaker's state after recording the answer.
    pub breaker: BreakerState,
}

/// Why a call got no answer from any provider.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The tool's bulkhead was full: too many calls of this tool are already upstream.
    BulkheadFull,
    /// The provider's breaker refused the attempt without contacting it.
    Breaker {
        /// The provider.
        provider: String,
        /// The breaker's answer.
        rejected: Rejected,
    },
    /// The provider was asked and failed (after the retries allowed).
    Upstream {
        /// The provider.
        provider: String,
        /// What went wrong.
        error: UpstreamError,
    },
    /// The deadline passed before a provider could be asked.
    DeadlinePassed,
}

impl Failure {
    /// Whether the next provider of the chain should not be tried: a refusal the model can fix
    /// would be refused there too, and a write that reached a provider must not be repeated.
    fn stops_chain(&self, write: bool) -> bool {
        match self {
            Failure::Upstream { error, .. } => {
                write || matches!(error.kind, ErrorKind::Rejected { .. })
            }
            Failure::BulkheadFull | Failure::DeadlinePassed => true,
            Failure::Breaker { .. } => false,
        }
    }
}

impl Gateway {
    /// Runs a validated request upstream: the bulkhead, then the provider chain.
    pub(crate) async fn execute(
        &self,
        tool: &ServedTool,
        request: &ToolRequest,
        deadline: Instant,
        mode: CallMode,
    ) -> Result<Success, Failure> {
        let Ok(_slot) = Arc::clone(&tool.bulkhead).try_acquire_owned() else {
            self.note_failure(tool, &Failure::BulkheadFull);
            return Err(Failure::BulkheadFull);
        };
        let write = !tool.spec.idempotent;
        let mut last = Failure::DeadlinePassed;
        for (index, route) in tool.routes.iter().enumerate() {
            let has_next = index + 1 < tool.routes.len();
            // An id issued by another provider (an Amadeus offer at Duffel): skip this one
            // without a permit or a socket; if no provider owns it, the refusal is the answer.
            if let Some(refusal) = route.provider.refuse(request) {
                if matches!(last, Failure::DeadlinePassed) {
                    last = Failure::Upstream {
                        provider: route.name.clone(),
                        error: refusal,
                    };
                }
                continue;
            }
            match self
                .run_route(tool, route, request, deadline, mode, has_next)
                .await
            {
                Ok(success) => return Ok(success),
                Err(failure) => {
                    if let Failure::Upstream { provider, error } = &failure {
                        tracing::warn!(
                            tool = tool.spec.name,
                            provider = %provider,
                            error = %error,
                            "upstream failed"
                        );
                    }
                    let stop = failure.stops_chain(write);
                    last = failure;
                    if stop {
                        break;
                    }
                }
            }
        }
        self.note_failure(tool, &last);
        Err(last)
    }

    /// Attempts one provider, retrying while the policy, the breaker and the deadline allow.
    async fn run_route(
        &self,
        tool: &ServedTool,
        route: &Route,
        request: &ToolRequest,
        deadline: Instant,
        mode: CallMode,
        has_next: bool,
    ) -> Result<Success, Failure> {
        let attempts = if tool.spec.idempotent {
            tool.config.retry.attempts.max(1)
        } else {
            1
        };
        let backoff = retry::Backoff {
            base: tool.config.retry.backoff,
            max: tool.config.retry.backoff_max,
        };
        for attempt in 0..attempts {
            let now = Instant::now();
            let remaining = deadline.saturating_duration_since(now);
            if remaining.is_zero() {
                return Err(Failure::DeadlinePassed);
            }
            // Probes go to background jobs first: an interactive call does not spend a
            // half-open probe while jobs of this tool are waiting to spend it.
            if mode == CallMode::Interactive
                && tool
                    .background_due
                    .load(std::sync::atomic::Ordering::Relaxed)
                && route.breaker.state(now) == BreakerState::HalfOpen
            {
                return Err(Failure::Breaker {
                    provider: route.name.clone(),
                    rejected: Rejected {
                        retry_after: Duration::from_secs(5),
                        state: BreakerState::HalfOpen,
                        reason: RejectReason::HalfOpenFull,
                    },
                });
            }
            let span = observe::attempt_span(tool.spec.name, &route.name, attempt + 1);
            let permit = match route.breaker.try_acquire(now) {
                Ok(permit) => permit,
                Err(rejected) => {
                    self.note_rejected(&span, tool.spec.name, &route.name, &rejected);
                    return Err(Failure::Breaker {
                        provider: route.name.clone(),
                        rejected,
                    });
                }
            };
            observe::note_admitted(&span, permit.kind());
            let permit = CancelSafePermit(Some(permit));
            let started = Instant::now();
            let result = attempt_once(&route.provider, request, tool.config.timeout.min(remaining))
                .instrument(span.clone())
                .await;
            let outcome = classify::classify(&result, started.elapsed());
            self.note_attempt(
                &span,
                tool.spec.name,
                &route.name,
                &result,
                outcome,
                started.elapsed(),
            );
            permit.record(outcome);
            if let Err(e) = &result
                && e.is_quota_exhausted()
                && let Some(wait) = e.kind.retry_after()
            {
                *route
                    .quota_exhausted_until
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + wait);
            }
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
            let last_attempt = attempt + 1 >= attempts;
            // With another provider in the chain, failing over beats retrying: a retry waits
            // out a backoff (or a whole second timeout) on a provider that just failed.
            // A background job never waits out a rate limit on a worker (seed 001: sixteen
            // workers stuck in backoff): the job goes back to the queue until the reset, the
            // worker takes other work, and the job system learns the limit from the 429.
            let rate_limited_job = mode == CallMode::Background
                && matches!(error.kind, crate::providers::ErrorKind::RateLimited { .. });
            if last_attempt || has_next || rate_limited_job || !retry::is_retryable(&error.kind) {
                return Err(Failure::Upstream {
                    provider: route.name.clone(),
                    error,
                });
            }
            // The provider's own wait wins over our backoff; a wait that does not fit in the
            // deadline means answering now, with that wait as the retry estimate.
            let wait = error
                .kind
                .retry_after()
                .unwrap_or_else(|| backoff.delay(attempt, self.jitter.next_unit()));
            if Instant::now() + wait >= deadline {
                return Err(Failure::Upstream {
                    provider: route.name.clone(),
                    error,
                });
            }
            tracing::debug!(
                tool = tool.spec.name,
                provider = %route.name,
                attempt = attempt + 1,
                wait_ms = wait.as_millis() as u64,
                error = %error,
                "retrying"
            );
            tokio::time::sleep(wait).await;
        }
        Err(Failure::DeadlinePassed)
    }
}

/// A breaker permit held across an attempt that the caller may cancel.
///
/// When the caller goes away (an HTTP client disconnects, a batch is dropped), axum drops the
/// call's future mid-attempt. The breaker counts a permit dropped unrecorded as a failure, which
/// is right for a lost permit but wrong here: a cancelled attempt says nothing about the
/// provider, and a load generator closing its connections would otherwise trip healthy breakers.
/// This guard records such an attempt as `Ignored` (a half-open slot is given back too).
struct CancelSafePermit(Option<crate::breaker::Permit>);

impl CancelSafePermit {
    fn record(mut self, outcome: crate::breaker::Outcome) {
        if let Some(permit) = self.0.take() {
            permit.record(outcome, Instant::now());
        }
    }
}

impl Drop for CancelSafePermit {
    fn drop(&mut self) {
        if let Some(permit) = self.0.take() {
            permit.record(crate::breaker::Outcome::Ignored, Instant::now());
        }
    }
}

/// One upstream attempt: the provider call bounded by `timeout`. Dropping the provider's future
/// at the timeout cancels its request.
async fn attempt_once(
    provider: &Provider,
    request: &ToolRequest,
    timeout: Duration,
) -> Result<ToolOutput, UpstreamError> {
    match tokio::time::timeout(timeout, provider.call(request, timeout)).await {
        Ok(res) => res,
        Err(_) => Err(UpstreamError::new(
            ErrorKind::Timeout,
            format!("no answer within {}", humantime::format_duration(timeout)),
        )),
    }
}

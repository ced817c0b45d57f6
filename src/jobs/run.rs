//! Running one claimed job: through the gateway's pipeline, then [`decide`] what the outcome
//! means for the job (done, later, never), stored as one [`Transition`].
//!
//! `decide` is pure (the clock reading and the jitter draw are arguments), so its whole table is
//! tested: every outcome, the attempt and age limits, and the requeue delay.
//!
//! Each run is a `run_job {tool}` span (kind consumer: `faregate.job.id`, `gen_ai.tool.name`,
//! `faregate.attempt`, `faregate.job.status` after the run), the parent of the run's
//! `upstream_attempt` spans and so of the provider requests' `traceparent`. A run starts a trace
//! of its own and links to the trace context the job was submitted under, when it has one.
//! A job's end (succeeded or dead) is counted with its time from submission
//! (`faregate_job_latency_seconds`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::Instrument as _;
use tracing::field::Empty;

use super::dispatch::answer;
use super::land::Unstored;
use super::policy::RequeuePolicy;
use super::seen::Seen;
use super::store::{Job, Store, Transition};
use crate::call::{CallRequest, Envelope, Gateway, Verdict};
use crate::clock;
use crate::config::JobsConfig;
use crate::policy::SplitMix;
use crate::quota::Quotas;
use crate::telemetry::Telemetry;
use end::Ended;

mod end;

/// What an outcome of `job`'s run at `now_ms` means for it.
///
/// - done → `Succeeded` with the envelope (naming the job);
/// - never (a refusal the model must fix, a write whose outcome is unknown) → `Dead`;
/// - later → `Retry` after the [`RequeuePolicy`] delay, unless the job has now used up
///   `max_attempts` (counting only attempts that reached a provider) or is older than `max_age`,
///   which makes it `Dead` with a reason saying so.
///
/// `jitter` is a uniform draw in `[0, 1)` for the delay's jitter.
pub(super) fn decide(
    outcome: Verdict,
    job: &Job,
    config: &JobsConfig,
    policy: &RequeuePolicy,
    now_ms: i64,
    jitter: f64,
) -> Transition {
    match outcome {
        Verdict::Done(envelope) => Transition::Succeeded {
            result: stored(envelope, job),
        },
        Verdict::Never {
            envelope,
            error,
            attempted,
        } => Transition::Dead {
            error,
            result: envelope.map(|e| stored(e, job)),
            attempted,
        },
        Verdict::Later {
            anchor,
            error,
            attempted,
            ..
        } => {
            let attempts = job.attempts + u32::from(attempted);
            let age = Duration::from_millis(u64::try_from(now_ms - job.created_at_ms).unwrap_or(0));
            let gave_up = if attempts >= config.max_attempts {
                Some(format!(
                    "gave up after {attempts} attempts; last error: {error}"
                ))
            } else if age >= config.max_age {
                Some(format!(
                    "gave up after {} in the queue; last error: {error}",
                    humantime::format_duration(Duration::from_secs(age.as_secs()))
                ))
            } else {
                None
            };
            match gave_up {
                Some(why) => Transition::Dead {
                    error: why,
                    result: None,
                    attempted,
                },
                None => Transition::Retry {
                    next_attempt_at_ms: clock::ms_after(
                        now_ms,
                        match (attempted, anchor) {
                            // Refused by a breaker before reaching a provider: the breaker
                            // knows when it admits again (its half-open instant, its next probe
                            // slot), so the job is due exactly then, without growth or jitter.
                            // Due jobs make an interactive caller leave the probes to them.
                            (false, Some(breaker_says)) => breaker_says,
                            _ => policy.delay(attempts, anchor, jitter),
                        },
                    ),
                    error,
                    attempted,
                },
            }
        }
    }
}

/// The envelope as stored (and sent in the callback): its own serialization, naming the job.
fn stored(mut envelope: Envelope, job: &Job) -> Value {
    envelope.job_id = Some(job.id.clone());
    // An envelope is strings, numbers and JSON values: it always serializes.
    serde_json::to_value(&envelope).unwrap_or(Value::Null)
}

/// Runs claimed jobs and stores their ends.
#[derive(Debug)]
pub(super) struct Runner {
    pub(super) store: Store,
    pub(super) gateway: Arc<Gateway>,
    pub(super) config: JobsConfig,
    pub(super) policy: RequeuePolicy,
    pub(super) jitter: SplitMix,
    /// The providers' allowances, taught by what each job's provider answered.
    pub(super) quotas: Arc<Quotas>,
    /// Results waiting for the store (the dispatcher claims nothing meanwhile).
    pub(super) unstored: Unstored,
    /// What this replica saw of its jobs: running from the claim, and its end at once, so the
    /// job API has the result while it waits to land.
    pub(super) seen: Arc<Seen>,
    /// Where a job's end is counted.
    pub(super) telemetry: Arc<Telemetry>,
    /// Wakes the callbacks' sender ([`super::callbacks::Sender`]) when a job ends with one.
    pub(super) callbacks_due: Arc<Notify>,
}

impl Runner {
    /// Runs `job` (claimed under `lease` at `claimed_at`, under `provider`'s pacer) once and
    /// stores what came of it, naming the lease.
    pub(super) async fn run(&self, job: Job, lease: &str, claimed_at: Instant, provider: &str) {
        self.seen.note(&job, clock::epoch_ms());
        let span = run_span(&job);
        let outcome = self
            .gateway
            .run_background(CallRequest {
                tool: job.tool.clone(),
                arguments: job.arguments.clone(),
                // A call sent without an id was answered `queued` under its job's id: its
                // result carries the same one.
                call_id: Some(job.call_id.clone().unwrap_or_else(|| job.id.clone())),
                idempotency_key: job.idempotency_key.clone(),
                deadline: None,
                client: job.client.clone(),
                trace: None,
            })
            .instrument(span.clone())
            .await;
        self.quotas
            .observe(provider, answer(&outcome), claimed_at)
            .await;
        let now = clock::epoch_ms();
        let transition = decide(
            outcome,
            &job,
            &self.config,
            &self.policy,
            now,
            self.jitter.next_unit(),
        );
        if let Transition::Retry {
            next_attempt_at_ms,
            error,
            ..
        } = &transition
        {
            tracing::debug!(job = %job.id, tool = %job.tool, delay_ms = next_attempt_at_ms - now, %error, "job requeued");
        }
        let status = transition.status();
        span.record("faregate.job.status", status.as_str());
        let mut ended = job.clone();
        ended.apply(transition.clone(), now);
        self.seen.note(&ended, now);
        // The provider was asked: the transition must land, or the job would run again.
        let ended = end::store_end(&self.store, &self.unstored, &job, lease, &transition, now);
        if ended.await == Ended::Stored && status.is_final() {
            if job.callback_url.is_some() {
                self.callbacks_due.notify_one();
            }
            let waited = u64::try_from(now - job.created_at_ms).unwrap_or(0);
            self.telemetry.metrics().record_job_finished(
                &job.tool,
                status.as_str(),
                Duration::from_millis(waited),
            );
        }
    }
}

/// The span of one run of `job`, linked to the trace it was submitted under.
fn run_span(job: &Job) -> tracing::Span {
    let span = tracing::info_span!(
        "run_job",
        otel.name = %format!("run_job {}", job.tool),
        otel.kind = "consumer",
        faregate.job.id = %job.id,
        gen_ai.tool.name = %job.tool,
        // An `i64`: other integer types are exported as text (`http/edge/trace.rs`).
        faregate.attempt = i64::from(job.attempts) + 1,
        faregate.job.status = Empty,
        // A watch's run names its watch, so its traces can be found from the watch.
        faregate.watch.id = job.watch_id(),
    );
    if let Some(submitted) = &job.trace {
        submitted.link(&span);
    }
    span
}

#[cfg(test)]
mod tests;

//! The job system: accepting background calls, the dispatcher and its workers, callbacks.
//!
//! One dispatcher per process claims due jobs (never more than there are free workers, never
//! for a tool whose breakers are all open) and runs each on its own task; a second loop sends
//! callbacks. Both stop on the shutdown token; leases still held are handed back so another
//! replica (or the next start) picks the jobs up at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use serde_json::Value;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::callback;
use super::pace::Pacer;
use super::policy::RequeuePolicy;
use super::{Job, JobStatus, JobStore, NewJob, Store, StoreError, Transition, now_ms};
use crate::call::retry::Jitter;
use crate::call::{BackgroundOutcome, CheckError, Gateway};
use crate::config::JobsConfig;
use crate::providers::Secret;
use crate::telemetry::CallbackOutcome;

/// How often the dispatcher looks for due jobs when nothing wakes it.
const POLL: Duration = Duration::from_millis(250);
/// Callback deliveries before giving up (the result stays in the job).
const CALLBACK_ATTEMPTS: u32 = 8;
/// Queue figures are published every this many polls (about every 5 s).
const QUEUE_METRICS_EVERY: u32 = 20;

/// Why a background call was not accepted.
#[derive(Debug)]
pub enum SubmitError {
    /// The arguments are wrong (the text names every field).
    Invalid(String),
    /// No such tool.
    UnknownTool,
    /// The callback URL is not allowed, or callbacks are not configured.
    Callback(String),
    /// The store failed.
    Store(StoreError),
}

/// Everything background mode needs, shared by the HTTP edge and the workers.
#[derive(Debug)]
pub struct JobSystem {
    store: Store,
    gateway: Arc<Gateway>,
    config: JobsConfig,
    allowlist: Vec<Url>,
    callback_secret: Option<Secret>,
    /// The callback client ([`callback::client`]); `None` if it could not be built, and then
    /// callbacks fail (and are retried) rather than go out without the SSRF guard.
    http: Option<reqwest::Client>,
    /// This process's lease owner name.
    owner: String,
    wake: Notify,
    policy: RequeuePolicy,
    jitter: Jitter,
    /// Per tool: the rate limit learned from its providers' 429s.
    pacers: Mutex<HashMap<String, Pacer>>,
}

impl JobSystem {
    /// A job system over `store`. Callbacks are refused unless a secret is configured.
    pub fn new(
        store: Store,
        gateway: Arc<Gateway>,
        config: JobsConfig,
        allowlist: Vec<Url>,
        callback_secret: Option<Secret>,
    ) -> Self {
        let http = callback::client()
            .map_err(|e| tracing::error!(error = %e, "cannot build the callback HTTP client; callbacks will fail"))
            .ok();
        let owner = format!("{}-{}", std::process::id(), uuid::Uuid::now_v7().simple());
        JobSystem {
            store,
            gateway,
            config,
            allowlist,
            callback_secret,
            http,
            owner,
            wake: Notify::new(),
            policy: RequeuePolicy::default(),
            jitter: Jitter::new(now_ms() as u64),
            pacers: Mutex::new(HashMap::new()),
        }
    }

    /// The store (for the job API and metrics).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Validates and stores a background call. With an idempotency key already used for the
    /// tool, answers the existing job (`false`) instead of a new one.
    pub async fn submit(
        &self,
        tool: &str,
        arguments: Value,
        call_id: Option<String>,
        idempotency_key: Option<String>,
        callback_url: Option<String>,
    ) -> Result<(Job, bool), SubmitError> {
        match self
            .gateway
            .check_arguments(tool, &arguments, idempotency_key.as_deref())
        {
            Ok(()) => {}
            Err(CheckError::UnknownTool) => return Err(SubmitError::UnknownTool),
            Err(CheckError::Invalid(text)) => return Err(SubmitError::Invalid(text)),
        }
        if let Some(url) = &callback_url {
            let parsed = Url::parse(url)
                .map_err(|e| SubmitError::Callback(format!("callback_url is not a URL: {e}")))?;
            callback::check_target(&parsed, &self.allowlist)
                .await
                .map_err(SubmitError::Callback)?;
            if self.callback_secret.is_none() {
                return Err(SubmitError::Callback(
                    "callbacks need a signing secret: set the variable named by auth.callback_secret_env on the gateway".into(),
                ));
            }
        }
        let res = self
            .store
            .enqueue(
                NewJob {
                    tool: tool.to_string(),
                    arguments,
                    call_id,
                    idempotency_key,
                    callback_url,
                },
                now_ms(),
            )
            .await
            .map_err(SubmitError::Store)?;
        self.wake.notify_one();
        Ok(res)
    }

    /// Runs the dispatcher, workers and callback sender until `shutdown`; then lets running
    /// jobs finish within `grace`, abandons the rest, and hands back every lease this process
    /// holds, so no job is lost (nor counted as an attempt) by a shutdown.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken, grace: Duration) {
        let workers = Arc::new(Semaphore::new(self.config.workers as usize));
        let mut tasks = tokio::task::JoinSet::new();
        let callbacks = tokio::spawn(Arc::clone(&self).send_callbacks(shutdown.clone()));
        let mut polls: u32 = 0;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(POLL) => {},
            }
            while tasks.try_join_next().is_some() {}
            if let Err(e) = self.dispatch(&workers, &mut tasks).await {
                tracing::warn!(error = %e, "job dispatch failed; retrying");
            }
            polls = polls.wrapping_add(1);
            if polls % QUEUE_METRICS_EVERY == 1 {
                self.publish_queue_metrics().await;
            }
        }
        // Let running jobs finish within the grace period, then return what is still leased.
        let finished =
            tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
        if finished.is_err() {
            tracing::warn!(
                abandoned = tasks.len(),
                "background jobs still running after the shutdown grace period; their leases go back to the queue"
            );
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        callbacks.abort();
        match self.store.release(&self.owner, now_ms()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(released = n, "returned job leases to the queue"),
            Err(e) => tracing::warn!(error = %e, "could not return job leases; they expire"),
        }
    }

    /// Queue depth by tool and state and the oldest due job's age, for `/metrics`.
    async fn publish_queue_metrics(&self) {
        let stats = match self.store.stats(now_ms()).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "could not read queue figures");
                return;
            }
        };
        let metrics = self.gateway.telemetry().metrics();
        for tool in self.gateway.tools() {
            let name = tool.spec.name;
            for status in JobStatus::ALL {
                let n = stats
                    .depth
                    .iter()
                    .find(|(t, s, _)| t == name && *s == status)
                    .map_or(0, |(_, _, n)| *n);
                metrics.set_queue_depth(name, status.as_str(), n);
            }
            let age = stats
                .oldest_due_age_ms
                .iter()
                .find(|(t, _)| t == name)
                .map_or(0, |(_, ms)| (*ms).max(0) as u64);
            metrics.set_oldest_due_job_age(name, Duration::from_millis(age));
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        workers: &Arc<Semaphore>,
        tasks: &mut tokio::task::JoinSet<()>,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        let due: Vec<String> = self.store.due_tools(now_ms()).await?;
        let names: Vec<String> = self
            .gateway
            .tools()
            .iter()
            .map(|t| t.spec.name.to_string())
            .collect();
        let mut skip = Vec::new();
        for tool in self.gateway.tools() {
            tool.set_background_due(due.iter().any(|t| t == tool.spec.name));
            if tool.all_open(now) {
                skip.push(tool.spec.name.to_string());
            }
        }
        // Tools whose provider limit is known are claimed on their own, at most what their
        // pacer allows now; the rest together, as many as there are free workers.
        let mut paced = Vec::new();
        {
            let mut pacers = self.pacers();
            for name in &names {
                if skip.contains(name) {
                    continue;
                }
                if let Some(allowed) = pacers.get_mut(name).and_then(|p| p.allowance(now)) {
                    skip.push(name.clone());
                    if allowed > 0 && due.contains(name) {
                        paced.push((name.clone(), allowed));
                    }
                }
            }
        }
        for (name, allowed) in paced {
            let others: Vec<String> = names.iter().filter(|n| **n != name).cloned().collect();
            self.claim_and_run(workers, tasks, allowed, &others).await?;
        }
        self.claim_and_run(workers, tasks, u32::MAX, &skip).await
    }

    /// Claims up to `max` due jobs (never more than there are free workers) of the tools not in
    /// `skip`, and runs each on its own task.
    async fn claim_and_run(
        self: &Arc<Self>,
        workers: &Arc<Semaphore>,
        tasks: &mut tokio::task::JoinSet<()>,
        max: u32,
        skip: &[String],
    ) -> Result<(), StoreError> {
        let free = (workers.available_permits() as u32).min(max);
        if free == 0 {
            return Ok(());
        }
        let lease_ms = self.lease().as_millis() as i64;
        let jobs = self
            .store
            .claim(&self.owner, now_ms(), lease_ms, free, skip)
            .await?;
        let claimed_at = Instant::now();
        {
            let mut pacers = self.pacers();
            for job in &jobs {
                pacers
                    .entry(job.tool.clone())
                    .or_default()
                    .claimed(1, claimed_at);
            }
        }
        for job in jobs {
            let Ok(permit) = Arc::clone(workers).try_acquire_owned() else {
                break;
            };
            let this = Arc::clone(self);
            tasks.spawn(async move {
                this.run_job(job, claimed_at).await;
                drop(permit);
            });
        }
        Ok(())
    }

    /// The pacers (a poisoned lock only means a panic elsewhere; the map is still usable).
    fn pacers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pacer>> {
        self.pacers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lease: the longest tool deadline plus a margin.
    fn lease(&self) -> Duration {
        self.gateway
            .tools()
            .iter()
            .map(|t| t.config.deadline)
            .max()
            .unwrap_or(Duration::from_secs(30))
            + self.config.lease_margin
    }

    async fn run_job(&self, job: Job, claimed_at: Instant) {
        let outcome = self
            .gateway
            .run_background(
                &job.tool,
                job.arguments.clone(),
                job.call_id.clone(),
                job.idempotency_key.clone(),
            )
            .await;
        if let Some(pacer) = self.pacers().get_mut(&job.tool) {
            match &outcome {
                BackgroundOutcome::Succeeded(_) => pacer.succeeded(claimed_at),
                BackgroundOutcome::Retry {
                    rate_limited: Some(hit),
                    ..
                } => {
                    pacer.rate_limited(Instant::now(), hit.retry_after);
                    if let Some(rate) = pacer.rate() {
                        tracing::info!(tool = %job.tool, jobs_per_s = rate, "pacing background jobs to the provider's rate limit");
                    }
                }
                _ => {}
            }
        }
        let now = now_ms();
        let transition = match outcome {
            BackgroundOutcome::Succeeded(mut envelope) => {
                envelope.job_id = Some(job.id.clone());
                Transition::Succeeded {
                    result: serde_json::to_value(&envelope).unwrap_or(Value::Null),
                }
            }
            BackgroundOutcome::Failed {
                envelope,
                error,
                attempted,
            } => Transition::Dead {
                error,
                result: envelope.map(|mut e| {
                    e.job_id = Some(job.id.clone());
                    serde_json::to_value(&e).unwrap_or(Value::Null)
                }),
                attempted,
            },
            BackgroundOutcome::Retry {
                anchor,
                error,
                attempted,
                ..
            } => {
                let attempts = job.attempts + u32::from(attempted);
                let age = Duration::from_millis((now - job.created_at_ms).max(0) as u64);
                if attempts >= self.config.max_attempts || age >= self.config.max_age {
                    let why = if attempts >= self.config.max_attempts {
                        format!("gave up after {attempts} attempts; last error: {error}")
                    } else {
                        format!(
                            "gave up after {} in the queue; last error: {error}",
                            humantime::format_duration(Duration::from_secs(age.as_secs()))
                        )
                    };
                    Transition::Dead {
                        error: why,
                        result: None,
                        attempted,
                    }
                } else {
                    let delay = self.policy.delay(attempts, anchor, self.jitter.next_unit());
                    tracing::debug!(job = %job.id, tool = %job.tool, delay_ms = delay.as_millis() as u64, %error, "job requeued");
                    Transition::Retry {
                        next_attempt_at_ms: now + delay.as_millis() as i64,
                        error,
                        attempted,
                    }
                }
            }
        };
        let res = self
            .store
            .finish(&job.id, &self.owner, transition, now)
            .await;
        match res {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(job = %job.id, "job lease was lost before its result was stored; another worker owns it now")
            }
            Err(e) => {
                tracing::warn!(job = %job.id, error = %e, "could not store a job's outcome; its lease will expire and it runs again")
            }
        }
    }

    async fn send_callbacks(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {},
            }
            let due = match self.store.claim_callbacks(now_ms(), 30_000, 16).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read due callbacks");
                    continue;
                }
            };
            for job in due {
                let sent = self.deliver(&job).await;
                let next = (!sent && job.callback_attempts + 1 < CALLBACK_ATTEMPTS)
                    .then(|| now_ms() + 1000 * (1i64 << job.callback_attempts.min(10)));
                let metrics = self.gateway.telemetry().metrics();
                if sent {
                    metrics.record_callback(CallbackOutcome::Sent);
                } else if next.is_none() {
                    metrics.record_callback(CallbackOutcome::Failed);
                }
                if let Err(e) = self
                    .store
                    .callback_result(&job.id, sent, next, now_ms())
                    .await
                {
                    tracing::warn!(job = %job.id, error = %e, "could not record a callback");
                }
            }
        }
    }

    /// POSTs the job's final envelope, signed; true on a 2xx.
    async fn deliver(&self, job: &Job) -> bool {
        let (Some(url), Some(secret), Some(http)) =
            (&job.callback_url, &self.callback_secret, &self.http)
        else {
            return false;
        };
        // Checked again at delivery: the allowlist may have changed since the job was stored
        // (another replica, a restart). Host names are re-resolved by the client's guarded
        // resolver, which never connects to a private address.
        let parsed = match Url::parse(url) {
            Ok(u) if callback::allowed(&u, &self.allowlist) => u,
            _ => {
                tracing::warn!(job = %job.id, "callback URL is no longer on the allowlist; not sent");
                return false;
            }
        };
        let body = serde_json::to_vec(&callback_body(job)).unwrap_or_default();
        let t = now_ms() / 1000;
        let signature = callback::sign(secret.expose().as_bytes(), t, &body);
        match http
            .post(parsed)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(callback::SIGNATURE_HEADER, signature)
            .body(body)
            .send()
            .await
        {
            Ok(res) if res.status().is_success() => true,
            Ok(res) => {
                tracing::warn!(job = %job.id, status = res.status().as_u16(), "callback refused");
                false
            }
            Err(e) => {
                tracing::warn!(job = %job.id, error = %e, "callback failed");
                false
            }
        }
    }
}

/// The callback body: the job's final envelope, or for a job that died without one, an
/// envelope-shaped error so receivers parse one shape.
pub(crate) fn callback_body(job: &Job) -> Value {
    job.result.clone().unwrap_or_else(|| {
        serde_json::json!({
            "call_id": job.call_id,
            "tool": job.tool,
            "status": "unavailable",
            "content": job.last_error.clone().unwrap_or_default(),
            "data": null,
            "stale_age_s": null,
            "retry_after_s": null,
            "breaker": null,
            "job_id": job.id,
            "provider": null,
        })
    })
}

//! [`WatchSystem`]: what the watch API asks (create with its limits, read, pause, resume,
//! delete), and the loop that turns due instants into jobs and ended jobs into results and
//! notices.
//!
//! A run is an ordinary background job, submitted through the job system with the idempotency
//! key `watch:<id>:<instant>`: the job store hands every replica that submits the same instant
//! the same job, so a fleet runs each instant once, and the job gets the queue's leases, silent
//! requeue while a breaker is open and pacing under rate limits like any background call. Only
//! when the job ends does the watch move on; while a provider is down the watch waits, without
//! a sound, and resumes its grid once the job succeeds.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::condition::{self, Condition};
use super::retention::{DEFAULT_RETENTION, Sweeper};
use super::schedule::{self, End, Schedule};
use super::store::{DueCallback, Notice, RunEnd, Watch, WatchState, WatchStore};
use crate::call::{CheckError, Gateway};
use crate::clients::ClientName;
use crate::clock;
use crate::config::WatchesConfig;
use crate::jobs::callbacks::notice::{Delivery, NoticeSender};
use crate::jobs::{
    JobStatus, Jobs, NewJob, StoreError, SubmitError, WATCH_RUN_KEY_PREFIX, rfc3339,
};
use crate::store::pace::{Found, Pace};
use crate::texts::span;
use crate::texts::watches as texts;

/// How often the loop looks for due instants and ended runs: every 250 ms while a run is under
/// way or an instant or notice is due, else when the next falls due, at most 2 s later
/// (`store::pace`); a watch created or resumed on this replica wakes it at once.
const PACE: Pace = Pace::busy_every(Duration::from_millis(250));
/// Watches handled per look.
const BATCH: u32 = 64;
/// Notice callbacks started per look.
const CALLBACKS: u32 = 16;

/// A watch to create, as the API read it (not yet checked).
#[derive(Debug, Clone)]
pub struct NewWatch {
    /// Whose it is.
    pub client: ClientName,
    /// The tool to call.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Between two runs.
    pub every: Duration,
    /// The condition as sent (absent = any change).
    pub condition: Option<Value>,
    /// How it ends.
    pub end: End,
    /// Where notices are posted, signed (allowlisted, as a job's callback).
    pub callback_url: Option<String>,
}

/// Why a watch was not created or changed; each text names the fix.
#[derive(Debug)]
pub enum WatchError {
    /// The request does not describe a watch that can run (422).
    Invalid(String),
    /// The client holds as many active watches as it may (409).
    Full(String),
    /// No such watch (404).
    NotFound,
    /// The watch is not in a state that allows it (409).
    Conflict(String),
    /// The store failed (503).
    Store(StoreError),
}

/// The longest interval between a watch's runs. Beyond it a watch reports news too late to act
/// on, and an interval of centuries (`"99999999999999d"`) would overflow its next run's time.
const MAX_INTERVAL: Duration = Duration::from_secs(30 * 86_400);

impl From<StoreError> for WatchError {
    fn from(e: StoreError) -> Self {
        WatchError::Store(e)
    }
}

/// Watches over the job system.
#[derive(Debug)]
pub struct WatchSystem {
    store: WatchStore,
    jobs: Jobs,
    gateway: Arc<Gateway>,
    config: WatchesConfig,
    notices: Arc<NoticeSender>,
    /// How long an ended watch is kept (`[store] job_retention`; see `retention.rs`).
    retention: Duration,
    /// Poked when a watch is created or resumed here, so its first run is not left to the pace.
    wake: Notify,
}

impl WatchSystem {
    /// Watches kept in `store`, run as jobs of `jobs`.
    pub fn new(
        store: WatchStore,
        jobs: Jobs,
        gateway: Arc<Gateway>,
        config: WatchesConfig,
        notices: NoticeSender,
    ) -> Self {
        WatchSystem {
            store,
            jobs,
            gateway,
            config,
            notices: Arc::new(notices),
            retention: DEFAULT_RETENTION,
            wake: Notify::new(),
        }
    }

    /// Keeps ended watches (and their notices) for `retention` after they ended.
    pub fn keep_ended_for(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The store (for the API's reads).
    pub fn store(&self) -> &WatchStore {
        &self.store
    }

    /// Checks `new` (tool, arguments, interval, condition, end) and stores it, due at once, when
    /// its client holds fewer than `[watches] max_active_per_client` active watches: the first
    /// run is the baseline later runs are compared with. The cap is counted in the same step
    /// as the insert ([`WatchStore::insert`]), so concurrent creates never pass it.
    pub async fn create(&self, new: NewWatch) -> Result<Watch, WatchError> {
        let tool = self
            .gateway
            .tool(&new.tool)
            .ok_or_else(|| WatchError::Invalid(texts::not_served(&new.tool, &self.watchable())))?;
        if tool.is_write() {
            return Err(WatchError::Invalid(texts::write_tool(
                &new.tool,
                &self.watchable(),
            )));
        }
        let minimum = tool
            .config
            .watch_min_interval
            .unwrap_or(self.config.min_interval);
        if new.every < minimum {
            return Err(WatchError::Invalid(texts::under_minimum(
                &span(new.every),
                &new.tool,
                &span(minimum),
            )));
        }
        if new.every > MAX_INTERVAL {
            return Err(WatchError::Invalid(texts::over_maximum(
                &span(new.every),
                &span(MAX_INTERVAL),
            )));
        }
        if new.end.departure && new.tool != condition::FLIGHT_STATUS {
            return Err(WatchError::Invalid(texts::departure_needs_a_flight(
                &new.tool,
                condition::FLIGHT_STATUS,
            )));
        }
        let condition =
            Condition::parse(&new.tool, new.condition.as_ref()).map_err(WatchError::Invalid)?;
        match self
            .gateway
            .check_arguments(&new.tool, &new.arguments, None)
        {
            Ok(()) => {}
            Err(CheckError::UnknownTool) => {
                return Err(WatchError::Invalid(texts::not_served(
                    &new.tool,
                    &self.watchable(),
                )));
            }
            Err(CheckError::Invalid(text)) => return Err(WatchError::Invalid(text)),
        }
        if let Some(url) = &new.callback_url {
            self.notices
                .check(&new.client, url)
                .await
                .map_err(WatchError::Invalid)?;
        }
        let now = clock::epoch_ms();
        let watch = Watch {
            id: uuid::Uuid::now_v7().to_string(),
            client: new.client,
            tool: new.tool,
            arguments: new.arguments,
            condition,
            schedule: Schedule {
                interval: new.every,
                end: new.end,
            },
            callback_url: new.callback_url,
            state: WatchState::Active,
            runs: 0,
            next_run_at_ms: now,
            job: None,
            last_result: None,
            last_run_at_ms: None,
            last_error: None,
            departure_at_ms: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        let max = self.config.max_active_per_client;
        if !self.store.insert(&watch, max).await? {
            return Err(WatchError::Full(texts::full(max)));
        }
        self.wake.notify_one();
        Ok(watch)
    }

    /// The read tools a watch may call, in catalog order.
    fn watchable(&self) -> Vec<&'static str> {
        self.gateway
            .tools()
            .iter()
            .filter(|t| !t.is_write())
            .map(|t| t.spec.name)
            .collect()
    }

    /// Pauses watch `id` of `client` (any client's for `None`, the admin).
    pub async fn pause(&self, id: &str, client: Option<&ClientName>) -> Result<Watch, WatchError> {
        let watch = self.own(id, client).await?;
        if !self.store.pause(id, clock::epoch_ms()).await? {
            return Err(WatchError::Conflict(texts::not_active(
                id,
                watch.state.as_str(),
            )));
        }
        self.own(id, client).await
    }

    /// Resumes watch `id` at its next instant on the grid that is not in the past, under the
    /// client's cap (counted in the same step as the change, as a create's is).
    pub async fn resume(&self, id: &str, client: Option<&ClientName>) -> Result<Watch, WatchError> {
        let watch = self.own(id, client).await?;
        if watch.state != WatchState::Paused {
            return Err(WatchError::Conflict(texts::not_paused(
                id,
                watch.state.as_str(),
            )));
        }
        let max = self.config.max_active_per_client;
        let now = clock::epoch_ms();
        let next = schedule::catch_up(watch.next_run_at_ms, now, watch.schedule.interval);
        if !self.store.resume(id, &watch.client, next, now, max).await? {
            // Nothing changed: a watch still paused was refused by the cap; any other was
            // changed (or deleted) meanwhile.
            return Err(match self.own(id, client).await {
                Ok(w) if w.state == WatchState::Paused => WatchError::Full(texts::full(max)),
                Ok(_) | Err(WatchError::NotFound) => {
                    WatchError::Conflict(texts::changed_meanwhile(id))
                }
                Err(e) => e,
            });
        }
        self.wake.notify_one();
        self.own(id, client).await
    }

    /// Deletes watch `id` and its notices (a run under way still ends, unrecorded).
    pub async fn delete(&self, id: &str, client: Option<&ClientName>) -> Result<(), WatchError> {
        let watch = self.own(id, client).await?;
        if !self.store.delete(id).await? {
            return Err(WatchError::NotFound);
        }
        // Its run waiting on a provider would go on asking it for a watch that is gone (one
        // already running ends as it is, and its end finds no watch to record).
        if let Some((job_id, _)) = &watch.job
            && let Err(e) = self.jobs.cancel(job_id, &watch.client).await
        {
            tracing::warn!(watch = %id, job = %job_id, error = %e, "watch deleted, its waiting run not cancelled");
        }
        Ok(())
    }

    /// Watch `id` when `client` may see it (every watch for `None`); another client's reads as
    /// none at all.
    pub async fn own(&self, id: &str, client: Option<&ClientName>) -> Result<Watch, WatchError> {
        match self.store.get(id).await? {
            Some(w) if client.is_none_or(|c| *c == w.client) => Ok(w),
            _ => Err(WatchError::NotFound),
        }
    }

    /// Starts due runs and records ended ones as [`PACE`] says until `shutdown`, and deletes
    /// ended watches past their retention about once a minute.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut sweeper = Sweeper::new(self.retention);
        let mut wait = PACE.busy;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(wait) => {},
            }
            // A pass the store keeps waiting (a database out of reach) does not hold a shutdown:
            // cut short, it is taken up again by the next pass, on any replica.
            let passed = tokio::select! {
                _ = shutdown.cancelled() => return,
                passed = self.pass() => passed,
            };
            let found = passed.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "watches: pass failed; retrying");
                Found::Work
            });
            wait = PACE.wait(found, clock::epoch_ms());
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = sweeper.tick(&self.store) => {},
            }
        }
    }

    /// One look: record the runs whose jobs ended, start the runs that are due, and start
    /// delivering the notices' callbacks that are due (each on its own task). What it found:
    /// work while a run is under way or anything was due, else when the next instant or
    /// callback falls due.
    pub async fn pass(&self) -> Result<Found, StoreError> {
        let running = self.store.running(BATCH).await?;
        for watch in &running {
            self.check_run(watch).await?;
        }
        let due = self.store.due(clock::epoch_ms(), BATCH).await?;
        for watch in &due {
            self.start_run(watch).await?;
        }
        let callbacks = self.store.callbacks().await?;
        let sent = self.notices.send_due(&callbacks, CALLBACKS, notice).await?;
        if !running.is_empty() || !due.is_empty() || sent > 0 {
            return Ok(Found::Work);
        }
        let next_run = self.store.next_run_due().await?;
        Ok(Found::of(false, [next_run, callbacks.next_due().await?]))
    }

    /// Submits the job of `watch`'s due instant (the same job on every replica) and records it.
    async fn start_run(&self, watch: &Watch) -> Result<(), StoreError> {
        let instant = watch.next_run_at_ms;
        // A reload may have narrowed the client's scope, or taken its key away, since the
        // watch was made (`Gateway::may_call`): the instant passes without a run. Not the
        // watch's end: in a fleet, a replica a reload has not reached yet does not know a client
        // just added, and must not end its watches.
        if let Some(tool) = self.gateway.tool(&watch.tool)
            && !self.gateway.may_call(&watch.client, &tool)
        {
            let now = clock::epoch_ms();
            let next = watch
                .schedule
                .next(instant, now, watch.runs, watch.departure_at_ms);
            let why = texts::no_longer_allowed(&watch.tool, next.is_none());
            self.store
                .skip_run(&watch.id, instant, next, &why, now)
                .await?;
            return Ok(());
        }
        let submitted = self
            .jobs
            .submit(NewJob {
                tool: watch.tool.clone(),
                arguments: watch.arguments.clone(),
                call_id: Some(format!("watch-{}-{instant}", watch.id)),
                client: watch.client.clone(),
                idempotency_key: Some(format!("{WATCH_RUN_KEY_PREFIX}{}:{instant}", watch.id)),
                callback_url: None,
                trace: None,
            })
            .await;
        let now = clock::epoch_ms();
        match submitted {
            Ok((job, _)) => {
                self.store
                    .start_run(&watch.id, instant, &job.id, now)
                    .await?;
            }
            Err(SubmitError::Store(e)) => return Err(e),
            // The arguments no longer hold (a date now in the past) or the tool is gone: the
            // watch cannot run again.
            Err(SubmitError::Invalid(text)) => {
                self.store
                    .end_unrun(
                        &watch.id,
                        &format!("the watch cannot run any more: {text}"),
                        now,
                    )
                    .await?;
            }
            Err(SubmitError::UnknownTool) => {
                self.store
                    .end_unrun(
                        &watch.id,
                        &format!("{} is no longer served", watch.tool),
                        now,
                    )
                    .await?;
            }
            Err(SubmitError::Callback(text)) => {
                tracing::warn!(watch = %watch.id, %text, "watch run refused its callback");
            }
        }
        Ok(())
    }

    /// Records `watch`'s run once its job has ended: the result, a notice when it is news, the
    /// next instant. A job still queued, running or waiting for its provider is left alone.
    async fn check_run(&self, watch: &Watch) -> Result<(), StoreError> {
        let Some((job_id, instant)) = &watch.job else {
            return Ok(());
        };
        let found = self.jobs.find(job_id).await?;
        // A run the provider refused (its answer `rejected`: an offer that has expired) would be
        // refused at every run: the watch ends, with a notice saying why, rather than spend the
        // provider's quota on it until someone deletes it.
        let mut refused = None;
        let (result, error) = match found.map(|f| f.job) {
            Some(job) if job.status == JobStatus::Succeeded => (job.result, None),
            Some(job) if job.status == JobStatus::Dead => {
                let error = job.last_error.unwrap_or_else(|| "the run gave up".into());
                refused = job
                    .result
                    .filter(|r| r.get("status").and_then(Value::as_str) == Some("rejected"))
                    .map(|r| (error.clone(), r));
                (None, Some(error))
            }
            // Its client cancelled the job (MCP tasks/cancel takes any job id of the client).
            Some(job) if job.status == JobStatus::Cancelled => {
                (None, Some("the run's job was cancelled".to_string()))
            }
            Some(_) => return Ok(()),
            None => (None, Some(format!("the run's job {job_id} is gone"))),
        };
        let now = clock::epoch_ms();
        // Only an answer is a result; anything else keeps the last one to compare with.
        let (result, error) = match result {
            Some(r) if r.get("status").and_then(Value::as_str) == Some("ok") => (Some(r), error),
            Some(r) => (
                None,
                Some(
                    r.get("content")
                        .and_then(Value::as_str)
                        .unwrap_or("the run had no answer")
                        .to_string(),
                ),
            ),
            None => (None, error),
        };
        if let Some(current) = &result
            && let Some(text) = watch.condition.news(watch.last_result.as_ref(), current)
        {
            let written = self
                .store
                .add_notice(
                    &Notice {
                        watch_id: watch.id.clone(),
                        instant_ms: *instant,
                        text: text.clone(),
                        result: current.clone(),
                        created_at_ms: now,
                        callback: None,
                        callback_error: None,
                    },
                    watch.callback_url.is_some(),
                )
                .await?;
            if written {
                tracing::info!(watch = %watch.id, tool = %watch.tool, %text, "watch notice");
            }
        }
        if let Some((why, answer)) = &refused {
            let text = texts::refused_ended(&watch.tool, why);
            self.store
                .add_notice(
                    &Notice {
                        watch_id: watch.id.clone(),
                        instant_ms: *instant,
                        text: text.clone(),
                        result: answer.clone(),
                        created_at_ms: now,
                        callback: None,
                        callback_error: None,
                    },
                    watch.callback_url.is_some(),
                )
                .await?;
            tracing::info!(watch = %watch.id, tool = %watch.tool, %text, "watch ended: its call was refused");
        }
        let departure_at_ms = result
            .as_ref()
            .and_then(condition::departure)
            .and_then(|d| schedule::epoch_ms_of(&d));
        let next = if refused.is_some() {
            None
        } else {
            watch.schedule.next(
                *instant,
                now,
                watch.runs + 1,
                departure_at_ms.or(watch.departure_at_ms),
            )
        };
        self.store
            .finish_run(
                &watch.id,
                job_id,
                &RunEnd {
                    result,
                    error,
                    next_run_at_ms: next,
                    departure_at_ms,
                },
                now,
            )
            .await?;
        Ok(())
    }
}

/// Where a notice's callback goes (its watch's URL), and what it says.
fn notice(due: &DueCallback) -> Delivery {
    let body = serde_json::json!({
        "watch_id": due.notice.watch_id,
        "tool": due.tool,
        "instant": rfc3339(due.notice.instant_ms),
        // When the run's answer was read: later than its instant when a provider held it.
        "seen_at": rfc3339(due.notice.created_at_ms),
        "news": due.notice.text,
        "result": due.notice.result,
    });
    Delivery {
        client: due.client.clone(),
        url: due.url.clone(),
        body,
    }
}

#[cfg(test)]
mod tests;

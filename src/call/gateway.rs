//! [`Gateway`]: the served tools and the two ways a call goes through them.
//!
//! Both entry points read the same way: look the tool up, check the arguments once, run the
//! pipeline, answer. [`Gateway::call`] answers a waiting model with an [`Envelope`] now;
//! [`Gateway::run_background`] gives the job system a [`Verdict`]. Every `Gateway` method is in
//! this file.

use std::collections::BTreeMap;
use std::future::{Future, ready};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use chrono::NaiveDate;
use futures::FutureExt as _;
use futures::future::Either;
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use tracing::Instrument;

use super::answer::{self, Verdict};
use super::booking::{self, Write};
use super::coalesce::Waiter;
use super::envelope::{CallInfo, Envelope};
use super::last_good::{GoodResult, LastGood};
use super::observe::Observer;
use super::outcome::{Failure, Success};
use super::pipeline::{self, Context};
use super::progress::{self, Step, StepSender, Steps};
use super::reload::{self, Prepared, Served, ToolChanges};
use super::served::{ServedTool, SharedOutcome};
use super::shared_text::SharedText;
use super::upstream::Upstream;
use crate::breaker::{BreakerKey, BreakerRegistry};
use crate::clients::{ClientName, Directory};
use crate::config::Config;
use crate::fingerprint::fnv1a_64;
use crate::ledger::{Ledger, Outcome, arguments_digest};
use crate::maintenance::Schedule;
use crate::policy::SplitMix;
use crate::providers::{ErrorKind, RateLimits, UpstreamError};
use crate::telemetry::Telemetry;
use crate::texts::call as texts;
use crate::tools::spend::Budget;
use crate::tools::{CallMode, ToolRequest};
use crate::trace_context::TraceContext;

/// One call as every protocol adapter, and the job system, hands it over.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The tool's name.
    pub tool: String,
    /// The arguments, unvalidated.
    pub arguments: Value,
    /// The caller's id for this call.
    pub call_id: Option<String>,
    /// Required by write tools; the same key never books twice.
    pub idempotency_key: Option<String>,
    /// The caller's deadline, capped by the tool's.
    pub deadline: Option<Duration>,
    /// The client the call is made for (a background job's owner), as the edge identified it.
    pub client: ClientName,
    /// A trace context the call itself carried (MCP `_meta.traceparent`), which parents its
    /// tool span; a context sent as an HTTP header parents the request's span instead.
    pub trace: Option<TraceContext>,
}

/// Why a call could not even start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No tool by that name is served.
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The tools served.
        known: Vec<String>,
    },
}

/// Why background arguments were refused at acceptance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckError {
    /// No such tool is served.
    UnknownTool,
    /// The arguments are wrong; the text names every field (as `invalid_arguments` does).
    Invalid(String),
}

/// The gateway core: served tools and the call pipeline.
#[derive(Debug)]
pub struct Gateway {
    /// The served tools and maintenance windows, replaced whole by a reload; each call reads
    /// the snapshot once and keeps it to its end.
    served: ArcSwap<Served>,
    /// The providers by the operator's name (a reload builds the new tools over them).
    upstreams: BTreeMap<String, Arc<dyn Upstream>>,
    /// Counts the snapshots installed after the first, so that who shows the tool list (MCP
    /// sessions) hears when it was replaced.
    replaced: watch::Sender<u64>,
    breakers: BreakerRegistry,
    /// Numbers the calls that came without an id (`fg_1`, `fg_2`, …).
    call_ids: AtomicU64,
    /// The retry backoff's random source.
    jitter: SplitMix,
    observer: Observer,
    /// What the providers announce about their rate limits (and are configured with): the job
    /// system paces background claims by it.
    rate_limits: Arc<RateLimits>,
    /// The booking ledger every write call goes through, once a store is attached. A gateway
    /// without a store (the library without `app::attach_jobs`) books without one, relying on
    /// the provider's own deduplication.
    ledger: OnceLock<Ledger>,
    /// Each client's daily booking budget, by client name (only clients that have one). A
    /// `std` lock: read once per booking, written only when budgets are set, never held across
    /// an await.
    budgets: std::sync::RwLock<BTreeMap<String, Budget>>,
    /// The clients and what each may call now, for work a client set up earlier (a watch's
    /// runs): a reload may have narrowed its scope or taken its key away since. Unset (the
    /// library alone, tests of the call path): not checked.
    clients: OnceLock<Arc<Directory>>,
}

impl Gateway {
    /// Builds the served tools from configuration and the providers by name; problems are
    /// returned as text. The calls report to `telemetry`.
    pub fn new(
        config: &Config,
        upstreams: &BTreeMap<String, Arc<dyn Upstream>>,
        telemetry: Arc<Telemetry>,
    ) -> Result<Self, Vec<String>> {
        let breakers = BreakerRegistry::default();
        let tools: BTreeMap<String, Arc<ServedTool>> =
            reload::build_tools(config, upstreams, &breakers)?
                .into_iter()
                .map(|(name, tool)| (name, Arc::new(tool)))
                .collect();
        let observer = Observer::new(telemetry);
        for tool in tools.values() {
            observer.register_tool(tool);
        }
        let served = Served {
            tools,
            maintenance: Arc::new(Schedule::new(config.maintenance.clone())),
        };
        Ok(Gateway {
            served: ArcSwap::from_pointee(served),
            upstreams: upstreams.clone(),
            replaced: watch::Sender::new(0),
            breakers,
            call_ids: AtomicU64::new(1),
            // Per process, so replicas retrying together do not draw the same waits.
            jitter: SplitMix::new(
                fnv1a_64(*b"faregate-retry-jitter") ^ u64::from(std::process::id()),
            ),
            observer,
            rate_limits: Arc::default(),
            ledger: OnceLock::new(),
            budgets: std::sync::RwLock::default(),
            clients: OnceLock::new(),
        })
    }

    /// Builds the tools `config` serves beside the running ones and checks them, changing
    /// nothing: every problem at once, or the set [`Gateway::install`] puts in service. The
    /// providers are the running ones (`config`'s `[providers]` apply only to each attempt's
    /// cap, `timeout`).
    pub fn prepare(&self, config: &Config) -> Result<Prepared, Vec<String>> {
        reload::prepare(config, &self.upstreams)
    }

    /// Puts `prepared` in service in one step and says which tools it added, removed and
    /// changed. A breaker whose tool × provider key stays keeps its state and history and
    /// follows the new policy from its next transition; calls in flight finish on the
    /// configuration they started with. Reloads must not overlap (the caller serializes them).
    pub fn install(&self, prepared: Prepared) -> ToolChanges {
        let running = self.served.load_full();
        let reload::Installed {
            served,
            changes,
            made,
            forgotten,
        } = reload::install(prepared, &running, &self.breakers, Instant::now());
        // Series for what is new: a breaker that carried over keeps its own state series.
        self.observer.forget_breakers(&forgotten);
        self.observer.register_breakers(&made);
        for name in changes.added.iter().chain(&changes.changed) {
            if let Some(tool) = served.tools.get(name) {
                self.observer.register_calls(tool);
            }
        }
        self.served.store(Arc::new(served));
        self.replaced.send_modify(|n| *n += 1);
        changes
    }

    /// How many times a reload replaced the served tools (0 as started).
    pub fn tools_revision(&self) -> u64 {
        *self.replaced.borrow()
    }

    /// Wakes on every [`Gateway::install`], for who shows the tool list (the tools, their
    /// descriptions or their order may have changed).
    pub fn tools_replaced(&self) -> watch::Receiver<u64> {
        self.replaced.subscribe()
    }

    /// The same gateway, reading the providers' rate limits from `limits` (the board their
    /// adapters write into).
    pub fn with_rate_limits(mut self, limits: Arc<RateLimits>) -> Self {
        self.rate_limits = limits;
        self
    }

    /// What the providers announce about their rate limits.
    pub fn rate_limits(&self) -> &Arc<RateLimits> {
        &self.rate_limits
    }

    /// Routes every write call through `ledger` from now on. False when one was attached
    /// already (it is kept).
    pub fn attach_ledger(&self, ledger: Ledger) -> bool {
        self.ledger.set(ledger).is_ok()
    }

    /// The booking ledger, once attached.
    pub fn ledger(&self) -> Option<&Ledger> {
        self.ledger.get()
    }

    /// One round of booking reconciliation (see `booking::reconcile`); how many bookings whose
    /// outcome was unknown it settled.
    pub async fn reconcile_bookings(&self) -> usize {
        match self.ledger.get() {
            Some(ledger) => booking::reconcile(ledger, &self.observer, &self.tools()).await,
            None => 0,
        }
    }

    /// The scheduled maintenance windows in force.
    pub fn maintenance(&self) -> Arc<Schedule> {
        Arc::clone(&self.served.load().maintenance)
    }

    /// Whether `tool` takes calls now: one of its providers has a breaker that admits them and
    /// is held by no maintenance window.
    pub fn is_available(&self, tool: &ServedTool, now: Instant) -> bool {
        let wall = crate::clock::utc_now();
        let served = self.served.load();
        tool.admitting(now)
            .any(|p| served.maintenance.active(tool.spec.name, p, wall).is_none())
    }

    /// The served tools, in manifest order: the catalog's, then the tools from configuration
    /// by name.
    pub fn tools(&self) -> Vec<Arc<ServedTool>> {
        self.served.load().in_manifest_order().cloned().collect()
    }

    /// One served tool.
    pub fn tool(&self, name: &str) -> Option<Arc<ServedTool>> {
        self.served.load().tools.get(name).cloned()
    }

    /// The tools a breaker guards, in manifest order: one tool for a tool × provider breaker,
    /// every tool on the provider (or account) for a shared one.
    pub fn tools_guarded_by(&self, key: &BreakerKey) -> Vec<&'static str> {
        self.tools()
            .iter()
            .filter(|t| {
                t.breaker_on(key.provider_name())
                    .is_some_and(|b| b.key() == key)
            })
            .map(|t| t.spec.name)
            .collect()
    }

    /// Every breaker, for operations and the timer task.
    pub fn breakers(&self) -> &BreakerRegistry {
        &self.breakers
    }

    /// The earliest date a traveller anywhere may still call "today": a date is in the past
    /// only once it has ended everywhere on Earth (UTC−12).
    pub fn today() -> NaiveDate {
        (crate::clock::utc_now() - chrono::Duration::hours(12)).date_naive()
    }

    /// Runs one interactive call to its envelope, inside an `execute_tool {tool}` span, and
    /// counts it.
    ///
    /// The call's future is boxed once here: it is several KB (the pipeline's state), and
    /// every layer above it (the span wrapper, the handler, axum's boxed route futures) would
    /// otherwise copy all of it on each move; boxed, they move a pointer (BENCHMARKS.md,
    /// fast-fail).
    pub async fn call(self: &Arc<Self>, req: CallRequest) -> Result<Envelope, CallError> {
        self.call_reporting(req, None).await
    }

    /// [`Gateway::call`], telling `steps` what the call does while its caller waits (a provider
    /// failed and the next is asked; a retry waits): the steps of a read, which may fail over and
    /// retry (a write does neither).
    pub fn call_reporting(
        self: &Arc<Self>,
        req: CallRequest,
        steps: Option<StepSender>,
    ) -> impl Future<Output = Result<Envelope, CallError>> + Send + '_ {
        let span = Observer::call_span(&req.tool);
        if let Some(caller) = &req.trace {
            caller.parent(&span);
        }
        let started = Instant::now();
        // `answer` looks the tool up and checks the arguments as it is called: in the span, as
        // the rest of the call. Boxed, and the request moved into it: this future, which every
        // layer above keeps inline, holds no more than the box and the span.
        let answer = span.in_scope(|| Box::pin(self.answer(req, steps)));
        async move {
            let answered = answer.instrument(span.clone()).await;
            if let Ok(envelope) = &answered {
                self.observer.called(&span, envelope, started.elapsed());
            }
            answered
        }
    }

    /// An interactive call: look up → check once → a read: from memory, or shared with identical
    /// calls in flight; a write: the ledger → pipeline → answer.
    ///
    /// A plain function returning the read's or the write's future, not an `async fn`: the
    /// look-up and the check are synchronous, and an `async fn` would keep its arguments and
    /// every local (the request, its checked copy, the call's info) beside the read's future
    /// for as long as a slow provider holds the call (memory per held call, BENCHMARKS.md).
    fn answer(
        self: &Arc<Self>,
        req: CallRequest,
        steps: Option<StepSender>,
    ) -> impl Future<Output = Result<Envelope, CallError>> + Send + '_ {
        // The configuration this call runs on to its end, whatever a reload installs meanwhile.
        let served = self.served.load_full();
        let tool = match self.look_up(&served, &req.tool) {
            Ok(tool) => tool,
            Err(unknown) => return Either::Left(ready(Err(unknown))),
        };
        let info = CallInfo {
            breaker: tool.first_breaker_state(Instant::now()).to_string(),
            ..CallInfo::new(self.call_id(req.call_id), tool.spec.name)
        };
        // A read's key (canonical arguments: its memory and its shared calls) and a write's
        // digest are taken before the arguments move into the typed parse (no copy).
        let read_key = (!tool.is_write()).then(|| LastGood::key(&req.arguments));
        let digest = self.write_digest(&tool, &req.arguments);
        let checked = tool.check(req.arguments, Self::today(), req.idempotency_key.as_deref());
        let request = match checked {
            Ok(request) => request,
            Err(text) => return Either::Left(ready(Ok(Envelope::invalid_arguments(info, text)))),
        };
        let deadline = Instant::now() + tool.deadline(req.deadline);
        if let Some(key) = read_key {
            let read = self.answer_read((served, tool), info, request, deadline, key, steps);
            return Either::Right(Either::Left(read.map(Ok)));
        }
        let write = Self::write(&tool, &req.client, &request, digest);
        // Boxed: inline, a write's steps (the ledger's SQL futures of both engines, the
        // write's own pipeline) would size every read's call future too.
        let written = Box::pin(self.answer_write((served, tool), info, request, deadline, write));
        Either::Right(Either::Right(written.map(Ok)))
    }

    /// A checked write: its ledger entry first (which may answer it: booked earlier, a
    /// conflict, over budget), then the pipeline, then the answer.
    async fn answer_write(
        self: &Arc<Self>,
        (served, tool): (Arc<Served>, Arc<ServedTool>),
        info: CallInfo,
        mut request: ToolRequest,
        deadline: Instant,
        write: Option<Write>,
    ) -> Envelope {
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            let opened = Box::pin(self.open_write(ledger, write, info.clone(), &mut request));
            if let Some(envelope) = opened.await {
                return envelope;
            }
        }
        match self
            .run_write(&served, &tool, request, deadline, write)
            .await
        {
            Ok(success) => answer::fresh(info, success),
            Err(failure) => self.interactive_answer(&tool, info, &failure, None),
        }
    }

    /// A checked read: a repeat within the tool's `fresh_for` is answered from memory; otherwise
    /// the call joins an identical one in flight or leads a new one (`coalesce.rs`), and the
    /// caller waits for it until its own deadline. A good answer is remembered once, by the
    /// shared call; a failure is answered per caller (its stale result or its fallback).
    ///
    /// A plain function, as [`Gateway::answer`]: the memory look-up and the join are
    /// synchronous, and the future a waiting caller keeps ([`Gateway::await_shared`]) holds what
    /// answering it needs, not the request its shared call took.
    fn answer_read(
        self: &Arc<Self>,
        (served, tool): (Arc<Served>, Arc<ServedTool>),
        info: CallInfo,
        request: ToolRequest,
        deadline: Instant,
        key: String,
        steps: Option<StepSender>,
    ) -> impl Future<Output = Envelope> + Send + '_ {
        if let Some((hit, age)) = tool
            .last_good
            .as_ref()
            .and_then(|memory| memory.fresh(&key, Instant::now()))
        {
            let (content, data, provider) = (
                hit.content.to_string(),
                hit.data.clone(),
                hit.provider.clone(),
            );
            let envelope = Envelope::cached(info, content, data, age.as_secs(), provider)
                .with_content_tail(&hit.content);
            return Either::Left(ready(envelope));
        }
        // Every breaker rejecting: nothing goes upstream, so there is nothing to share (and no
        // progress to report), and the fast-fail answer skips the shared call's task and channel.
        // Boxed: inline, the pipeline (several KB) would size the call future of every read,
        // also of the reads that wait below on a shared call and hold nothing of it (memory per
        // held call, BENCHMARKS.md); one allocation is small beside the fast-fail answer's cost.
        if tool.all_open(Instant::now()) {
            let ran = Box::pin(async move {
                let cx = self.context(&served);
                match pipeline::run(&tool, &request, deadline, CallMode::Interactive, cx).await {
                    Ok(success) => self.remember(&tool, &key, answer::fresh(info, success)),
                    Err(failure) => self.interactive_answer(&tool, info, &failure, Some(&key)),
                }
            });
            return Either::Right(Either::Left(ran));
        }
        // One copy of the key, shared by the call, its task and every caller waiting on it.
        let key: Arc<str> = key.into();
        // The shared call runs to the tool's deadline, not to this caller's: a caller in a
        // hurry must not cut it short for the patient ones that join it (`coalesce.rs`).
        let shared_deadline = Instant::now() + tool.deadline(None);
        // A caller that listens subscribes to the steps now, not when its future is first
        // polled: the shared call's task may run (fail over, report, answer) before that.
        let mut leader_steps = None;
        let waiter = tool
            .shared_calls
            .join(Arc::clone(&key), shared_deadline, |shared_steps| {
                if steps.is_some() {
                    leader_steps = Some(shared_steps.subscribe());
                }
                self.shared_read(
                    (&served, &tool),
                    request,
                    shared_deadline,
                    Arc::clone(&key),
                    shared_steps,
                )
                .in_current_span()
            });
        let their_steps = steps.map(|to| (leader_steps.unwrap_or_else(|| waiter.steps()), to));
        Either::Right(Either::Right(self.await_shared(
            tool,
            info,
            deadline,
            key,
            waiter,
            their_steps,
        )))
    }

    /// A caller waiting on the shared call it joined, until the call's end or its own
    /// deadline, whichever comes first; told the call's steps if it listens.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
    )]
    fn await_shared(
        self: &Arc<Self>,
        tool: Arc<ServedTool>,
        info: CallInfo,
        deadline: Instant,
        key: Arc<str>,
        mut waiter: Waiter<SharedOutcome>,
        their_steps: Option<(broadcast::Receiver<Step>, StepSender)>,
    ) -> impl Future<Output = Envelope> + Send + '_ {
        async move {
            // The shared call ends by the tool's deadline; a caller in more of a hurry stops
            // waiting at its own (and counts out, as one that went away).
            let wait = async {
                if deadline < waiter.deadline() {
                    tokio::time::timeout_at(deadline, waiter.outcome())
                        .await
                        .ok()
                        .flatten()
                } else {
                    waiter.outcome().await
                }
            };
            // Forwarding boxed: it nearly triples the wait, and only a caller that listens
            // (MCP with a progress token) needs it, while every held call's future is as large
            // as its largest step (memory per held call, BENCHMARKS.md).
            let outcome = match their_steps {
                Some((from, to)) => Box::pin(progress::forwarding(wait, from, &to)).await,
                None => wait.await,
            };
            match outcome.as_deref() {
                Some(Ok(fresh)) => Envelope {
                    call_id: info.call_id,
                    ..fresh.clone()
                },
                Some(Err(failure)) => self.interactive_answer(&tool, info, failure, Some(&key)),
                None => self.interactive_answer(&tool, info, &Failure::DeadlinePassed, Some(&key)),
            }
        }
    }

    /// The one provider call that identical concurrent reads share: the pipeline, then a good
    /// answer rendered and remembered once for all of them.
    fn shared_read(
        self: &Arc<Self>,
        (served, tool): (&Arc<Served>, &Arc<ServedTool>),
        request: ToolRequest,
        deadline: Instant,
        key: Arc<str>,
        steps: Steps,
    ) -> impl std::future::Future<Output = SharedOutcome> + Send + 'static {
        let gateway = Arc::clone(self);
        let (served, tool) = (Arc::clone(served), Arc::clone(tool));
        async move {
            let cx = Context {
                steps: Some(&steps),
                ..gateway.context(&served)
            };
            let ran = pipeline::run(&tool, &request, deadline, CallMode::Interactive, cx).await;
            // The call id is each caller's own, set when it is answered.
            let info = CallInfo::new(String::new(), tool.spec.name);
            Arc::new(ran.map(|success| gateway.remember(&tool, &key, answer::fresh(info, success))))
        }
    }

    /// A write's ledger entry, before any provider is asked: `Some` is the answer when the
    /// ledger already answers it (booked earlier, a conflict, unwritable) or the client's budget
    /// refuses it; `None` lets it run, its spend limited to what the budget leaves.
    async fn open_write(
        &self,
        ledger: &Ledger,
        write: &Write,
        info: CallInfo,
        request: &mut ToolRequest,
    ) -> Option<Envelope> {
        let begun = booking::begin(ledger, write).await;
        if let Some(envelope) = booking::answered(&self.observer, write, info.clone(), &begun) {
            return Some(envelope);
        }
        let refused = self.apply_budget(ledger, write, request).await;
        refused.map(|(Ok(text) | Err(text))| refused_here(info, text))
    }

    /// The digest of a write call's arguments, when a ledger will record it.
    fn write_digest(&self, tool: &ServedTool, arguments: &Value) -> Option<String> {
        (tool.is_write() && self.ledger.get().is_some())
            .then(|| arguments_digest(tool.spec.name, arguments))
    }

    /// The ledger coordinates of a checked write call (a digest was taken only for writes).
    fn write(
        tool: &ServedTool,
        client: &ClientName,
        request: &ToolRequest,
        digest: Option<String>,
    ) -> Option<Write> {
        Some(Write {
            client: client.to_string(),
            tool: tool.spec.name,
            key: request.idempotency_key()?.to_string(),
            digest: digest?,
        })
    }

    /// Runs one background attempt of a stored job: look up → check once → pipeline →
    /// verdict. No fallback text and no stale answer: only what the job system needs to decide
    /// between done, later and never.
    pub async fn run_background(self: &Arc<Self>, req: CallRequest) -> Verdict {
        let served = self.served.load_full();
        let Some(tool) = served.tools.get(&req.tool).cloned() else {
            return Verdict::Never {
                envelope: None,
                error: texts::not_served(&req.tool),
                attempted: false,
            };
        };
        let info = CallInfo::new(self.call_id(req.call_id), tool.spec.name);
        let digest = self.write_digest(&tool, &req.arguments);
        // Valid at acceptance, perhaps invalid now: a travel date that has passed meanwhile.
        let checked = tool.check(req.arguments, Self::today(), req.idempotency_key.as_deref());
        let request = match checked {
            Ok(request) => request,
            Err(text) => {
                return Verdict::Never {
                    error: text.clone(),
                    envelope: Some(Envelope::invalid_arguments(info, text)),
                    attempted: false,
                };
            }
        };
        let deadline = Instant::now() + tool.deadline(req.deadline);
        let write = Self::write(&tool, &req.client, &request, digest);
        let mut request = request;
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            let begun = booking::begin(ledger, write).await;
            if let Some(verdict) = self.background_answered(write, info.clone(), &begun) {
                return verdict;
            }
            match self.apply_budget(ledger, write, &mut request).await {
                None => {}
                Some(Ok(text)) => {
                    return Verdict::Never {
                        error: text.clone(),
                        envelope: Some(refused_here(info, text)),
                        attempted: false,
                    };
                }
                Some(Err(error)) => {
                    return Verdict::Later {
                        anchor: None,
                        error,
                        attempted: false,
                        rate_limited: None,
                    };
                }
            }
        }
        let ran = pipeline::run(
            &tool,
            &request,
            deadline,
            CallMode::Background,
            self.context(&served),
        )
        .await;
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            booking::finish(ledger, &self.observer, write, &booking::outcome_of(&ran)).await;
        }
        match ran {
            Ok(success) => Verdict::Done(answer::fresh(info, success)),
            Err(failure) => {
                let route = tool.route(failure.provider());
                let facts = answer::Background {
                    info,
                    write: tool.is_write(),
                    remaining_open: route.and_then(|r| r.breaker.remaining_open(Instant::now())),
                };
                answer::background(failure, facts)
            }
        }
    }

    /// Limits a write to what the client's daily budget leaves, when it has one. `Some(Ok)`:
    /// the budget is spent, refused (final; the ledger says failed); `Some(Err)`: the ledger
    /// could not be read, so nothing is sent. Either is the text to answer.
    async fn apply_budget(
        &self,
        ledger: &Ledger,
        write: &Write,
        request: &mut ToolRequest,
    ) -> Option<Result<String, String>> {
        let budget = self
            .budgets
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&write.client)
            .cloned()?;
        let (refusal, reason) = match booking::spend_limit(ledger, write, &budget).await {
            Ok(Ok(limit)) => {
                request.limit_spend(limit);
                return None;
            }
            Ok(Err(text)) => (Ok(text), "over_budget"),
            Err(e) => {
                tracing::warn!(tool = write.tool, error = %e, "booking refused: the ledger could not be read for the budget");
                (
                    Err(texts::ledger_unwritable(write.tool)),
                    "ledger_unreadable",
                )
            }
        };
        let outcome = Outcome::Failed {
            provider: None,
            reason: reason.into(),
        };
        booking::finish(ledger, &self.observer, write, &outcome).await;
        Some(refusal)
    }

    /// Checks the work clients set up earlier against `clients` from now on (see
    /// [`Gateway::may_call`]); set once, at start.
    pub fn check_clients_against(&self, clients: Arc<Directory>) {
        let _ = self.clients.set(clients);
    }

    /// Whether `client` may call `tool` now, by this replica's current roster: for a watch's
    /// run, which the client asked for before a reload may have narrowed its scope or taken its
    /// key away. (Interactive calls are checked at the edge, against the key itself.)
    pub fn may_call(&self, client: &ClientName, tool: &ServedTool) -> bool {
        self.clients.get().is_none_or(|clients| {
            clients
                .current()
                .scope_now(client)
                .allows(tool.spec.name, tool.is_write())
        })
    }

    /// Replaces every client's daily booking budget (the client configuration, at start and on
    /// each reload); bookings from then on are held to them.
    pub fn set_budgets(&self, budgets: BTreeMap<String, Budget>) {
        *self
            .budgets
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = budgets;
    }

    /// Sets (or, with `None`, removes) `client`'s daily booking budget; bookings from then on
    /// are held to it.
    pub fn set_budget(&self, client: &ClientName, budget: Option<Budget>) {
        let mut budgets = self
            .budgets
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match budget {
            Some(b) => budgets.insert(client.to_string(), b),
            None => budgets.remove(client.as_str()),
        };
    }

    /// A background write the ledger answered before any provider was asked: a booking made
    /// earlier is the job's result; a conflict or an outcome still being learned ends the job
    /// (repeating it could book twice); a ledger that cannot be written sends nothing and the
    /// job runs again later.
    fn background_answered(
        &self,
        write: &Write,
        info: CallInfo,
        begun: &Result<crate::ledger::Begin, crate::store::StoreError>,
    ) -> Option<Verdict> {
        let envelope = booking::answered(&self.observer, write, info, begun)?;
        Some(match begun {
            Err(e) => Verdict::Later {
                anchor: None,
                error: format!("booking ledger: {e}"),
                attempted: false,
                rate_limited: None,
            },
            Ok(crate::ledger::Begin::Recorded(entry))
                if entry.state == crate::ledger::State::Booked =>
            {
                Verdict::Done(envelope)
            }
            Ok(_) => Verdict::Never {
                error: envelope.content.clone(),
                envelope: Some(envelope),
                attempted: false,
            },
        })
    }

    /// Validates a call for background acceptance: the same check an interactive call gets,
    /// answered now, so a job is only stored when it can run.
    pub fn check_arguments(
        &self,
        tool_name: &str,
        arguments: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<(), CheckError> {
        let tool = self.tool(tool_name).ok_or(CheckError::UnknownTool)?;
        tool.check(arguments.clone(), Self::today(), idempotency_key)
            .map(|_| ())
            .map_err(CheckError::Invalid)
    }

    fn look_up(&self, served: &Served, name: &str) -> Result<Arc<ServedTool>, CallError> {
        served
            .tools
            .get(name)
            .cloned()
            .ok_or_else(|| CallError::UnknownTool {
                name: name.to_string(),
                known: served
                    .in_manifest_order()
                    .map(|t| t.spec.name.to_string())
                    .collect(),
            })
    }

    /// The caller's id for the call, or a new `fg_N`.
    fn call_id(&self, given: Option<String>) -> String {
        given.unwrap_or_else(|| format!("fg_{}", self.call_ids.fetch_add(1, Ordering::Relaxed)))
    }

    fn context<'a>(&'a self, served: &'a Served) -> Context<'a> {
        Context {
            observer: &self.observer,
            jitter: &self.jitter,
            rate_limits: &self.rate_limits,
            steps: None,
            maintenance: &served.maintenance,
        }
    }

    /// Runs the pipeline for a write whose caller waits. It runs to completion on its own task
    /// even if the caller goes away, and records its outcome in the ledger there: dropping it
    /// halfway could leave a booking made at the provider with nobody told. (A read is
    /// cancelled when its last caller goes away, see `answer_read`.)
    async fn run_write(
        self: &Arc<Self>,
        served: &Arc<Served>,
        tool: &Arc<ServedTool>,
        request: ToolRequest,
        deadline: Instant,
        write: Option<Write>,
    ) -> Result<Success, Failure> {
        let gateway = Arc::clone(self);
        let first_provider = tool.route(None).map(|r| r.name.clone()).unwrap_or_default();
        let (served, tool) = (Arc::clone(served), Arc::clone(tool));
        let write_task = async move {
            let cx = gateway.context(&served);
            let ran = pipeline::run(&tool, &request, deadline, CallMode::Interactive, cx).await;
            if let (Some(write), Some(ledger)) = (&write, gateway.ledger.get()) {
                booking::finish(ledger, &gateway.observer, write, &booking::outcome_of(&ran)).await;
            }
            ran
        };
        match tokio::spawn(write_task.in_current_span()).await {
            Ok(ran) => ran,
            // The write's task failed (a defect: it panicked). Whether its request reached the
            // provider is not known, so neither is the outcome: the caller is told so, not that
            // nothing was booked, and the ledger entry, left pending, is reconciled.
            Err(e) => {
                tracing::error!(error = %e, "a write's task failed; its outcome is unknown until reconciled");
                Err(Failure::Upstream {
                    provider: first_provider,
                    error: UpstreamError::new(ErrorKind::Transport, "the write's task failed"),
                    failed_before: Vec::new(),
                })
            }
        }
    }

    /// Keeps a fresh answer as the tool's last good result for these arguments.
    fn remember(&self, tool: &ServedTool, key: &str, envelope: Envelope) -> Envelope {
        if let (Some(memory), Some(data), Some(provider)) =
            (&tool.last_good, &envelope.data, &envelope.provider)
        {
            memory.put(
                key.to_string(),
                GoodResult {
                    data: data.clone(),
                    content: SharedText::new(envelope.content.clone()),
                    provider: provider.clone(),
                    fetched_at: Instant::now(),
                },
            );
        }
        envelope
    }

    /// Gathers what the interactive answer policy needs to know now, and asks it.
    fn interactive_answer(
        &self,
        tool: &ServedTool,
        info: CallInfo,
        failure: &Failure,
        read_key: Option<&str>,
    ) -> Envelope {
        let now = Instant::now();
        let route = tool.route(failure.provider());
        let stale = match (&tool.last_good, read_key) {
            (Some(memory), Some(key)) => memory.stale(key, now),
            _ => None,
        };
        // The other tools that work now are named only by the fallback text; a stale answer
        // (the common fast-fail answer of a read) does not pay for asking every breaker.
        let available_tools: Vec<String> = if stale.is_some() {
            Vec::new()
        } else {
            self.tools()
                .iter()
                .filter(|t| t.spec.name != tool.spec.name && self.is_available(t, now))
                .map(|t| t.spec.name.to_string())
                .collect()
        };
        let quota_exhausted = tool.quota_exhausted(now);
        let facts = answer::Interactive {
            info,
            write: tool.is_write(),
            provider: route.map_or("", |r| r.name.as_str()),
            breaker: route.map(|r| r.breaker.state(now)),
            remaining_open: route.and_then(|r| r.breaker.remaining_open(now)),
            timeout: tool.config.timeout,
            stale: stale.as_ref().map(|(entry, age)| (entry.as_ref(), *age)),
            fallback: &tool.fallback,
            available_tools: &available_tools,
            quota_exhausted: &quota_exhausted,
        };
        answer::interactive(failure, facts)
    }
}

/// A refusal the gateway makes itself before any provider request (a spent budget): `rejected`,
/// naming no provider.
fn refused_here(info: CallInfo, text: String) -> Envelope {
    Envelope {
        provider: None,
        ..Envelope::rejected(info, text, String::new())
    }
}

//! [`Gateway`]: the served tools and the two ways a call goes through them.
//!
//! Both entry points read the same way: look the tool up, check the arguments once, run the
//! pipeline, answer. [`Gateway::call`] answers a waiting model with an [`Envelope`] now;
//! [`Gateway::run_background`] gives the job system a [`Verdict`]. Every `Gateway` method is in
//! this folder:
//!
//! - `mod.rs`: the gateway itself (construction, reload, what it serves), the entry of an
//!   interactive call (look up, check once, then a read or a write) and the answer policy's
//!   facts for a failed call;
//! - `read.rs`: a read, from memory or shared with identical reads in flight;
//! - `write.rs`: a write, through the booking ledger and the client's budget;
//! - `background.rs`: one attempt of a stored job;
//! - `probe.rs`: the gateway asking a tool again itself, for its back-in-service notices;
//! - `held.rs`: what maintenance windows hold now, for a failed call's answer and the metrics.

use std::collections::BTreeMap;
use std::future::{Future, ready};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use chrono::NaiveDate;
use futures::FutureExt as _;
use futures::future::Either;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use super::answer::{self};
use super::booking::{self};
use super::call_ids::CallIds;
use super::envelope::{CallInfo, Envelope, Status};
use super::last_good::LastGood;
use super::observe::Observer;
use super::outcome::Failure;
use super::pipeline::{CallTag, Context, Share};
use super::progress::StepSender;
use super::reload::{self, Prepared, Served, ToolChanges};
use super::served::ServedTool;
use super::upstream::Upstream;
use crate::breaker::{BreakerKey, BreakerRegistry};
use crate::clients::{ClientName, Directory, ProviderReserve, ToolShare};
use crate::config::Config;
use crate::fingerprint::fnv1a_64;
use crate::fleet::Fleet;
use crate::ledger::Ledger;
use crate::maintenance::Schedule;
use crate::policy::SplitMix;
use crate::providers::RateLimits;
use crate::telemetry::Telemetry;
use crate::tools::spend::Budget;
use crate::trace_context::TraceContext;

mod background;
mod held;
mod probe;
mod read;
mod write;

pub use probe::Probed;

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
    /// Names the calls that came without an id (`fg_<tag>_1`, `fg_<tag>_2`, …).
    call_ids: CallIds,
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
    /// The shared state's handle, once attached: whether the store (which holds the ledger)
    /// answers, so a write is not listed as available while every booking would be refused.
    fleet: OnceLock<Arc<Fleet>>,
    /// Each client's daily booking budget, by client name (only clients that have one). A
    /// `std` lock: read once per booking, written only when budgets are set, never held across
    /// an await.
    budgets: std::sync::RwLock<BTreeMap<String, Budget>>,
    /// The clients and what each may call now, for work a client set up earlier (a watch's
    /// runs): a reload may have narrowed its scope or taken its key away since. Unset (the
    /// library alone, tests of the call path): not checked.
    clients: OnceLock<Arc<Directory>>,
    /// While several clients may call, the share of each tool's bulkhead one client may hold,
    /// in parts per million (`ToolShare::parts_per_million`); 0 while one client calls (or
    /// until told), when the bulkhead alone bounds it. An atomic: read by every call, written
    /// at start and on each reload of the clients.
    client_share: AtomicU32,
    /// While several clients may call, the part of each provider's rate-limit window kept for
    /// the clients under their fair share, in parts per million
    /// (`ProviderReserve::parts_per_million`); 0 while one client calls, while it is off, or
    /// until told. Read by every attempt, written at start and on each reload of the clients.
    provider_reserve: AtomicU32,
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
            call_ids: CallIds::new(),
            // Per process, so replicas retrying together do not draw the same waits.
            jitter: SplitMix::new(
                fnv1a_64(*b"faregate-retry-jitter") ^ u64::from(std::process::id()),
            ),
            observer,
            rate_limits: Arc::default(),
            ledger: OnceLock::new(),
            fleet: OnceLock::new(),
            budgets: std::sync::RwLock::default(),
            clients: OnceLock::new(),
            client_share: AtomicU32::new(0),
            provider_reserve: AtomicU32::new(0),
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

    /// Reads whether the store answers from `fleet` from now on (the ledger is in that store).
    pub fn watch_store(&self, fleet: Arc<Fleet>) {
        let _ = self.fleet.set(fleet);
    }

    /// Whether `tool` takes calls now: one of its providers has a breaker that admits them and
    /// is held by no maintenance window; and for a write through the booking ledger, the store
    /// that holds the ledger answers (else every booking is refused unsent).
    pub fn is_available(&self, tool: &ServedTool, now: Instant) -> bool {
        if tool.is_write()
            && self.ledger.get().is_some()
            && self.fleet.get().is_some_and(|f| !f.is_connected())
        {
            return false;
        }
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
                let fallback = matches!(envelope.status, Status::Stale | Status::Unavailable);
                let held = fallback && self.held_everywhere(&envelope.tool);
                self.observer
                    .called(&span, envelope, started.elapsed(), held);
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
        // ledger facts (digest, names) are taken before the arguments move into the typed
        // parse (no copy).
        let read_key = (!tool.is_write()).then(|| LastGood::key(&req.arguments));
        let facts = self.ledger_facts(&tool, &req.arguments);
        let checked = tool.check(req.arguments, Self::today(), req.idempotency_key.as_deref());
        let request = match checked {
            Ok(request) => request,
            Err(text) => return Either::Left(ready(Ok(Envelope::invalid_arguments(info, text)))),
        };
        // The caller's deadline and the tool's, from one instant: a caller that asked for no
        // sooner one waits for the shared call it leads to its end, rather than stopping a few
        // microseconds before it with no more than "the deadline passed" to say.
        let asked_at = Instant::now();
        let deadlines = (
            asked_at + tool.deadline(req.deadline),
            asked_at + tool.deadline(None),
        );
        if let Some(key) = read_key {
            let read = self.answer_read(
                (served, tool),
                (info, req.client),
                request,
                deadlines,
                key,
                steps,
            );
            return Either::Right(Either::Left(read.map(Ok)));
        }
        let mut request = request;
        request.made_for(req.client.as_str());
        let write = Self::write(&tool, (&req.client, &info.call_id), &request, facts);
        // Boxed: inline, a write's steps (the ledger's SQL futures of both engines, the
        // write's own pipeline) would size every read's call future too.
        let asked = req.deadline;
        let written =
            Box::pin(self.answer_write((served, tool), (info, req.client), request, asked, write));
        Either::Right(Either::Right(written.map(Ok)))
    }

    /// Holds each client to `share` of every tool's bulkhead from now on (`None`: no share,
    /// the bulkhead alone). Given at start and on each reload: a share while more than one
    /// client may call, none while one does (see `clients::ToolShare`).
    pub fn set_client_share(&self, share: Option<ToolShare>) {
        let ppm = share.map_or(0, ToolShare::parts_per_million);
        self.client_share.store(ppm, Ordering::Relaxed);
    }

    /// The share of each tool's bulkhead clients are held to now, if any.
    pub fn client_share(&self) -> Option<ToolShare> {
        ToolShare::from_parts_per_million(self.client_share.load(Ordering::Relaxed))
    }

    /// Holds each client to its share of every provider's rate-limit window from now on, while
    /// the provider's window runs down to `reserve` (`None`: nobody is held to a share of a
    /// provider). Given at start and on each reload: the reserve while more than one client may
    /// call, none while one does (see `clients::ProviderReserve`).
    pub fn set_provider_reserve(&self, reserve: Option<ProviderReserve>) {
        let ppm = reserve.map_or(0, ProviderReserve::parts_per_million);
        self.provider_reserve.store(ppm, Ordering::Relaxed);
    }

    /// The reserve of each provider's window clients are held to their share of, if any.
    pub fn provider_reserve(&self) -> Option<ProviderReserve> {
        ProviderReserve::from_parts_per_million(self.provider_reserve.load(Ordering::Relaxed))
    }

    /// Whose share a call of `client` counts against: `client`'s, while clients are held to a
    /// share.
    pub(super) fn share_of<'a>(&self, client: &'a ClientName) -> Share<'a> {
        match self.client_share() {
            Some(share) => Share::Client { client, share },
            None => Share::Free,
        }
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

    /// The caller's id for the call, or a new `fg_<tag>_<n>` (`call_ids.rs`).
    pub(crate) fn call_id(&self, given: Option<String>) -> String {
        given.unwrap_or_else(|| self.call_ids.next())
    }

    /// What a run of the pipeline for `call` on `served` reports to and reads.
    fn context<'a>(&'a self, served: &'a Served, call: CallTag<'a>) -> Context<'a> {
        Context {
            observer: &self.observer,
            jitter: &self.jitter,
            rate_limits: &self.rate_limits,
            steps: None,
            maintenance: &served.maintenance,
            provider_reserve: self.provider_reserve(),
            call,
        }
    }

    /// Gathers what the interactive answer policy needs to know now, and asks it.
    fn interactive_answer(
        &self,
        (tool, client): (&ServedTool, &ClientName),
        info: CallInfo,
        failure: &Failure,
        read_key: Option<&str>,
    ) -> Envelope {
        // A client refused for holding its share of the tool: its own doing, answered without
        // asking anything of the tool's state.
        let info = match answer::limited(info, failure) {
            Ok(envelope) => return envelope,
            Err(info) => info,
        };
        let now = Instant::now();
        if let Some(key) = read_key {
            tool.keep_unanswered(key, failure);
        }
        let (held, others_back, named) = self.chain_now(tool, failure, now);
        // Behind a backup that lists nothing, the provider that would know is the one to name.
        let named_first = failure.unlisted_behind().or(failure.provider());
        let route = tool.route(named_first.or(named.as_deref()));
        let stale = match (&tool.last_good, read_key) {
            (Some(memory), Some(key)) => memory.stale(key, now),
            _ => None,
        };
        // The other tools that work now are named only by the fallback text; a stale answer
        // (the common fast-fail answer of a read) does not pay for asking every breaker.
        // Only the tools the caller may call: another's would show it names outside its scope
        // and send its model to a 403.
        let available_tools: Vec<String> = if stale.is_some() {
            Vec::new()
        } else {
            let scope = self.clients.get().map(|c| c.current().scope_now(client));
            self.tools()
                .iter()
                .filter(|t| t.spec.name != tool.spec.name && self.is_available(t, now))
                .filter(|t| {
                    scope
                        .as_ref()
                        .is_none_or(|s| s.allows(t.spec.name, t.is_write()))
                })
                .map(|t| t.spec.name.to_string())
                .collect()
        };
        let quota_exhausted = tool.quota_exhausted(now);
        let facts = answer::Interactive {
            info,
            write: tool.is_write(),
            priced: tool.spec.priced,
            provider: route.map_or("", |r| r.name.as_str()),
            breaker: route.map(|r| r.breaker.state(now)),
            failing_run: matches!(failure, Failure::DeadlinePassed)
                && route.is_some_and(|r| r.breaker.in_failing_run()),
            remaining_open: route.and_then(|r| r.breaker.remaining_open(now)),
            others_back,
            held,
            timeout: tool.config.timeout,
            max_concurrent: tool.config.max_concurrent,
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

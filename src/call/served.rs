//! The tools as served: for each tool its catalog entry and configuration, its compiled argument
//! validator, its provider chain (each provider behind its breaker: the tool's own on that
//! provider, or one the provider's tools share, as the provider's breaker scope says), its
//! bulkhead with what each client holds of it, its last good results and its calls in flight.
//! Built from configuration at start and again on each reload (which carries the breakers, the
//! bulkhead and the last good results of an unchanged tool over); read by every call.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::breaker_plan::BreakerPlan;
use super::coalesce::Coalescer;
use super::envelope::Envelope;
use super::last_good::LastGood;
use super::outcome::Failure;
use super::unanswered::Unanswered;
use super::upstream::Upstream;
use crate::breaker::{Breaker, BreakerConfig, BreakerKey, BreakerRegistry, BreakerState};
use crate::clients::{ClientName, Shares, ToolShare};
use crate::config::ToolConfig;
use crate::providers::ErrorKind;
use crate::tools::{
    Access, ArgumentValidator, FieldError, ToolRequest, ToolSpec, describe_field_errors,
};

/// A tool as served: catalog entry, configuration, compiled validator, provider chain.
#[derive(Debug)]
pub struct ServedTool {
    /// The catalog entry.
    pub spec: &'static ToolSpec,
    /// Its configuration.
    pub config: ToolConfig,
    /// The compiled argument validator.
    validator: ArgumentValidator,
    /// Providers in the order they are tried, each behind its own breaker; never empty.
    pub(super) routes: Vec<Route>,
    /// Bounds the calls of this tool that are upstream at once (`max_concurrent`).
    pub(super) bulkhead: Arc<Semaphore>,
    /// The bulkhead slots each client holds, counted against its share while several clients
    /// call (`clients::ToolShare`).
    pub(super) shares: Arc<Shares>,
    /// Last good results, for read tools with `fresh_for` or `stale_for`.
    pub(super) last_good: Option<LastGood>,
    /// The read calls of this tool in flight, by canonical arguments: identical concurrent reads
    /// share one (see `coalesce.rs`). Unused by a write.
    pub(super) shared_calls: Coalescer<SharedOutcome>,
    /// Set by the job dispatcher while background jobs of this tool are due: a half-open
    /// breaker's probes then go to those jobs (the breaker's rule, see `breaker::Caller`).
    background_due: AtomicBool,
    /// The last read no provider answered, which the gateway may ask again itself to learn
    /// that the tool is back (`unanswered.rs`). Unused by a write.
    pub(super) unanswered: Unanswered,
    /// The interactive fallback prompt, placeholders unfilled.
    pub(super) fallback: String,
}

/// What a shared read call came to, for every caller waiting on it: the fresh answer (its
/// `call_id` still to be set per caller), or the failure each caller's answer policy reads.
pub(super) type SharedOutcome = Arc<Result<Envelope, Failure>>;

/// One provider of a tool, behind its breaker.
#[derive(Debug)]
pub(super) struct Route {
    /// The operator's name for the provider.
    pub(super) name: String,
    /// The provider.
    pub(super) upstream: Arc<dyn Upstream>,
    /// The breaker of this tool × provider, or the one every tool of the provider (or of its
    /// account) shares.
    pub(super) breaker: Arc<Breaker>,
    /// The breaker policy this configuration gives it (a reload applies it to a breaker that
    /// carries over).
    policy: BreakerConfig,
    /// The provider's cap on an attempt (`[providers.X] timeout`), under the tool's timeout.
    pub(super) timeout: Option<Duration>,
    /// Until when the provider said its quota is exhausted (the fallback says so). A short
    /// `std::sync::Mutex`: written on that rare failure, read only when rendering a fallback.
    quota_exhausted_until: Mutex<Option<Instant>>,
}

impl ServedTool {
    /// The tool of `config` served by the providers of its chain that exist in `upstreams`, or
    /// `None` when none of them does (the providers were built without it, with a warning).
    /// `provider_timeouts` caps the attempts of the providers named in it. Each provider is
    /// behind a breaker of this tool's own.
    #[cfg(test)]
    pub(super) fn build(
        spec: &'static ToolSpec,
        config: &ToolConfig,
        upstreams: &BTreeMap<String, Arc<dyn Upstream>>,
        provider_timeouts: &BTreeMap<String, Duration>,
        breakers: &BreakerRegistry,
        prompts: &BTreeMap<String, String>,
    ) -> Result<Option<Self>, String> {
        let plan = BreakerPlan::default();
        Self::build_planned(
            spec,
            config,
            upstreams,
            provider_timeouts,
            breakers,
            &plan,
            prompts,
        )
    }

    /// The tool of `config` (as `build` makes it in tests), each provider behind the breaker
    /// `plan` says guards this tool on it.
    pub(super) fn build_planned(
        spec: &'static ToolSpec,
        config: &ToolConfig,
        upstreams: &BTreeMap<String, Arc<dyn Upstream>>,
        provider_timeouts: &BTreeMap<String, Duration>,
        breakers: &BreakerRegistry,
        plan: &BreakerPlan,
        prompts: &BTreeMap<String, String>,
    ) -> Result<Option<Self>, String> {
        let validator = ArgumentValidator::new(spec)?;
        // A probe that never answers has failed once the tool's attempt timeout has passed.
        let breaker = config
            .breaker
            .to_builder()
            .probe_timeout(config.timeout)
            .build()
            .map_err(|problems| {
                let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
                format!(
                    "{}: breaker: {}",
                    config.file.display(),
                    problems.join("; ")
                )
            })?;
        let routes: Vec<Route> = config
            .providers
            .iter()
            .filter_map(|name| {
                // An http provider serves a built-in tool through the binding its file gives.
                let upstream = match config.binding(name) {
                    Some(binding) => upstreams.get(name)?.bound(&config.name, binding)?,
                    None => Arc::clone(upstreams.get(name)?),
                };
                let upstream = &upstream;
                Some(Route {
                    name: name.clone(),
                    upstream: Arc::clone(upstream),
                    breaker: plan.breaker(breakers, &config.name, name, &**upstream, &breaker),
                    policy: plan.policy(name, &breaker).clone(),
                    timeout: provider_timeouts.get(name).copied(),
                    quota_exhausted_until: Mutex::new(None),
                })
            })
            .collect();
        if routes.is_empty() {
            return Ok(None);
        }
        let write = spec.access == Access::Write;
        Ok(Some(ServedTool {
            spec,
            config: config.clone(),
            validator,
            routes,
            bulkhead: Arc::new(Semaphore::new(config.max_concurrent as usize)),
            shares: Arc::default(),
            // A write's result is never served again: an old booking answer would mislead.
            last_good: if write {
                None
            } else {
                LastGood::new(config.fresh_for, config.stale_for)
            },
            shared_calls: Coalescer::default(),
            background_due: AtomicBool::new(false),
            unanswered: Unanswered::default(),
            fallback: prompts
                .get(&config.fallback_interactive)
                .cloned()
                .unwrap_or_default(),
        }))
    }

    /// Moves this tool, built for a reload beside the running one, onto the gateway's own
    /// breakers: each route takes the registry's breaker of its key (which keeps its state and
    /// history and takes this configuration's policy, the first route of a key deciding), or a
    /// new one for a key the running configuration did not have.
    pub(super) fn adopt_breakers(
        &mut self,
        breakers: &BreakerRegistry,
        policies_set: &mut std::collections::HashSet<BreakerKey>,
        now: Instant,
    ) {
        for route in &mut self.routes {
            let key = route.breaker.key().clone();
            let breaker = breakers.get_or_insert(key.clone(), route.policy.clone());
            if policies_set.insert(key) {
                breaker.reconfigure(route.policy.clone(), now);
            }
            route.breaker = breaker;
        }
    }

    /// Carries over what `running` (this tool under the configuration being replaced) holds
    /// that callers rely on: its bulkhead when `max_concurrent` did not change (so calls in
    /// flight still count), what each client holds of it (counted whatever the new size, so a
    /// client's calls in flight still count against its share), its last good results (under this configuration's windows, those
    /// of providers still in the chain), each provider's "quota used up until", and the
    /// arguments of its last unanswered read (a reload is no answer).
    pub(super) fn carry_over(&mut self, running: &ServedTool) {
        if self.config.max_concurrent == running.config.max_concurrent {
            self.bulkhead = Arc::clone(&running.bulkhead);
        }
        self.shares = Arc::clone(&running.shares);
        if let Some(memory) = &running.last_good
            && !self.is_write()
        {
            let dropped: Vec<&str> = running
                .routes
                .iter()
                .map(|r| r.name.as_str())
                .filter(|name| !self.routes.iter().any(|r| r.name == *name))
                .collect();
            self.last_good = memory.renewed(self.config.fresh_for, self.config.stale_for, &dropped);
        }
        if !self.is_write()
            && let Some(key) = running.unanswered.get()
        {
            self.unanswered.adopt(&key);
        }
        for route in &self.routes {
            if let Some(old) = running.routes.iter().find(|r| r.name == route.name) {
                *route.quota() = *old.quota();
            }
        }
    }

    /// Whether `other` serves this tool exactly as this one does: the same configuration, the
    /// same fallback text and the same providers with the same caps.
    pub(super) fn same_as(&self, other: &ServedTool) -> bool {
        self.config == other.config
            && self.fallback == other.fallback
            && self.routes.len() == other.routes.len()
            && self
                .routes
                .iter()
                .zip(&other.routes)
                .all(|(a, b)| a.name == b.name && a.timeout == b.timeout)
    }

    /// Whether the tool changes the world (a booking). The one definition the call path uses:
    /// a write runs to completion when its caller goes away, is never failed over to another
    /// provider after reaching one, is never served stale, and a failure that may have reached
    /// the provider says the outcome is unknown. (Whether a call may be *retried* is
    /// `spec.idempotent`; the catalog keeps the two in step.)
    pub fn is_write(&self) -> bool {
        self.spec.access == Access::Write
    }

    /// The provider names in chain order.
    pub fn provider_names(&self) -> Vec<&str> {
        self.routes.iter().map(|r| r.name.as_str()).collect()
    }

    /// The breaker guarding this tool on `provider`, if the provider is in its chain.
    pub fn breaker_on(&self, provider: &str) -> Option<&Arc<Breaker>> {
        self.routes
            .iter()
            .find(|r| r.name == provider)
            .map(|r| &r.breaker)
    }

    /// The breakers of this tool, in chain order.
    pub fn breakers(&self) -> Vec<Arc<Breaker>> {
        self.routes.iter().map(|r| r.breaker.clone()).collect()
    }

    /// Calls of this tool upstream right now (bulkhead slots in use).
    pub fn in_flight(&self) -> usize {
        (self.config.max_concurrent as usize).saturating_sub(self.bulkhead.available_permits())
    }

    /// Tells the breakers whether background jobs of this tool are due (probe priority).
    pub fn set_background_due(&self, due: bool) {
        self.background_due.store(due, Ordering::Relaxed);
    }

    /// Whether background jobs of this tool are due now.
    pub(super) fn background_due(&self) -> bool {
        self.background_due.load(Ordering::Relaxed)
    }

    /// Whether every breaker of the tool rejects everything now (open or forced open): its
    /// background jobs are not worth claiming until one of them half-opens.
    pub fn all_open(&self, now: Instant) -> bool {
        self.routes.iter().all(|r| {
            matches!(
                r.breaker.state(now),
                BreakerState::Open | BreakerState::ForcedOpen
            )
        })
    }

    /// How many background calls of this tool its breakers would admit now, one after another
    /// ([`Breaker::background_room`]): `None` when one admits calls as they come (a call fails
    /// over down the chain to it), else the sum of what each admits (`Some(0)`: none; its jobs
    /// are not worth claiming, they would only be refused and requeued).
    pub fn background_room(&self, now: Instant) -> Option<u32> {
        self.routes
            .iter()
            .map(|r| r.breaker.background_room(now))
            .try_fold(0u32, |sum, room| room.map(|n| sum.saturating_add(n)))
    }

    /// How many of the tool's calls one client may hold under `share` and the slots each
    /// client holds now; `None` when `share` caps nothing beyond the bulkhead (no share, or
    /// one whose slots are the whole bulkhead: `pipeline::take_share` counts nothing then).
    /// For the job dispatcher, which claims no more of a client's jobs than its share has room
    /// for on this replica.
    pub fn share_now(&self, share: Option<ToolShare>) -> Option<(u32, Vec<(ClientName, u32)>)> {
        let slots = share?.slots(self.config.max_concurrent);
        (slots < self.config.max_concurrent).then(|| (slots, self.shares.holding()))
    }

    /// Whether any of the tool's breakers admits calls now (closed, ramping or forced closed).
    /// Maintenance windows are the gateway's: `Gateway::is_available` adds them.
    pub fn is_available(&self, now: Instant) -> bool {
        self.admitting(now).next().is_some()
    }

    /// The providers whose breakers admit calls now (closed, ramping or forced closed).
    pub(crate) fn admitting(&self, now: Instant) -> impl Iterator<Item = &str> {
        self.routes
            .iter()
            .filter(move |r| {
                matches!(
                    r.breaker.state(now),
                    BreakerState::Closed | BreakerState::Ramp | BreakerState::ForcedClosed
                )
            })
            .map(|r| r.name.as_str())
    }

    /// Keeps a read's arguments (`key`, canonical) that `failure` left unanswered, for the
    /// gateway to ask again itself (`unanswered.rs`): after a provider failed them, or when
    /// every breaker refused them; never arguments a provider refused as wrong.
    pub(super) fn keep_unanswered(&self, key: &str, failure: &Failure) {
        match failure {
            Failure::Upstream { error, .. }
                if !matches!(error.kind, ErrorKind::Rejected { .. })
                    || failure.unlisted_behind().is_some() =>
            {
                self.unanswered.provider_failed(key)
            }
            Failure::Breaker { .. } => self.unanswered.refused(key),
            _ => {}
        }
    }

    /// The arguments checked once, schema and semantics together (`today` being the earliest
    /// travel date), or the `invalid_arguments` text naming every field to fix.
    pub(super) fn check(
        &self,
        arguments: Value,
        today: NaiveDate,
        idempotency_key: Option<&str>,
    ) -> Result<ToolRequest, String> {
        let request = self
            .validator
            .check_owned(arguments, today, idempotency_key)
            .map_err(|errors| describe_field_errors(self.spec.name, &errors))?;
        // A tool from configuration: what its schema allows may still be unsendable (an empty
        // path segment, a list of objects as a query parameter), which is the model's to fix.
        if let (Some(http), ToolRequest::Configured(call)) = (&self.config.http, &request)
            && let Err((field, message)) = http.operation.check_arguments(&call.arguments)
        {
            let error = FieldError { field, message };
            return Err(describe_field_errors(self.spec.name, &[error]));
        }
        Ok(request)
    }

    /// The call's deadline: the caller's, capped by the tool's.
    pub(super) fn deadline(&self, asked: Option<Duration>) -> Duration {
        asked.map_or(self.config.deadline, |d| d.min(self.config.deadline))
    }

    /// The route of `provider`, or the first of the chain when `provider` is `None` (a failure
    /// before any provider was asked).
    pub(super) fn route(&self, provider: Option<&str>) -> Option<&Route> {
        match provider {
            Some(name) => self.routes.iter().find(|r| r.name == name),
            None => self.routes.first(),
        }
    }

    /// The state of the first breaker of the chain, which decides a call that fails before
    /// any provider is asked.
    pub(super) fn first_breaker_state(&self, now: Instant) -> &'static str {
        self.routes
            .first()
            .map_or("closed", |r| r.breaker.state(now).as_str())
    }

    /// The providers whose quota is used up at `now`, with the time until it resets.
    pub(super) fn quota_exhausted(&self, now: Instant) -> Vec<(String, Duration)> {
        self.routes
            .iter()
            .filter_map(|route| {
                let until = (*route.quota()).filter(|u| *u > now)?;
                Some((route.name.clone(), until.saturating_duration_since(now)))
            })
            .collect()
    }
}

impl Route {
    /// Notes that the provider's quota is used up until `until`.
    pub(super) fn quota_exhausted_until(&self, until: Instant) {
        *self.quota() = Some(until);
    }

    fn quota(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        // A poisoned lock only means a panic elsewhere; the instant in it is still usable.
        self.quota_exhausted_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

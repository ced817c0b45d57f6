//! The tool call pipeline: the one function every tool call goes through.
//!
//! ```text
//! CallRequest ─▶ lookup tool ─▶ validate (schema + semantic)
//!   ─▶ bulkhead ─▶ for each provider: breaker permit ─▶ attempt (timeout ⊂ deadline)
//!                                    ─▶ classify ─▶ record ─▶ retry | next provider
//!   ─▶ Envelope: ok | rejected | stale (last good result, with its age)
//!                | unavailable (the tool's fallback text) | invalid_arguments
//! ```
//!
//! [`Gateway::call`] is the entry point every protocol adapter (native HTTP, OpenAI, Anthropic,
//! MCP) uses, and all of them render the same [`Envelope`]. The upstream half lives in
//! `pipeline.rs`, whose module docs say why the steps come in that order. Every upstream request
//! happens inside one attempt, after its breaker (one per tool × provider) admitted it, and the
//! outcome is classified ([`classify`]) and recorded before anything else is decided.
//!
//! When nothing upstream answers, an interactive call falls back in this order: the last good
//! result for the same arguments (`stale`, with its age, for read tools with `stale_for`), then
//! the tool's text from `prompts/` rendered with `{retry_after_s}`, `{provider}` and
//! `{available_tools}`. Nothing is ever invented.

mod background;
pub mod classify;
pub mod envelope;
pub mod fallback;
mod observe;
mod pipeline;
pub mod retry;
pub mod stale;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

pub use background::{BackgroundOutcome, CheckError, RateLimitHit};
pub use envelope::{Data, Envelope, Status};

use crate::breaker::{
    Breaker, BreakerConfig, BreakerKey, BreakerRegistry, BreakerState, RampStage, SlowCall,
};
use crate::config::{BreakerSettings, Config, SlowCallSetting, ToolConfig};
use crate::providers::{ErrorKind, Provider, UpstreamError};
use crate::tools::{self, Access, ArgumentValidator, CallMode, ToolSpec, describe_field_errors};

use fallback::{may_have_executed, uncertain_write_text};
use pipeline::{Failure, Success};
use stale::{StaleCache, StaleEntry};

/// One call as every protocol adapter hands it over.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The tool's name.
    pub tool: String,
    /// The arguments, unvalidated.
    pub arguments: Value,
    /// Interactive or background.
    pub mode: CallMode,
    /// The caller's id for this call.
    pub call_id: Option<String>,
    /// Required by write tools; the same key never books twice.
    pub idempotency_key: Option<String>,
    /// The caller's deadline, capped by the tool's.
    pub deadline: Option<Duration>,
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

/// A tool as served: catalog entry, configuration, compiled validator, provider chain.
#[derive(Debug)]
pub struct ServedTool {
    /// The catalog entry.
    pub spec: &'static ToolSpec,
    /// Its configuration.
    pub config: ToolConfig,
    /// The compiled argument validator.
    validator: ArgumentValidator,
    /// Providers in the order they are tried, each behind its own breaker.
    routes: Vec<Route>,
    /// Bounds the calls of this tool that are upstream at once (`max_concurrent`).
    bulkhead: Arc<tokio::sync::Semaphore>,
    /// Last good results, for tools with `stale_for`.
    stale: Option<StaleCache>,
    /// Set by the job dispatcher while background jobs of this tool are due: a half-open
    /// breaker's probes then go to those jobs, and interactive calls get the fallback instead
    /// of paying for probing a sick provider.
    background_due: std::sync::atomic::AtomicBool,
    /// The interactive fallback template.
    fallback: String,
}

/// One provider of a tool, behind the breaker of that tool × provider.
#[derive(Debug)]
struct Route {
    name: String,
    provider: Provider,
    breaker: Arc<Breaker>,
    /// Until when the provider said its quota is exhausted (the fallback says so). A short
    /// `std::sync::Mutex`: written on that rare failure, read only when rendering a fallback.
    quota_exhausted_until: std::sync::Mutex<Option<Instant>>,
}

impl ServedTool {
    /// The provider names in chain order.
    pub fn provider_names(&self) -> Vec<&str> {
        self.routes.iter().map(|r| r.name.as_str()).collect()
    }

    /// The breakers of this tool, in chain order.
    pub fn breakers(&self) -> Vec<Arc<Breaker>> {
        self.routes.iter().map(|r| r.breaker.clone()).collect()
    }

    /// Calls of this tool upstream right now (bulkhead slots in use).
    pub fn in_flight(&self) -> usize {
        (self.config.max_concurrent as usize).saturating_sub(self.bulkhead.available_permits())
    }

    /// Tells the pipeline whether background jobs of this tool are due (probe priority).
    pub fn set_background_due(&self, due: bool) {
        self.background_due.store(due, Ordering::Relaxed);
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

    /// Whether any of the tool's breakers admits calls now (closed, ramping or forced closed).
    pub fn is_available(&self, now: Instant) -> bool {
        self.routes.iter().any(|r| {
            matches!(
                r.breaker.state(now),
                BreakerState::Closed | BreakerState::Ramp | BreakerState::ForcedClosed
            )
        })
    }
}

/// The breaker policy of one tool × provider, from the tool's merged configuration.
pub fn breaker_config(tool: &ToolConfig, key: &BreakerKey) -> BreakerConfig {
    let b: &BreakerSettings = &tool.breaker;
    BreakerConfig {
        window: b.window,
        failure_rate: b.failure_rate,
        min_calls: b.min_calls,
        slow_call: match b.slow_call {
            SlowCallSetting::Fixed(d) => SlowCall::Fixed(d),
            // Below half a second a "slow" call is noise, not pressure on the pool.
            SlowCallSetting::Auto => SlowCall::Auto {
                floor: Duration::from_millis(500),
            },
        },
        consecutive_failures: b.consecutive_failures,
        open_for: b.open_for,
        open_for_max: b.open_for_max,
        half_open_probes: b.half_open_probes,
        half_open_successes: b.half_open_successes,
        probe_interval: b.probe_interval,
        // A probe that never answers has failed once the tool's attempt timeout has passed.
        probe_timeout: tool.timeout,
        ramp: b
            .ramp
            .iter()
            .map(|(share, duration)| RampStage {
                share: *share,
                duration: *duration,
            })
            .collect(),
        // Re-open times are jittered so breakers of different tools do not re-probe in step.
        jitter: 0.2,
        seed: fnv1a(key.to_string().as_bytes()),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The gateway core: served tools and the call pipeline.
#[derive(Debug)]
pub struct Gateway {
    tools: BTreeMap<String, Arc<ServedTool>>,
    breakers: BreakerRegistry,
    call_ids: AtomicU64,
    jitter: retry::Jitter,
    telemetry: Arc<crate::telemetry::Telemetry>,
}

impl Gateway {
    /// Builds the served tools from configuration and providers; problems are returned as text.
    pub fn new(
        config: &Config,
        providers: &BTreeMap<String, Provider>,
    ) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut tools = BTreeMap::new();
        let breakers = BreakerRegistry::default();
        for tc in &config.tools {
            let Some(spec) = tools::spec(&tc.name) else {
                errors.push(format!("{}: unknown tool {}", tc.file.display(), tc.name));
                continue;
            };
            let validator = match ArgumentValidator::new(spec) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let mut routes = Vec::new();
            for name in &tc.providers {
                let Some(provider) = providers.get(name) else {
                    continue;
                };
                let key = BreakerKey::new(tc.name.clone(), name.clone());
                let bc = breaker_config(tc, &key);
                let problems = bc.validate();
                if !problems.is_empty() {
                    for p in problems {
                        errors.push(format!("{}: {p}", tc.file.display()));
                    }
                    continue;
                }
                routes.push(Route {
                    name: name.clone(),
                    provider: provider.clone(),
                    breaker: breakers.get_or_insert(key, bc),
                    quota_exhausted_until: std::sync::Mutex::new(None),
                });
            }
            if routes.is_empty() {
                // The tool's providers are configured but none serves it in this build
                // (warned about when providers were built): it is not offered.
                continue;
            }
            let fallback = config
                .prompts
                .get(&tc.fallback_interactive)
                .cloned()
                .unwrap_or_default();
            tools.insert(
                tc.name.clone(),
                Arc::new(ServedTool {
                    spec,
                    config: tc.clone(),
                    validator,
                    routes,
                    bulkhead: Arc::new(tokio::sync::Semaphore::new(tc.max_concurrent as usize)),
                    stale: if tc.stale_for.is_zero() || tool_is_write(spec) {
                        None
                    } else {
                        StaleCache::new(tc.stale_for)
                    },
                    fallback,
                    background_due: std::sync::atomic::AtomicBool::new(false),
                }),
            );
        }
        if errors.is_empty() {
            Ok(Gateway {
                telemetry: observe::telemetry_for(&tools),
                tools,
                breakers,
                call_ids: AtomicU64::new(1),
                jitter: retry::Jitter::new(
                    fnv1a(b"faregate-retry-jitter") ^ std::process::id() as u64,
                ),
            })
        } else {
            Err(errors)
        }
    }

    /// The served tools, in manifest order (the catalog's).
    pub fn tools(&self) -> Vec<Arc<ServedTool>> {
        tools::CATALOG
            .iter()
            .filter_map(|s| self.tools.get(s.name).cloned())
            .collect()
    }

    /// One served tool.
    pub fn tool(&self, name: &str) -> Option<Arc<ServedTool>> {
        self.tools.get(name).cloned()
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

    /// Runs one call to its envelope (`observe.rs` wraps it in its span and metrics).
    async fn call_untraced(self: &Arc<Self>, req: CallRequest) -> Result<Envelope, CallError> {
        let Some(tool) = self.tools.get(&req.tool).cloned() else {
            return Err(CallError::UnknownTool {
                name: req.tool,
                known: self
                    .tools()
                    .iter()
                    .map(|t| t.spec.name.to_string())
                    .collect(),
            });
        };
        let call_id = req
            .call_id
            .clone()
            .unwrap_or_else(|| format!("fg_{}", self.call_ids.fetch_add(1, Ordering::Relaxed)));
        let first_state = tool
            .routes
            .first()
            .map_or("closed", |r| r.breaker.state(Instant::now()).as_str());
        let envelope = |status: Status, content: String| Envelope {
            breaker: first_state.to_string(),
            ..Envelope::text(call_id.clone(), tool.spec.name, status, content)
        };

        // The stale key is taken before the arguments move into the typed parse (no copy).
        let stale_key = tool.stale.as_ref().map(|_| StaleCache::key(&req.arguments));
        let (request, field_errors) = match tool.validator.check_owned(
            req.arguments,
            Self::today(),
            req.idempotency_key.as_deref(),
        ) {
            Ok(r) => (Some(r), Vec::new()),
            Err(errors) => (None, errors),
        };
        let Some(request) = request else {
            return Ok(envelope(
                Status::InvalidArguments,
                describe_field_errors(tool.spec.name, &field_errors),
            ));
        };

        let deadline_len = req
            .deadline
            .map_or(tool.config.deadline, |d| d.min(tool.config.deadline));
        let deadline = Instant::now() + deadline_len;

        // A write runs to completion on its own task even if the caller goes away: dropping it
        // halfway could leave a booking made at the provider with nobody told. A read is
        // simply cancelled with its caller (the pipeline records the cancelled attempt as
        // telling nothing about the provider).
        let executed = if tool_is_write(tool.spec) {
            let gateway = Arc::clone(self);
            let task_tool = Arc::clone(&tool);
            let task_request = request.clone();
            tokio::spawn(
                async move {
                    gateway
                        .execute(&task_tool, &task_request, deadline, CallMode::Interactive)
                        .await
                }
                .in_current_span(),
            )
            .await
            .unwrap_or(Err(Failure::DeadlinePassed))
        } else {
            self.execute(&tool, &request, deadline, CallMode::Interactive)
                .await
        };
        let failure = match executed {
            Ok(Success {
                output,
                provider,
                breaker,
            }) => {
                let data = Data::new(output.to_json());
                let content = output.content();
                if let (Some(cache), Some(key)) = (&tool.stale, stale_key) {
                    cache.put(
                        key,
                        StaleEntry {
                            data: data.clone(),
                            content: content.clone(),
                            provider: provider.clone(),
                            fetched_at: Instant::now(),
                        },
                    );
                }
                let mut env = envelope(Status::Ok, content);
                env.data = Some(data);
                env.provider = Some(provider);
                env.breaker = breaker.as_str().to_string();
                return Ok(env);
            }
            Err(failure) => failure,
        };

        let now = Instant::now();
        let (provider, breaker_state) = match &failure {
            Failure::Breaker { provider, rejected } => (provider.clone(), Some(rejected.state)),
            Failure::Upstream { provider, .. } => {
                let state = tool
                    .routes
                    .iter()
                    .find(|r| &r.name == provider)
                    .map(|r| r.breaker.state(now));
                (provider.clone(), state)
            }
            Failure::BulkheadFull | Failure::DeadlinePassed => (
                tool.provider_names()
                    .first()
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                tool.routes.first().map(|r| r.breaker.state(now)),
            ),
        };
        let breaker_name = breaker_state
            .map_or(first_state, |s| s.as_str())
            .to_string();

        // A refusal the model can fix is an answer, not an outage.
        if let Failure::Upstream {
            error:
                error @ UpstreamError {
                    kind: ErrorKind::Rejected { message },
                    ..
                },
            ..
        } = &failure
        {
            let next = if error.is_already_done() {
                "Do not call again: tell the traveller the earlier booking stands."
            } else {
                "Correct the arguments (or ask the traveller) and call again."
            };
            let mut env = envelope(
                Status::Rejected,
                format!(
                    "The provider refused this {} request: {message}. {next}",
                    tool.spec.name
                ),
            );
            env.provider = Some(provider);
            env.breaker = breaker_name;
            return Ok(env);
        }

        let retry_after_s = ceil_secs(self.retry_estimate(&tool, &failure, now));
        if let (Some(cache), Some(key)) = (&tool.stale, &stale_key)
            && let Some((entry, age)) = cache.get(key, now)
        {
            let mut env = envelope(
                Status::Stale,
                format!(
                    "STALE RESULT, {} old: {} is not answering right now, so this is the last good result for the same request. Prices and availability may have changed since; say how old it is and confirm before booking. {}",
                    stale::describe_age(age),
                    tool.spec.name,
                    entry.content
                ),
            );
            env.data = Some(entry.data.clone());
            env.stale_age_s = Some(age.as_secs());
            env.retry_after_s = Some(retry_after_s);
            env.provider = Some(entry.provider.clone());
            env.breaker = breaker_name;
            return Ok(env);
        }

        let uncertain_write = match &failure {
            Failure::Upstream { error, .. } => {
                tool_is_write(tool.spec) && may_have_executed(&error.kind)
            }
            _ => false,
        };
        let content = if uncertain_write {
            uncertain_write_text(tool.spec.name, &provider)
        } else {
            self.fallback_text(&tool, &provider, retry_after_s, now)
        };
        let mut env = envelope(Status::Unavailable, content);
        env.retry_after_s = Some(retry_after_s);
        env.provider = Some(provider);
        env.breaker = breaker_name;
        Ok(env)
    }

    /// When calling again is worth it: the provider's own wait, else the breaker's remaining
    /// open time, else the time a bulkhead slot needs to free, else a short estimate.
    fn retry_estimate(&self, tool: &ServedTool, failure: &Failure, now: Instant) -> Duration {
        match failure {
            Failure::Breaker { rejected, .. } => rejected.retry_after,
            Failure::Upstream { provider, error } => error
                .kind
                .retry_after()
                .or_else(|| {
                    tool.routes
                        .iter()
                        .find(|r| &r.name == provider)
                        .and_then(|r| r.breaker.remaining_open(now))
                })
                .unwrap_or(TRANSIENT_RETRY),
            // A slot frees at the latest when the calls holding them time out.
            Failure::BulkheadFull => tool.config.timeout.min(TRANSIENT_RETRY),
            Failure::DeadlinePassed => TRANSIENT_RETRY,
        }
    }

    /// The tool's interactive fallback text, naming the tools whose breakers admit calls now.
    fn fallback_text(
        &self,
        tool: &ServedTool,
        provider: &str,
        retry_after_s: u64,
        now: Instant,
    ) -> String {
        let available: Vec<String> = self
            .tools()
            .iter()
            .filter(|t| t.spec.name != tool.spec.name && t.is_available(now))
            .map(|t| t.spec.name.to_string())
            .collect();
        let mut text = fallback::render(
            &tool.fallback,
            &fallback::FallbackValues {
                tool: tool.spec.name,
                retry_after_s,
                provider,
                available_tools: &available,
            },
        );
        for route in &tool.routes {
            let until = *route
                .quota_exhausted_until
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(until) = until.filter(|u| *u > now) {
                text.push_str(&fallback::quota_note(
                    &route.name,
                    tool.spec.name,
                    until.saturating_duration_since(now),
                ));
            }
        }
        text
    }
}

/// The retry estimate after a transient failure that left the breaker closed.
const TRANSIENT_RETRY: Duration = Duration::from_secs(10);

fn tool_is_write(spec: &ToolSpec) -> bool {
    spec.access == Access::Write
}

/// Whole seconds, rounded up, at least 1: "retry in 0 s" would invite a hot loop.
fn ceil_secs(d: Duration) -> u64 {
    (d.as_millis().div_ceil(1000) as u64).max(1)
}

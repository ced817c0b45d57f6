//! The tool call pipeline: the one function every tool call goes through.
//!
//! ```text
//! CallRequest ─▶ lookup tool ─▶ validate (schema + semantic) ─▶ for each provider in the chain:
//!                                                                 attempt (timeout ⊂ deadline)
//!                                                               ─▶ Envelope (ok | rejected |
//!                                                                  unavailable + fallback text)
//! ```
//!
//! [`Gateway::call`] is the seam: every upstream request of a tool call happens inside
//! [`Gateway::attempt`], which is where the breaker permit, retries and classification wrap the
//! provider adapter. Protocol adapters (native HTTP, OpenAI, Anthropic, MCP) all call
//! [`Gateway::call`] and render the same [`Envelope`].

pub mod envelope;
pub mod fallback;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;
use tokio::time::Instant;

pub use envelope::{Envelope, Status};

use crate::config::{Config, ToolConfig};
use crate::providers::{ErrorKind, Provider, UpstreamError};
use crate::tools::{
    self, Access, ArgumentValidator, CallMode, ToolOutput, ToolRequest, ToolSpec,
    describe_field_errors,
};

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
    /// Providers in the order they are tried.
    providers: Vec<(String, Provider)>,
    /// The interactive fallback template.
    fallback: String,
}

impl ServedTool {
    /// The provider names in chain order.
    pub fn provider_names(&self) -> Vec<&str> {
        self.providers.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// The gateway core: served tools and the call pipeline.
#[derive(Debug)]
pub struct Gateway {
    tools: BTreeMap<String, Arc<ServedTool>>,
    call_ids: AtomicU64,
}

impl Gateway {
    /// Builds the served tools from configuration and providers; problems are returned as text.
    pub fn new(config: &Config, providers: &BTreeMap<String, Provider>) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut tools = BTreeMap::new();
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
            let chain: Vec<(String, Provider)> = tc
                .providers
                .iter()
                .filter_map(|name| providers.get(name).map(|p| (name.clone(), p.clone())))
                .collect();
            if chain.is_empty() {
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
                    providers: chain,
                    fallback,
                }),
            );
        }
        if errors.is_empty() {
            Ok(Gateway {
                tools,
                call_ids: AtomicU64::new(1),
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

    /// The earliest date a traveller anywhere may still call "today": a date is in the past
    /// only once it has ended everywhere on Earth (UTC−12).
    pub fn today() -> NaiveDate {
        (chrono::Utc::now() - chrono::Duration::hours(12)).date_naive()
    }

    /// Runs one call to its envelope.
    pub async fn call(&self, req: CallRequest) -> Result<Envelope, CallError> {
        let Some(tool) = self.tools.get(&req.tool).cloned() else {
            return Err(CallError::UnknownTool {
                name: req.tool,
                known: self.tools().iter().map(|t| t.spec.name.to_string()).collect(),
            });
        };
        let call_id = req.call_id.clone().unwrap_or_else(|| {
            format!("fg_{}", self.call_ids.fetch_add(1, Ordering::Relaxed))
        });
        let envelope = |status: Status, content: String| Envelope {
            call_id: call_id.clone(),
            tool: tool.spec.name.to_string(),
            status,
            content,
            data: None,
            stale_age_s: None,
            retry_after_s: None,
            breaker: "closed".to_string(),
            job_id: None,
            provider: None,
        };

        // Schema first (names every bad field), then the typed parse and semantic checks.
        let mut field_errors = tool.validator.errors(&req.arguments);
        let request = if field_errors.is_empty() {
            match tool.spec.parse(
                req.arguments.clone(),
                Self::today(),
                req.idempotency_key.as_deref(),
            ) {
                Ok(r) => Some(r),
                Err(errs) => {
                    field_errors = errs;
                    None
                }
            }
        } else {
            if tool.spec.needs_idempotency_key
                && req
                    .idempotency_key
                    .as_deref()
                    .is_none_or(|k| k.trim().is_empty())
            {
                field_errors.push(tools::FieldError {
                    field: "idempotency_key".into(),
                    message: format!(
                        "{} needs an idempotency_key on the call (e.g. a UUID)",
                        tool.spec.name
                    ),
                });
            }
            None
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
        let mut last: Option<(String, UpstreamError)> = None;
        for (provider_name, provider) in &tool.providers {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                break;
            }
            match self
                .attempt(&tool, provider, &request, tool.config.timeout.min(remaining))
                .await
            {
                Ok(output) => {
                    let mut env = envelope(Status::Ok, output.content());
                    env.data = Some(output.to_json());
                    env.provider = Some(provider_name.clone());
                    return Ok(env);
                }
                Err(e) => {
                    tracing::warn!(
                        tool = tool.spec.name,
                        provider = %provider_name,
                        error = %e,
                        "upstream attempt failed"
                    );
                    let rejected = matches!(e.kind, ErrorKind::Rejected { .. });
                    last = Some((provider_name.clone(), e));
                    // A refusal the model can fix would be refused by the next provider too;
                    // a write may have reached the first provider and must not be repeated.
                    if rejected || tool.spec.access == Access::Write {
                        break;
                    }
                }
            }
        }

        let (provider_name, error) = match last {
            Some(l) => l,
            None => (
                tool.provider_names().first().map(|s| s.to_string()).unwrap_or_default(),
                UpstreamError::new(ErrorKind::Timeout, "the call's deadline passed before any attempt"),
            ),
        };
        let mut env = match &error.kind {
            ErrorKind::Rejected { message } => envelope(
                Status::Rejected,
                format!(
                    "The provider refused this {} request: {message}. Correct the arguments (or ask the traveller) and call again.",
                    tool.spec.name
                ),
            ),
            kind => {
                let retry_after = kind.retry_after().unwrap_or(Duration::from_secs(30));
                let retry_after_s = retry_after.as_secs().max(1);
                let content = if tool.spec.access == Access::Write && may_have_executed(kind) {
                    uncertain_write_text(tool.spec.name, &provider_name)
                } else {
                    self.fallback_text(&tool, &provider_name, retry_after_s)
                };
                let mut env = envelope(Status::Unavailable, content);
                env.retry_after_s = Some(retry_after_s);
                env
            }
        };
        env.provider = Some(provider_name);
        Ok(env)
    }

    /// One upstream attempt: the provider call bounded by `timeout`.
    ///
    /// This is the seam the breaker and the retry policy wrap.
    async fn attempt(
        &self,
        _tool: &ServedTool,
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

    /// The tool's interactive fallback text.
    fn fallback_text(&self, tool: &ServedTool, provider: &str, retry_after_s: u64) -> String {
        let available: Vec<String> = self
            .tools()
            .iter()
            .filter(|t| t.spec.name != tool.spec.name)
            .map(|t| t.spec.name.to_string())
            .collect();
        fallback::render(
            &tool.fallback,
            &fallback::FallbackValues {
                tool: tool.spec.name,
                retry_after_s,
                provider,
                available_tools: &available,
            },
        )
    }
}

/// Whether a failed write may still have been carried out by the provider.
fn may_have_executed(kind: &ErrorKind) -> bool {
    !matches!(
        kind,
        ErrorKind::Connect
            | ErrorKind::RateLimited { .. }
            | ErrorKind::Misconfigured { .. }
            | ErrorKind::Rejected { .. }
    )
}

fn uncertain_write_text(tool: &str, provider: &str) -> String {
    format!(
        "The {tool} request reached the provider ({provider}) but no confirmation came back, so it is not known whether it went through. Do not tell the traveller it is booked, and do not say nothing was booked either. Do not book again with a new idempotency key: call {tool} again later with the same idempotency key, which can never book twice, to learn the outcome."
    )
}

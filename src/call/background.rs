//! Background attempts: what the job system needs from the pipeline.
//!
//! A background call runs through the same pipeline as an interactive one (bulkhead, breaker,
//! attempts, classification), but nobody is waiting: there is no fallback text and no stale
//! answer, only a verdict the job system acts on — done, later (with the wait the provider
//! side asked for), or never.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::fallback::{may_have_executed, uncertain_write_text};
use super::pipeline::{Failure, Success};
use super::{Envelope, Gateway, Status, tool_is_write};
use crate::providers::ErrorKind;
use crate::tools::{CallMode, describe_field_errors};

/// What one background attempt came to.
#[derive(Debug, Clone)]
pub enum BackgroundOutcome {
    /// Done; the envelope is the result.
    Succeeded(Envelope),
    /// Not now: try again after at least `anchor` (the breaker's remaining open time or the
    /// provider's `Retry-After`), silently.
    Retry {
        /// The wait the provider side asked for, if known.
        anchor: Option<Duration>,
        /// The failure, for `last_error`.
        error: String,
        /// Whether a provider was reached (only those attempts count).
        attempted: bool,
        /// The provider answered 429 (the job system paces that tool's backlog from it).
        rate_limited: Option<RateLimitHit>,
    },
    /// Never: a refusal the model must fix, or a write whose outcome is unknown.
    Failed {
        /// The envelope to store and send, when there is one.
        envelope: Option<Envelope>,
        /// The reason, for `last_error`.
        error: String,
        /// Whether a provider was reached.
        attempted: bool,
    },
}

/// A provider's "too many requests" answer to a background attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitHit {
    /// The provider's `Retry-After`, if it sent one (the time to its window's reset).
    pub retry_after: Option<Duration>,
}

/// Why background arguments were refused at acceptance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckError {
    /// No such tool is served.
    UnknownTool,
    /// The arguments are wrong; the text names every field (as `invalid_arguments` does).
    Invalid(String),
}

impl Gateway {
    /// Runs one background attempt of a stored job: no fallback text and no stale answer, only
    /// what the job system needs to decide between done, later and never.
    pub async fn run_background(
        self: &Arc<Self>,
        tool_name: &str,
        arguments: Value,
        call_id: Option<String>,
        idempotency_key: Option<String>,
    ) -> BackgroundOutcome {
        let Some(tool) = self.tools.get(tool_name).cloned() else {
            return BackgroundOutcome::Failed {
                envelope: None,
                error: format!("tool {tool_name} is not served by this gateway"),
                attempted: false,
            };
        };
        let call_id = call_id
            .unwrap_or_else(|| format!("fg_{}", self.call_ids.fetch_add(1, Ordering::Relaxed)));
        let envelope = |status: Status, content: String| {
            Envelope::text(call_id.clone(), tool_name, status, content)
        };
        // Valid at acceptance, perhaps invalid now: a travel date that has passed meanwhile.
        let request = match self.check_arguments(tool_name, &arguments, idempotency_key.as_deref())
        {
            Ok(()) => tool
                .spec
                .parse(arguments, Self::today(), idempotency_key.as_deref())
                .ok(),
            Err(CheckError::Invalid(text)) => {
                return BackgroundOutcome::Failed {
                    error: text.clone(),
                    envelope: Some(envelope(Status::InvalidArguments, text)),
                    attempted: false,
                };
            }
            Err(CheckError::UnknownTool) => None,
        };
        let Some(request) = request else {
            return BackgroundOutcome::Failed {
                envelope: None,
                error: "the arguments are no longer valid".into(),
                attempted: false,
            };
        };
        let deadline = Instant::now() + tool.config.deadline;
        let now = || Instant::now();
        match self
            .execute(&tool, &request, deadline, CallMode::Background)
            .await
        {
            Ok(Success {
                output,
                provider,
                breaker,
            }) => {
                let mut env = envelope(Status::Ok, output.content());
                env.data = Some(output.to_json().into());
                env.provider = Some(provider);
                env.breaker = breaker.as_str().to_string();
                BackgroundOutcome::Succeeded(env)
            }
            Err(Failure::Upstream { provider, error }) => match &error.kind {
                ErrorKind::Rejected { message } => {
                    let mut env = envelope(
                        Status::Rejected,
                        format!(
                            "The provider refused this {} request: {message}.",
                            tool.spec.name
                        ),
                    );
                    env.provider = Some(provider);
                    BackgroundOutcome::Failed {
                        error: env.content.clone(),
                        envelope: Some(env),
                        attempted: true,
                    }
                }
                kind if tool_is_write(tool.spec) && may_have_executed(kind) => {
                    // Never repeat a write that may have been carried out.
                    BackgroundOutcome::Failed {
                        envelope: None,
                        error: uncertain_write_text(tool.spec.name, &provider),
                        attempted: true,
                    }
                }
                kind => BackgroundOutcome::Retry {
                    anchor: kind.retry_after().or_else(|| {
                        tool.routes
                            .iter()
                            .find(|r| r.name == provider)
                            .and_then(|r| r.breaker.remaining_open(now()))
                    }),
                    error: format!("{provider}: {error}"),
                    attempted: true,
                    rate_limited: matches!(kind, ErrorKind::RateLimited { .. }).then(|| {
                        RateLimitHit {
                            retry_after: kind.retry_after(),
                        }
                    }),
                },
            },
            Err(Failure::Breaker { provider, rejected }) => BackgroundOutcome::Retry {
                anchor: Some(rejected.retry_after),
                error: format!("{provider}: {rejected}"),
                attempted: false,
                rate_limited: None,
            },
            Err(Failure::BulkheadFull) => BackgroundOutcome::Retry {
                anchor: None,
                error: "the tool's bulkhead was full".into(),
                attempted: false,
                rate_limited: None,
            },
            Err(Failure::DeadlinePassed) => BackgroundOutcome::Retry {
                anchor: None,
                error: "the deadline passed before a provider answered".into(),
                attempted: false,
                rate_limited: None,
            },
        }
    }

    /// Validates a call for background acceptance: the same checks an interactive call gets,
    /// answered now, so a job is only stored when it can run.
    pub fn check_arguments(
        &self,
        tool_name: &str,
        arguments: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<(), CheckError> {
        let Some(tool) = self.tools.get(tool_name) else {
            return Err(CheckError::UnknownTool);
        };
        tool.validator
            .check(arguments, Self::today(), idempotency_key)
            .map(|_| ())
            .map_err(|errors| CheckError::Invalid(describe_field_errors(tool_name, &errors)))
    }
}

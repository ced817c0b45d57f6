//! What the pipeline returns: a provider's good answer, or why no provider gave one.
//!
//! Both answer policies (`answer.rs`) and the observer (`observe.rs`) read these values; the
//! pipeline is the only place that makes them.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::breaker::{BreakerState, Rejected};
use crate::providers::{ErrorKind, UpstreamError};
use crate::tools::ToolOutput;

/// A provider's good answer.
#[derive(Debug)]
pub(crate) struct Success {
    /// The normalized result.
    pub(crate) output: ToolOutput,
    /// The provider that answered.
    pub(crate) provider: String,
    /// Its breaker's state after recording the answer.
    pub(crate) breaker: BreakerState,
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
        /// The providers earlier in the chain that failed too, in chain order.
        failed_before: Vec<String>,
    },
    /// The provider was asked and failed (after the retries allowed), or refused the request
    /// outright without being asked (an id it did not issue).
    Upstream {
        /// The provider.
        provider: String,
        /// What went wrong.
        error: UpstreamError,
        /// The providers earlier in the chain that failed too, in chain order.
        failed_before: Vec<String>,
    },
    /// The provider's key is in a scheduled maintenance window: it was not asked, as if its
    /// breaker were forced open.
    Maintenance {
        /// The provider.
        provider: String,
        /// When the window (and any joining it) ends.
        until: DateTime<Utc>,
        /// The time left until then, at the moment of refusing.
        left: Duration,
        /// The operator's reason.
        reason: String,
        /// The providers earlier in the chain that failed too, in chain order.
        failed_before: Vec<String>,
    },
    /// The deadline passed before a provider could be asked.
    DeadlinePassed,
}

impl Failure {
    /// The provider the failure names; none for a full bulkhead or a passed deadline.
    pub(crate) fn provider(&self) -> Option<&str> {
        match self {
            Failure::Breaker { provider, .. }
            | Failure::Upstream { provider, .. }
            | Failure::Maintenance { provider, .. } => Some(provider),
            Failure::BulkheadFull | Failure::DeadlinePassed => None,
        }
    }

    /// Every provider that failed this call, in chain order: the earlier ones, then the one the
    /// failure names (the fallback text names them all: "duffel and amadeus", not only the
    /// last). Empty for a full bulkhead or a passed deadline.
    pub(crate) fn failed_providers(&self) -> Vec<&str> {
        match self {
            Failure::Breaker {
                provider,
                failed_before,
                ..
            }
            | Failure::Upstream {
                provider,
                failed_before,
                ..
            }
            | Failure::Maintenance {
                provider,
                failed_before,
                ..
            } => failed_before
                .iter()
                .map(String::as_str)
                .chain([provider.as_str()])
                .collect(),
            Failure::BulkheadFull | Failure::DeadlinePassed => Vec::new(),
        }
    }

    /// This failure, the last of a chain in which `failed` (in chain order, possibly ending with
    /// this failure's own provider) failed before it.
    pub(crate) fn after(mut self, mut failed: Vec<String>) -> Self {
        if let Failure::Breaker {
            provider,
            failed_before,
            ..
        }
        | Failure::Upstream {
            provider,
            failed_before,
            ..
        }
        | Failure::Maintenance {
            provider,
            failed_before,
            ..
        } = &mut self
        {
            if failed.last() == Some(provider) {
                failed.pop();
            }
            *failed_before = failed;
        }
        self
    }

    /// Whether the next provider of the chain should not be tried: a refusal the model can fix
    /// would be refused there too, and a write that reached a provider must not be repeated.
    pub(crate) fn stops_chain(&self, write: bool) -> bool {
        match self {
            Failure::Upstream { error, .. } => {
                write || matches!(error.kind, ErrorKind::Rejected { .. })
            }
            Failure::BulkheadFull | Failure::DeadlinePassed => true,
            Failure::Breaker { .. } | Failure::Maintenance { .. } => false,
        }
    }

    /// The `error.type` of a call that got no fresh answer (see `observe.rs`).
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            Failure::BulkheadFull => "bulkhead_full",
            Failure::Breaker { .. } => "circuit_open",
            Failure::Maintenance { .. } => "maintenance",
            Failure::DeadlinePassed => "deadline_exceeded",
            Failure::Upstream { error, .. } => error.kind.as_str(),
        }
    }
}

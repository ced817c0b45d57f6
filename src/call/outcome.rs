//! What the pipeline returns: a provider's good answer, or why no provider gave one.
//!
//! Both answer policies (`answer.rs`) and the observer (`observe.rs`) read these values; the
//! pipeline is the only place that makes them.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::breaker::{BreakerState, Rejected};
use crate::clients::{OverProviderShare, ToolShare};
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

/// A provider not asked because a scheduled maintenance window holds its key.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The provider.
    pub(crate) provider: String,
    /// When the window (and any joining it) ends.
    pub(crate) until: DateTime<Utc>,
    /// The time left until then, at the moment of refusing.
    pub(crate) left: Duration,
    /// The operator's reason.
    pub(crate) reason: String,
}

impl Held {
    /// Of the windows `held`, the one that ends first: when the tool is back.
    pub(crate) fn first(held: &[Held]) -> Option<&Held> {
        held.iter().min_by_key(|h| h.until)
    }
}

/// A provider of a chain that failed a call, and how long it asked not to be called again,
/// when it said (a `Retry-After`): the answer's `retry_after_s` is the soonest any failed
/// provider is back, and this provider's own word is part of that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failed {
    /// The provider.
    pub(crate) provider: String,
    /// How long it asked to be left alone, from when it failed.
    pub(crate) back_in: Option<Duration>,
    /// It refused the gateway's own credentials or setup (`misconfigured`): an operator must
    /// fix it, and waiting does not.
    pub(crate) misconfigured: bool,
}

#[cfg(test)]
impl From<&str> for Failed {
    fn from(provider: &str) -> Self {
        Failed {
            provider: provider.into(),
            back_in: None,
            misconfigured: false,
        }
    }
}

/// A client that holds all its share of a tool's bulkhead allows, and so was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverShare {
    /// The slots the client holds, all its share allows.
    pub(crate) slots: u32,
    /// The tool's bulkhead (`max_concurrent`).
    pub(crate) max_concurrent: u32,
    /// The share that allows them.
    pub(crate) share: ToolShare,
}

/// A provider not asked because the calling client was over its share of the provider's
/// rate-limit window while the window ran low (`clients::ProviderWindow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverProvider {
    /// The provider.
    pub(crate) provider: String,
    /// What the client sent, what was left and when the window resets.
    pub(crate) over: OverProviderShare,
}

impl OverProvider {
    /// Of the providers in `over`, the one whose window resets first: when the client may call
    /// the tool again.
    pub(crate) fn first(over: &[OverProvider]) -> Option<&OverProvider> {
        over.iter().min_by_key(|o| o.over.reset_in)
    }
}

impl From<OverShare> for Failure {
    fn from(over: OverShare) -> Self {
        Failure::ClientShareFull(over)
    }
}

/// Why a call got no answer from any provider.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The tool's bulkhead was full: too many calls of this tool are already upstream.
    BulkheadFull,
    /// The calling client already holds its share of the tool's bulkhead (`[limits]
    /// client_share_of_tool`): the client's own doing, not the provider's, so no breaker hears
    /// of it and the answer says which limit and how to keep under it.
    ClientShareFull(OverShare),
    /// The calling client was over its share of the provider's rate-limit window while the
    /// window ran low (`[limits] provider_reserve`): the client's own doing, so no breaker hears
    /// of it. The chain goes on to its next provider (another quota); at the end of a chain,
    /// every provider tried refused the client so (one that failed otherwise answers for the
    /// chain instead: [`Failure::joined`]), and each is here.
    ProviderShareFull {
        /// The providers, in chain order: never empty.
        over: Vec<OverProvider>,
    },
    /// The provider's breaker refused the attempt without contacting it.
    Breaker {
        /// The provider.
        provider: String,
        /// The breaker's answer.
        rejected: Rejected,
        /// Every provider of the chain that failed this call, in chain order (see
        /// [`Failure::failed_providers`]).
        failed: Vec<Failed>,
    },
    /// The provider was asked and failed (after the retries allowed), or refused the request
    /// outright without being asked (an id it did not issue).
    Upstream {
        /// The provider.
        provider: String,
        /// What went wrong.
        error: UpstreamError,
        /// Every provider of the chain that failed this call, in chain order (see
        /// [`Failure::failed_providers`]).
        failed: Vec<Failed>,
    },
    /// The provider's key is in a scheduled maintenance window: it was not asked, as if its
    /// breaker were forced open. At the end of a chain, every provider that failed the call was
    /// held so (one that failed otherwise is the answer instead: [`Failure::joined`]), and each
    /// is here, so the answer names them all and says when the first window ends.
    Maintenance {
        /// The providers held, in chain order: never empty; the last is the one tried last.
        held: Vec<Held>,
    },
    /// The deadline passed before a provider could be asked.
    DeadlinePassed,
}

impl Failure {
    /// The provider the failure names; none for a full bulkhead (the tool's, or the client's
    /// share of it), a client over its share of the providers, or a passed deadline (no
    /// provider failed: the client's own doing, or nobody's).
    pub(crate) fn provider(&self) -> Option<&str> {
        match self {
            Failure::Breaker { provider, .. } | Failure::Upstream { provider, .. } => {
                Some(provider)
            }
            Failure::Maintenance { held } => held.last().map(|h| h.provider.as_str()),
            Failure::BulkheadFull
            | Failure::ClientShareFull(_)
            | Failure::ProviderShareFull { .. }
            | Failure::DeadlinePassed => None,
        }
    }

    /// The provider before it in the chain that failed the call (or whose breaker did not let
    /// it be asked), when the answer is a later provider listing nothing for it: a backup that
    /// lists only the days near today has not said the flight does not exist, and the
    /// provider that would know is down. `None` otherwise.
    pub(crate) fn unlisted_behind(&self) -> Option<&str> {
        self.unlisted_behind_failed().map(|f| f.provider.as_str())
    }

    /// The provider [`Failure::unlisted_behind`] names, as it failed.
    pub(crate) fn unlisted_behind_failed(&self) -> Option<&Failed> {
        match self {
            Failure::Upstream {
                provider,
                error,
                failed,
            } if error.is_not_listed() => failed.iter().find(|f| f.provider != *provider),
            _ => None,
        }
    }

    /// Every provider that failed this call, in chain order, the one the failure names among
    /// them (the fallback text names them all: "duffel and amadeus", not only the last). Empty
    /// for a full bulkhead (the tool's, or the client's share of it) or a passed deadline.
    pub(crate) fn failed_providers(&self) -> Vec<&str> {
        match self {
            Failure::Breaker {
                provider, failed, ..
            }
            | Failure::Upstream {
                provider, failed, ..
            } => {
                if failed.is_empty() {
                    vec![provider.as_str()]
                } else {
                    failed.iter().map(|f| f.provider.as_str()).collect()
                }
            }
            Failure::Maintenance { held } => held.iter().map(|h| h.provider.as_str()).collect(),
            Failure::BulkheadFull
            | Failure::ClientShareFull(_)
            | Failure::ProviderShareFull { .. }
            | Failure::DeadlinePassed => Vec::new(),
        }
    }

    /// How long `provider`, one that failed this call, asked not to be called again, if it
    /// said.
    pub(crate) fn back_in(&self, provider: &str) -> Option<Duration> {
        match self {
            Failure::Breaker { failed, .. } | Failure::Upstream { failed, .. } => failed
                .iter()
                .find(|f| f.provider == provider)
                .and_then(|f| f.back_in),
            _ => None,
        }
    }

    /// This failure's provider as one that failed the call, with its `Retry-After`, if it
    /// said one.
    pub(crate) fn as_failed(&self) -> Option<Failed> {
        let (back_in, misconfigured) = match self {
            Failure::Upstream { error, .. } => (
                error.kind.retry_after(),
                matches!(error.kind, ErrorKind::Misconfigured { .. }),
            ),
            _ => (None, false),
        };
        self.provider().map(|provider| Failed {
            provider: provider.to_string(),
            back_in,
            misconfigured,
        })
    }

    /// This failure, the answer of a chain in which `failed` (in chain order) failed. A
    /// maintenance failure already names every provider held.
    pub(crate) fn after(mut self, mut all: Vec<Failed>) -> Self {
        let own = self.as_failed();
        if let Failure::Breaker {
            provider, failed, ..
        }
        | Failure::Upstream {
            provider, failed, ..
        } = &mut self
        {
            if !all.iter().any(|f| f.provider == *provider)
                && let Some(own) = own
            {
                all.push(own);
            }
            *failed = all;
        }
        self
    }

    /// The failure a chain answers with once `next` failed after `last` (the answer so far).
    ///
    /// A window says when its provider is back, so the windows of a chain held everywhere are
    /// kept together (the answer names each and the first end); a provider that failed
    /// otherwise may answer again much sooner than any window ends, so its failure is the
    /// answer whichever came first, and the windows are only named among the failed providers.
    ///
    /// A client over its share of providers is answered so only when that is all the chain
    /// did (every provider tried refused it, kept together; the answer names the first
    /// reset): any other failure is the tool's state, which the client should hear (a
    /// maintenance window, an outage, and above all a write that may have reached a provider),
    /// and it answers whichever came first. A deadline that passed before the next provider
    /// could be asked keeps the failure before it.
    pub(crate) fn joined(last: Option<Box<Failure>>, next: Failure) -> Box<Failure> {
        match (last, next) {
            (Some(mut last), Failure::ProviderShareFull { over: more }) => {
                if let Failure::ProviderShareFull { over } = last.as_mut() {
                    over.extend(more);
                }
                last
            }
            (Some(mut last), Failure::Maintenance { held: more }) => match last.as_mut() {
                Failure::Maintenance { held } => {
                    held.extend(more);
                    last
                }
                Failure::ProviderShareFull { .. } => Box::new(Failure::Maintenance { held: more }),
                _ => last,
            },
            // A provider the deadline left no time for says nothing of the tool; the one that
            // failed before it does (its timeout may be what used the time up).
            (Some(last), Failure::DeadlinePassed) => last,
            (_, next) => Box::new(next),
        }
    }

    /// Whether the next provider of the chain should not be tried: a refusal the model can fix
    /// would be refused there too, and a write that reached a provider must not be repeated.
    pub(crate) fn stops_chain(&self, write: bool) -> bool {
        match self {
            Failure::Upstream { error, .. } => {
                write || matches!(error.kind, ErrorKind::Rejected { .. })
            }
            Failure::BulkheadFull | Failure::ClientShareFull(_) | Failure::DeadlinePassed => true,
            // The next provider has a quota of its own.
            Failure::Breaker { .. }
            | Failure::Maintenance { .. }
            | Failure::ProviderShareFull { .. } => false,
        }
    }

    /// The `error.type` of a call that got no fresh answer (see `observe.rs`).
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            Failure::BulkheadFull => "bulkhead_full",
            Failure::ClientShareFull(_) => "client_share_full",
            Failure::ProviderShareFull { .. } => "provider_share_full",
            Failure::Breaker { .. } => "circuit_open",
            Failure::Maintenance { .. } => "maintenance",
            Failure::DeadlinePassed => "deadline_exceeded",
            Failure::Upstream { error, .. } => error.kind.as_str(),
        }
    }
}

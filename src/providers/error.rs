//! What can go wrong upstream, as the provider adapters classify it.
//!
//! Adapters know their provider's documented error semantics (Duffel's `type`/`code`, Amadeus's
//! numeric codes); the call pipeline knows what each kind means for the breaker and the answer.
//! This type is the hand-over: the adapter says *what happened*, never *what to do*.

use std::fmt;
use std::time::Duration;

/// A failed provider call.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamError {
    /// What happened.
    pub kind: ErrorKind,
    /// Detail for logs and operators (never secrets); not shown to models.
    pub detail: String,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// What a failed write may have done at the provider; reads leave it `Possible`, which
    /// nothing reads for them.
    pub effect: WriteEffect,
}

/// What a failed write may have done at the provider. Only the adapter knows which of its
/// requests failed, so it says so here; the answer policies decide what that means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteEffect {
    /// The write request may have reached the provider: the outcome is unknown unless the kind
    /// of failure proves otherwise (a refused connection, a refusal, a rate limit).
    #[default]
    Possible,
    /// The failure came before the write request was sent (the read a booking does first):
    /// nothing was written, and trying again is as safe as a read.
    NotSent,
    /// The provider answered that the write was not carried out (Duffel `order_not_created`):
    /// nothing was written, and the answer is final for this attempt.
    NotDone,
}

/// The classes of upstream failure.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// The attempt did not finish within its timeout.
    Timeout,
    /// No connection could be made (refused, DNS, TLS).
    Connect,
    /// The connection broke or the request could not be sent after connecting.
    Transport,
    /// The provider refused the request for a reason the model can fix (unknown airport,
    /// expired offer, validation error). Not a provider failure.
    Rejected {
        /// The provider's explanation, fit for a model.
        message: String,
    },
    /// The provider says we are over its rate limit.
    RateLimited {
        /// How long the provider asks us to wait.
        retry_after: Option<Duration>,
    },
    /// The provider failed (5xx).
    Server {
        /// The HTTP status.
        status: u16,
        /// How long the provider asks us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The provider refused our credentials or our request format: an operator must act.
    Misconfigured {
        /// The HTTP status.
        status: u16,
    },
    /// A success status whose body does not parse into the documented shape.
    Malformed,
}

impl ErrorKind {
    /// A stable short name for logs and metrics (`timeout`, `upstream_5xx`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::Transport => "transport",
            ErrorKind::Rejected { .. } => "rejected",
            ErrorKind::RateLimited { .. } => "rate_limited",
            ErrorKind::Server { .. } => "upstream_5xx",
            ErrorKind::Misconfigured { .. } => "misconfigured",
            ErrorKind::Malformed => "malformed",
        }
    }

    /// The wait the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ErrorKind::RateLimited { retry_after } | ErrorKind::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

/// The detail prefix an adapter uses for a rate limit that is an exhausted quota (Amadeus 429
/// code 38195): no retry helps until the quota resets, and the fallback says so.
pub const QUOTA_EXHAUSTED: &str = "quota exhausted";

/// The detail of a refusal the gateway made itself, before any write request.
pub const REFUSED_BY_GATEWAY: &str = "refused by the gateway before the write request";

/// The start of a refusal's message when the provider says the same write was already carried
/// out (Duffel 422 `duplicate_booking`): nothing new happened, and calling again cannot help.
pub const ALREADY_DONE: &str = "already booked";

/// The start of a refusal's message when the provider says the offer (or rate) was already
/// booked and the adapter found no booking under the call's own key: another client's booking,
/// or this client's under another key. Nothing was booked by this call.
pub const BOOKED_UNDER_ANOTHER_KEY: &str = "this offer or rate is already booked under another key";

/// The detail of a refusal that is the provider listing nothing for the call (an http
/// binding's `classify.empty`): it lists only some of what exists (FlightAware: departures
/// near today), so a later ask may find it. A model reads it as a refusal; a background job
/// asks again later instead of ending.
pub const NOT_LISTED: &str = "nothing listed for the call (classify.empty)";

impl UpstreamError {
    /// Whether the provider listed nothing for the call ([`NOT_LISTED`]).
    pub fn is_not_listed(&self) -> bool {
        matches!(self.kind, ErrorKind::Rejected { .. }) && self.detail == NOT_LISTED
    }

    /// Whether the provider refused a write because its offer was booked under another key
    /// ([`BOOKED_UNDER_ANOTHER_KEY`]).
    pub fn is_booked_under_another_key(&self) -> bool {
        matches!(&self.kind, ErrorKind::Rejected { message } if message.starts_with(BOOKED_UNDER_ANOTHER_KEY))
    }

    /// Whether the provider refused a write because the same one was already carried out.
    pub fn is_already_done(&self) -> bool {
        matches!(&self.kind, ErrorKind::Rejected { message } if message.starts_with(ALREADY_DONE))
    }

    /// Whether this is an exhausted quota rather than a passing rate limit.
    pub fn is_quota_exhausted(&self) -> bool {
        matches!(self.kind, ErrorKind::RateLimited { .. })
            && self.detail.starts_with(QUOTA_EXHAUSTED)
    }

    /// An error of `kind` with a log detail.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        UpstreamError {
            kind,
            detail: detail.into(),
            request_id: None,
            effect: WriteEffect::Possible,
        }
    }

    /// The same error, marked as happening before the write request was sent.
    pub fn before_write(self) -> Self {
        UpstreamError {
            effect: WriteEffect::NotSent,
            ..self
        }
    }

    /// A refusal the gateway makes itself before a write request (a booking over the client's
    /// budget): `message` is the whole text the caller reads, and nothing was sent.
    pub fn refused_by_gateway(message: String) -> Self {
        UpstreamError {
            kind: ErrorKind::Rejected { message },
            detail: REFUSED_BY_GATEWAY.into(),
            request_id: None,
            effect: WriteEffect::NotSent,
        }
    }

    /// Whether the gateway refused this itself ([`UpstreamError::refused_by_gateway`]).
    pub fn is_refused_by_gateway(&self) -> bool {
        matches!(self.kind, ErrorKind::Rejected { .. }) && self.detail == REFUSED_BY_GATEWAY
    }

    /// Whether a failed write may have been carried out by the provider: it may have been
    /// sent, and neither the provider nor the kind of failure says it was not.
    pub fn write_may_have_happened(&self) -> bool {
        self.effect == WriteEffect::Possible
            && !matches!(
                self.kind,
                ErrorKind::Connect
                    | ErrorKind::RateLimited { .. }
                    | ErrorKind::Misconfigured { .. }
                    | ErrorKind::Rejected { .. }
            )
    }
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.detail)?;
        if let Some(id) = &self.request_id {
            write!(f, " (request id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for UpstreamError {}

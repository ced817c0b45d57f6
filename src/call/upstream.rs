//! The provider seam: what the pipeline needs from a provider.
//!
//! The pipeline holds each provider of a tool as an `Arc<dyn Upstream>`, so something that is
//! not a socket can stand in for one. The gateway serves [`Provider`]s; the pipeline's own tests
//! use scripted upstreams to drive retries, deadlines, the bulkhead and cancellation on tokio's
//! paused clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::http_tool::Binding;
use crate::providers::{ErrorKind, FoundBooking, Provider, UpstreamError};
use crate::tools::{ToolOutput, ToolRequest};

/// One provider as the pipeline sees it.
pub trait Upstream: Send + Sync + fmt::Debug {
    /// `Some` when this provider can never serve `request`, whatever it would answer (an id
    /// another provider issued): the pipeline then skips it without a breaker permit or a
    /// request. Asked once per call and provider, before [`Upstream::call`].
    fn refuse(&self, request: &ToolRequest) -> Option<UpstreamError>;

    /// One attempt of `request`, which the provider may bound by `timeout` itself (the pipeline
    /// bounds it too). Dropping the future cancels the attempt.
    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>>;

    /// The account this provider is called with, as a digest of its credential (never the
    /// credential): breakers of scope `credential` are keyed by it. `None` for a stand-in
    /// without one, whose breakers are then keyed by the provider's name alone.
    fn account(&self) -> Option<String> {
        None
    }

    /// This provider serving the built-in tool `tool` through `binding` (an http provider the
    /// tool's file binds), as the tool's route to it; `None` for one that cannot.
    fn bound(&self, tool: &str, binding: &Arc<Binding>) -> Option<Arc<dyn Upstream>> {
        let _ = (tool, binding);
        None
    }

    /// Looks up the booking of `tool` sent for `client` under `idempotency_key`
    /// (reconciliation of an unknown outcome): `None` when the provider holds none. A stand-in
    /// that cannot look anything up says so as an error, which concludes nothing.
    fn find_booking<'a>(
        &'a self,
        tool: &'a str,
        client: &'a str,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<FoundBooking>, UpstreamError>> {
        let _ = (client, idempotency_key);
        Box::pin(async move {
            Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("this provider cannot look {tool} bookings up"),
            ))
        })
    }
}

impl Upstream for Provider {
    fn account(&self) -> Option<String> {
        Some(Provider::account(self).to_string())
    }

    fn refuse(&self, request: &ToolRequest) -> Option<UpstreamError> {
        Provider::refuse(self, request)
    }

    fn bound(&self, tool: &str, binding: &Arc<Binding>) -> Option<Arc<dyn Upstream>> {
        Provider::bound(self, tool, binding).map(|p| Arc::new(p) as Arc<dyn Upstream>)
    }

    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Provider::call(self, request, timeout)
    }

    fn find_booking<'a>(
        &'a self,
        tool: &'a str,
        client: &'a str,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<FoundBooking>, UpstreamError>> {
        Box::pin(Provider::find_booking(self, tool, client, idempotency_key))
    }
}

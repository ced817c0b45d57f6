//! The provider seam: what the pipeline needs from a provider.
//!
//! The pipeline holds each provider of a tool as an `Arc<dyn Upstream>`, so something that is
//! not a socket can stand in for one. The gateway serves [`Provider`]s; the pipeline's own tests
//! use scripted upstreams to drive retries, deadlines, the bulkhead and cancellation on tokio's
//! paused clock.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::providers::{Provider, UpstreamError};
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
}

impl Upstream for Provider {
    fn refuse(&self, request: &ToolRequest) -> Option<UpstreamError> {
        Provider::refuse(self, request)
    }

    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Box::pin(Provider::call(self, request, timeout))
    }
}

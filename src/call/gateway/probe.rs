//! The gateway asking a tool again itself: the arguments of the tool's last unanswered read
//! (`unanswered.rs` says why and which), while one of its breakers is half-open, so that a
//! provider that recovered closes its breaker without waiting for a caller.
//!
//! Only the back-in-service loop asks for this, and only for a tool some notice waits for: a
//! probe is a real provider call (quota, cost), made when a traveller is waiting to hear that
//! the tool is back. It runs the pipeline as any read does (bulkhead, the breaker's probe slots
//! and the fleet's probe lease, timeout, retries), so the breaker hears it as it hears every
//! probe, and a good answer is remembered as any read's is. It skips what only a caller needs:
//! the answer from memory (which would keep the provider from being asked at all), sharing
//! with identical reads, and the call's span and count (`faregate_tool_calls_total` counts callers'
//! calls); its provider attempt is counted and traced as every attempt is.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tokio::time::Instant;

use super::Gateway;
use crate::breaker::BreakerState;
use crate::call::answer;
use crate::call::envelope::CallInfo;
use crate::call::outcome::Failure;
use crate::call::pipeline::{self, CallTag, Share};
use crate::call::served::ServedTool;
use crate::providers::ErrorKind;
use crate::tools::{CallMode, ToolRequest};

/// What a probe came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probed {
    /// A provider answered.
    Answered,
    /// No provider answered (failed, or its breaker did not admit the probe).
    Unanswered,
    /// A provider refused the arguments as wrong: they are forgotten, and the provider is up.
    Refused,
    /// A provider answered that it lists nothing for them (a backup that knows only the days
    /// near today): it is up, and they are kept, since another provider of the chain whose
    /// breaker admits no probe yet may well list them.
    NotListed,
}

impl Gateway {
    /// Whether [`Gateway::probe`] would ask `tool` again now, given arguments: it is a read
    /// and one of its breakers is half-open.
    pub fn would_probe(&self, tool: &str) -> bool {
        self.tool(tool)
            .is_some_and(|tool| would_probe(&tool, Instant::now()))
    }

    /// The arguments (canonical JSON) of `tool`'s last unanswered read that this replica keeps,
    /// if they can still be asked (kept arguments whose date has passed are forgotten here);
    /// `None` for a write, which is never asked again.
    pub fn unanswered(&self, tool: &str) -> Option<String> {
        let tool = self.tool(tool).filter(|tool| !tool.is_write())?;
        askable(&tool).map(|(key, _)| key)
    }

    /// Keeps `arguments` (canonical JSON), a read of `tool` another replica (or this one before
    /// a restart) could not answer, unless this replica keeps arguments of its own already:
    /// [`Gateway::probe`] then asks with them, and forgets them as it forgets its own.
    pub fn adopt_unanswered(&self, tool: &str, arguments: &str) {
        if let Some(tool) = self.tool(tool).filter(|tool| !tool.is_write()) {
            tool.unanswered.adopt(arguments);
        }
    }

    /// Asks `tool` again with the arguments of its last unanswered read, if it is a read with
    /// such arguments kept and one of its breakers is half-open (admitting probes); `None`
    /// when there is nothing to ask. The future needs nothing borrowed, so it may be spawned.
    /// Arguments that can no longer be asked (their date has passed) or that a provider
    /// refused as wrong are forgotten; arguments a provider lists nothing for are kept.
    pub fn probe(
        self: &Arc<Self>,
        tool: &str,
    ) -> Option<impl Future<Output = Probed> + Send + 'static> {
        let served = self.served.load_full();
        let tool = served.tools.get(tool).cloned()?;
        let now = Instant::now();
        if !would_probe(&tool, now) {
            return None;
        }
        let (key, request) = askable(&tool)?;
        let deadline = now + tool.deadline(None);
        let gateway = Arc::clone(self);
        Some(async move {
            // The gateway's own call: no caller's id, no client, so no client's share.
            let cx = gateway.context(&served, CallTag::default());
            let mode = CallMode::Interactive;
            let ran = pipeline::run(&tool, &request, deadline, mode, Share::Free, cx).await;
            let probed = match ran {
                Ok(success) => {
                    let info = CallInfo::new(String::new(), tool.spec.name);
                    gateway.remember(&tool, &key, answer::fresh(info, success));
                    Probed::Answered
                }
                Err(Failure::Upstream { error, .. }) if error.is_not_listed() => Probed::NotListed,
                Err(Failure::Upstream { error, .. })
                    if matches!(error.kind, ErrorKind::Rejected { .. }) =>
                {
                    tool.unanswered.forget(&key);
                    Probed::Refused
                }
                Err(_) => Probed::Unanswered,
            };
            tracing::debug!(
                tool = tool.spec.name,
                ?probed,
                "asked a tool again for its back-in-service notices"
            );
            probed
        })
    }
}

/// Whether `tool` is a read with a half-open breaker (admitting probes).
fn would_probe(tool: &ServedTool, now: Instant) -> bool {
    !tool.is_write()
        && tool
            .breakers()
            .iter()
            .any(|b| b.state(now) == BreakerState::HalfOpen)
}

/// `tool`'s kept arguments and the request they make, if they can still be asked; arguments
/// that no longer pass the tool's checks (their date has passed) are forgotten.
fn askable(tool: &ServedTool) -> Option<(String, ToolRequest)> {
    let key = tool.unanswered.get()?;
    let checked = serde_json::from_str::<Value>(&key)
        .ok()
        .and_then(|arguments| tool.check(arguments, Gateway::today(), None).ok());
    let Some(request) = checked else {
        tool.unanswered.forget(&key);
        return None;
    };
    Some((key, request))
}

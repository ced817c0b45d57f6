//! The tool call path: the one way every tool call reaches a provider.
//!
//! ```text
//! CallRequest ─▶ look up the tool ─▶ check the arguments once (schema + semantic)
//!   ─▶ a read: answered from memory within `fresh_for`, else shared with identical reads in
//!      flight (one pipeline run for all of them)
//!   ─▶ pipeline: the client's share ─▶ bulkhead ─▶ for each provider: breaker permit
//!                ─▶ attempt (timeout ⊂ deadline) ─▶ classify ─▶ record ─▶ retry | next provider
//!   ─▶ Success ─▶ Envelope ok (an interactive read also keeps it as its last good result)
//!   ─▶ Failure ─▶ interactive: rejected (the provider's, or the client's share) | stale (with
//!                              its age) | outcome unknown | fallback text
//!             ─▶ background:  later (with its anchor) | never
//! ```
//!
//! [`Gateway::call`] is the entry point every protocol adapter (native HTTP, OpenAI, Anthropic,
//! MCP) uses, and all of them render the same [`Envelope`]; [`Gateway::run_background`] is the
//! job system's. Nothing is ever invented: a failure is answered with a refusal, an old result
//! that says its age, or the tool's text from `prompts/`.
//!
//! The files, each importing only the ones listed before it:
//! - `call_ids.rs`: the ids of calls that came without one (`fg_<tag>_<n>`, unique across
//!   replicas and restarts);
//! - `envelope.rs`: the result contract, one constructor per status;
//! - `classify.rs`: what an attempt's result means to the breaker (a table);
//! - `retry.rs`: which failures are worth another attempt;
//! - `last_good.rs`: the last good results, with their age (answered fresh within `fresh_for`,
//!   stale within `stale_for`);
//! - `progress.rs`: the steps a waiting caller may be told ([`Step`]: failing over, retrying);
//! - `coalesce.rs`: identical concurrent calls sharing one provider call (and its steps);
//! - `upstream.rs`: the provider seam ([`Upstream`]);
//! - `breaker_plan.rs`: which breaker guards a tool on a provider (the provider's breaker
//!   scope: the tool's own, or one every tool on the provider or account shares);
//! - `outcome.rs`: what the pipeline returns, `Success` or `Failure`;
//! - `unanswered.rs`: the arguments of a tool's last unanswered read, which the gateway asks
//!   again itself to learn that the tool is back when no caller does;
//! - `served.rs`: the tools as served ([`ServedTool`]: validator, provider chain, bulkhead
//!   and what each client holds of it, last good results, shared calls in flight);
//! - `observe.rs`: the `Observer` the path reports spans and metrics to;
//! - `pipeline.rs`: the upstream part, whose module docs say why its steps come in that order;
//! - `answer.rs`: the two answer policies, pure functions of a `Failure` and the facts around
//!   it;
//! - `reload.rs`: what one configuration serves (the tools and the maintenance windows) and
//!   how a reload builds a new set whole and installs it over the running breakers;
//! - `booking.rs`: write calls through the booking ledger (begin, answer from the ledger,
//!   finish, reconcile);
//! - `gateway/`: [`Gateway`] and both entry points (`read.rs`, `write.rs`, `background.rs`:
//!   the three ways a checked call goes on).
//!
//! The words a model reads are in `texts::call`.

mod answer;
mod booking;
mod breaker_plan;
mod call_ids;
mod classify;
mod coalesce;
mod envelope;
mod gateway;
mod last_good;
mod observe;
mod outcome;
mod pipeline;
mod progress;
mod reload;
mod retry;
mod served;
mod shared_text;
mod unanswered;
mod upstream;

#[cfg(test)]
mod tests;

pub use answer::{RateLimitHit, Verdict};
pub use envelope::{CallInfo, Data, Envelope, Status};
pub use gateway::{CallError, CallRequest, CheckError, Gateway, Probed};
pub use progress::{Step, StepSender};
pub use reload::{Prepared, ToolChanges};
pub use served::ServedTool;
pub use upstream::Upstream;

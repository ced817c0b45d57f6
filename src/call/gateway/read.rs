//! A read: answered from memory within the tool's `fresh_for`; otherwise shared with identical
//! reads in flight (one provider call, `coalesce.rs`), each caller waiting until its own
//! deadline and told the call's steps if it listens. A good answer is remembered once, by the
//! shared call; a failure is answered per caller (its stale result or its fallback).

use std::future::{Future, ready};
use std::sync::Arc;

use futures::future::Either;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tracing::Instrument;

use super::Gateway;
use crate::call::answer;
use crate::call::coalesce::Waiter;
use crate::call::envelope::{CallInfo, Envelope};
use crate::call::last_good::GoodResult;
use crate::call::observe::Observer;
use crate::call::outcome::Failure;
use crate::call::pipeline::{self, CallTag, Context, Reach, Share};
use crate::call::progress::{self, Step, StepSender, Steps};
use crate::call::reload::Served;
use crate::call::served::{ServedTool, SharedOutcome};
use crate::call::shared_text::SharedText;
use crate::clients::{ClientName, ShareSlot};
use crate::tools::{CallMode, ToolRequest};

/// Why a read did not lead a shared call.
enum NotLed {
    /// Refused before any provider was asked: the answer is this caller's alone.
    Refused(Box<Failure>),
    /// Its client is over its share of some of the providers' windows: the read runs alone
    /// (boxed: the request is large, and this is the rare way).
    Alone(Box<(ToolRequest, ClientName)>),
}

impl Gateway {
    /// A checked read (`deadlines`: the caller's and the tool's, from when it was asked): a
    /// repeat within the tool's `fresh_for` is answered from memory; otherwise
    /// the call joins an identical one in flight or leads a new one (`coalesce.rs`), and the
    /// caller waits for it until its own deadline. A good answer is remembered once, by the
    /// shared call; a failure is answered per caller (its stale result or its fallback).
    ///
    /// A plain function, as [`Gateway::answer`]: the memory look-up and the join are
    /// synchronous, and the future a waiting caller keeps ([`Gateway::await_shared`]) holds what
    /// answering it needs, not the request its shared call took.
    pub(super) fn answer_read(
        self: &Arc<Self>,
        (served, tool): (Arc<Served>, Arc<ServedTool>),
        (info, client): (CallInfo, ClientName),
        request: ToolRequest,
        (deadline, tool_deadline): (Instant, Instant),
        key: String,
        steps: Option<StepSender>,
    ) -> impl Future<Output = Envelope> + Send + '_ {
        if let Some((hit, age)) = tool
            .last_good
            .as_ref()
            .and_then(|memory| memory.fresh(&key, Instant::now()))
        {
            let (content, data, provider) = (
                hit.content.to_string(),
                hit.data.clone(),
                hit.provider.clone(),
            );
            let envelope = Envelope::cached(info, content, data, age.as_secs(), provider)
                .with_content_tail(&hit.content);
            return Either::Left(ready(envelope));
        }
        // Every breaker rejecting: nothing goes upstream, so there is nothing to share (and no
        // progress to report), and the fast-fail answer skips the shared call's task and channel.
        // Boxed: inline, the pipeline (several KB) would size the call future of every read,
        // also of the reads that wait below on a shared call and hold nothing of it (memory per
        // held call, BENCHMARKS.md); one allocation is small beside the fast-fail answer's cost.
        if tool.all_open(Instant::now()) {
            let alone = (request, deadline, key, true);
            let ran = self.read_alone((served, tool), (info, client), alone);
            return Either::Right(Either::Left(Box::pin(ran)));
        }
        // One copy of the key, shared by the call, its task and every caller waiting on it.
        let key: Arc<str> = key.into();
        // The caller, for its answer if the shared call fails (the tools its fallback names).
        let asker = client.clone();
        // The shared call runs to the tool's deadline, not to this caller's: a caller in a
        // hurry must not cut it short for the patient ones that join it (`coalesce.rs`).
        let shared_deadline = tool_deadline;
        // A caller that listens subscribes to the steps now, not when its future is first
        // polled: the shared call's task may run (fail over, report, answer) before that.
        let mut leader_steps = None;
        let joined =
            tool.shared_calls
                .try_join(Arc::clone(&key), shared_deadline, |shared_steps| {
                    // A caller leads only if no provider would refuse it for its share of the
                    // providers' windows: a refusal inside the shared call would be handed to
                    // every caller that joined it, of any client, and so would the answer of a
                    // provider further down the chain, reached because this client was refused
                    // at one that would take the others. Over its share at some of them, its
                    // call runs alone.
                    let cx = self.context(&served, CallTag::of(&info.call_id, &client));
                    match pipeline::check_provider_shares(&tool, &request, &cx) {
                        Err(refused) => return Err(NotLed::Refused(refused)),
                        Ok(Reach::Some) => return Err(NotLed::Alone(Box::new((request, client)))),
                        Ok(Reach::Every) => {}
                    }
                    // And only with a slot of its client's share, taken here, for the same
                    // reason. Joining a call in flight takes no slot.
                    let slot = pipeline::take_share(&tool, self.share_of(&client), &cx).map_err(
                        |over| NotLed::Refused(Box::new(Failure::ClientShareFull(over))),
                    )?;
                    if steps.is_some() {
                        leader_steps = Some(shared_steps.subscribe());
                    }
                    // The call that leads the shared read names it in the pipeline's log lines.
                    let read = self.shared_read(
                        (&served, &tool),
                        (info.call_id.clone(), client),
                        (request, slot),
                        shared_deadline,
                        Arc::clone(&key),
                        shared_steps,
                    );
                    Ok::<_, NotLed>(read.in_current_span())
                });
        let (waiter, leader) = match joined {
            Ok(joined) => joined,
            Err(NotLed::Refused(refused)) => {
                let answer = self.interactive_answer((&tool, &asker), info, &refused, None);
                return Either::Left(ready(answer));
            }
            Err(NotLed::Alone(alone)) => {
                let (request, client) = *alone;
                let alone = (request, deadline, key.to_string(), false);
                let ran = self.read_alone((served, tool), (info, client), alone);
                return Either::Right(Either::Left(Box::pin(ran)));
            }
        };
        // A caller who joined: its span says so and links to the leader's, under which the
        // shared call's attempts are (only while spans are exported).
        if let Some(leader) = leader {
            Observer::coalesced(&tracing::Span::current(), &leader);
        }
        let their_steps = steps.map(|to| (leader_steps.unwrap_or_else(|| waiter.steps()), to));
        Either::Right(Either::Right(self.await_shared(
            (tool, asker),
            info,
            deadline,
            key,
            waiter,
            their_steps,
        )))
    }

    /// A read that shares no call: every breaker rejecting (nothing would go upstream), or a
    /// client over its share of some of the providers' windows (what it reaches is its own).
    /// Only what every client would have got is remembered (`remember`): an answer when every
    /// breaker rejected (a probe's), never one a client reached past a provider that refused it
    /// alone.
    async fn read_alone(
        self: &Arc<Self>,
        (served, tool): (Arc<Served>, Arc<ServedTool>),
        (info, client): (CallInfo, ClientName),
        (request, deadline, key, remember): (ToolRequest, Instant, String, bool),
    ) -> Envelope {
        let cx = self.context(&served, CallTag::of(&info.call_id, &client));
        let share = self.share_of(&client);
        let mode = CallMode::Interactive;
        match pipeline::run(&tool, &request, deadline, mode, share, cx).await {
            Ok(success) if remember => self.remember(&tool, &key, answer::fresh(info, success)),
            Ok(success) => answer::fresh(info, success),
            Err(failure) => self.interactive_answer((&tool, &client), info, &failure, Some(&key)),
        }
    }

    /// A caller waiting on the shared call it joined, until the call's end or its own
    /// deadline, whichever comes first; told the call's steps if it listens.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
    )]
    pub(super) fn await_shared(
        self: &Arc<Self>,
        (tool, client): (Arc<ServedTool>, ClientName),
        info: CallInfo,
        deadline: Instant,
        key: Arc<str>,
        mut waiter: Waiter<SharedOutcome>,
        their_steps: Option<(broadcast::Receiver<Step>, StepSender)>,
    ) -> impl Future<Output = Envelope> + Send + '_ {
        async move {
            // The shared call ends by the tool's deadline; a caller in more of a hurry stops
            // waiting at its own (and counts out, as one that went away).
            let wait = async {
                if deadline < waiter.deadline() {
                    tokio::time::timeout_at(deadline, waiter.outcome())
                        .await
                        .ok()
                        .flatten()
                } else {
                    waiter.outcome().await
                }
            };
            // Forwarding boxed: it nearly triples the wait, and only a caller that listens
            // (MCP with a progress token) needs it, while every held call's future is as large
            // as its largest step (memory per held call, BENCHMARKS.md).
            let outcome = match their_steps {
                Some((from, to)) => Box::pin(progress::forwarding(wait, from, &to)).await,
                None => wait.await,
            };
            match outcome.as_deref() {
                Some(Ok(fresh)) => Envelope {
                    call_id: info.call_id,
                    ..fresh.clone()
                },
                Some(Err(failure)) => {
                    self.interactive_answer((&tool, &client), info, failure, Some(&key))
                }
                None => {
                    let passed = &Failure::DeadlinePassed;
                    self.interactive_answer((&tool, &client), info, passed, Some(&key))
                }
            }
        }
    }

    /// The one provider call that identical concurrent reads share: the pipeline (on the slot
    /// of its leader's share, `slot`), then a good answer rendered and remembered once for all
    /// of them.
    pub(super) fn shared_read(
        self: &Arc<Self>,
        (served, tool): (&Arc<Served>, &Arc<ServedTool>),
        (call_id, client): (String, ClientName),
        (request, slot): (ToolRequest, ShareSlot),
        deadline: Instant,
        key: Arc<str>,
        steps: Steps,
    ) -> impl std::future::Future<Output = SharedOutcome> + Send + 'static {
        let gateway = Arc::clone(self);
        let (served, tool) = (Arc::clone(served), Arc::clone(tool));
        async move {
            let cx = Context {
                steps: Some(&steps),
                ..gateway.context(&served, CallTag::of(&call_id, &client))
            };
            let (mode, share) = (CallMode::Interactive, Share::Taken(slot));
            let ran = pipeline::run(&tool, &request, deadline, mode, share, cx).await;
            // The call id is each caller's own, set when it is answered.
            let info = CallInfo::new(String::new(), tool.spec.name);
            Arc::new(ran.map(|success| gateway.remember(&tool, &key, answer::fresh(info, success))))
        }
    }

    /// Keeps a fresh answer as the tool's last good result for these arguments.
    pub(super) fn remember(&self, tool: &ServedTool, key: &str, envelope: Envelope) -> Envelope {
        if let (Some(memory), Some(data), Some(provider)) =
            (&tool.last_good, &envelope.data, &envelope.provider)
        {
            memory.put(
                key.to_string(),
                GoodResult {
                    data: data.clone(),
                    content: SharedText::new(envelope.content.clone()),
                    provider: provider.clone(),
                    fetched_at: Instant::now(),
                },
            );
        }
        envelope
    }
}

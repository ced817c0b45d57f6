//! One background attempt of a stored job: look up → check once → the ledger (for a write) →
//! pipeline → a [`Verdict`]. No fallback text and no stale answer: only what the job system
//! needs to decide between done, later and never.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{CallRequest, Gateway, refused_here};
use crate::call::answer::{self, Verdict};
use crate::call::booking::{self, Write};
use crate::call::envelope::{CallInfo, Envelope};
use crate::call::pipeline::{self, CallTag};
use crate::texts::call as texts;
use crate::tools::CallMode;

/// How long a job whose client may not call its tool now waits before it is tried again.
const NOT_ALLOWED_WAIT: Duration = Duration::from_secs(30);

/// How long a job whose tool this replica does not serve now waits before it is tried again.
const NOT_HERE_WAIT: Duration = NOT_ALLOWED_WAIT;

impl Gateway {
    /// Runs one background attempt of a stored job: look up → check once → pipeline →
    /// verdict. No fallback text and no stale answer: only what the job system needs to decide
    /// between done, later and never.
    pub async fn run_background(self: &Arc<Self>, req: CallRequest) -> Verdict {
        let served = self.served.load_full();
        // A tool this replica does not serve now is not the job's end either: in a fleet during
        // a rolling change of configuration, the replica that accepted the job serves its tool
        // and this one does not yet (or no longer). Nothing is sent; the job comes back, and
        // `[jobs] max_age` ends it if no replica serves the tool by then.
        let Some(tool) = served.tools.get(&req.tool).cloned() else {
            return Verdict::Later {
                anchor: Some(NOT_HERE_WAIT),
                error: texts::job_tool_not_served_now(&req.tool, NOT_HERE_WAIT),
                attempted: false,
                rate_limited: None,
            };
        };
        // A reload may have taken the client's key away or narrowed what it may call since the
        // job was accepted: nothing is sent (no booking, no quota spent). Not the job's end: in
        // a fleet, a replica a reload has not reached yet does not know a client just added, so
        // the job waits and comes back, and `[jobs] max_age` ends it if the client never may.
        if !self.may_call(&req.client, &tool) {
            return Verdict::Later {
                anchor: Some(NOT_ALLOWED_WAIT),
                error: texts::job_not_allowed_now(tool.spec.name, NOT_ALLOWED_WAIT),
                attempted: false,
                rate_limited: None,
            };
        }
        let info = CallInfo::new(self.call_id(req.call_id), tool.spec.name);
        let facts = self.ledger_facts(&tool, &req.arguments);
        // Valid at acceptance, perhaps invalid now: a travel date that has passed meanwhile.
        let checked = tool.check(req.arguments, Self::today(), req.idempotency_key.as_deref());
        let request = match checked {
            Ok(request) => request,
            Err(text) => {
                return Verdict::Never {
                    error: text.clone(),
                    envelope: Some(Envelope::invalid_arguments(info, text)),
                    attempted: false,
                };
            }
        };
        let deadline = Instant::now() + tool.deadline(req.deadline);
        let mut request = request;
        request.made_for(req.client.as_str());
        let write = Self::write(&tool, (&req.client, &info.call_id), &request, facts);
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            let begun = booking::begin(ledger, write).await;
            if let Some(verdict) = self.background_answered(write, info.clone(), &begun) {
                return verdict;
            }
            match self.apply_budget(ledger, write, &mut request).await {
                None => {}
                Some(Ok(text)) => {
                    return Verdict::Never {
                        error: text.clone(),
                        envelope: Some(refused_here(info, text)),
                        attempted: false,
                    };
                }
                Some(Err(error)) => {
                    return Verdict::Later {
                        anchor: None,
                        error,
                        attempted: false,
                        rate_limited: None,
                    };
                }
            }
        }
        // A job counts against its client's share as the client's interactive calls do: one
        // client's queue must not take every slot of a tool either.
        let ran = pipeline::run(
            &tool,
            &request,
            deadline,
            CallMode::Background,
            self.share_of(&req.client),
            self.context(&served, CallTag::of(&info.call_id, &req.client)),
        )
        .await;
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            booking::finish(ledger, &self.observer, write, &booking::outcome_of(&ran)).await;
        }
        match ran {
            Ok(success) => Verdict::Done(answer::fresh(info, success)),
            Err(failure) => {
                let now = Instant::now();
                let route = tool.route(failure.provider());
                // The chain's soonest provider back, as an interactive answer's `retry_after_s`.
                let (_, others_back, _) = self.chain_now(&tool, &failure, now);
                let facts = answer::Background {
                    info,
                    write: tool.is_write(),
                    remaining_open: route.and_then(|r| r.breaker.remaining_open(now)),
                    others_back,
                };
                answer::background(failure, facts)
            }
        }
    }

    /// A background write the ledger answered before any provider was asked: a booking made
    /// earlier is the job's result; the same booking at the provider now makes the job wait for
    /// its outcome; a conflict or an outcome still being learned ends the job (repeating it
    /// could book twice); a ledger that cannot be written sends nothing and the job runs again
    /// later.
    pub(super) fn background_answered(
        &self,
        write: &Write,
        info: CallInfo,
        begun: &Result<crate::ledger::Begin, crate::store::StoreError>,
    ) -> Option<Verdict> {
        let envelope = booking::answered(&self.observer, write, info, begun)?;
        Some(match begun {
            Err(e) => Verdict::Later {
                anchor: None,
                error: format!("booking ledger: {e}"),
                attempted: false,
                rate_limited: None,
            },
            Ok(crate::ledger::Begin::Recorded(entry))
                if entry.state == crate::ledger::State::Booked =>
            {
                Verdict::Done(envelope)
            }
            // The same booking is at the provider now (an interactive request of the client,
            // on any replica): ending the job with "not known yet" would be final for a
            // booking about to be answered; it waits for that outcome instead, sending nothing.
            Ok(crate::ledger::Begin::Recorded(entry))
                if entry.state == crate::ledger::State::Pending =>
            {
                Verdict::Later {
                    anchor: None,
                    error: crate::texts::ledger::pending_elsewhere(write.tool),
                    attempted: false,
                    rate_limited: None,
                }
            }
            Ok(_) => Verdict::Never {
                error: envelope.content.clone(),
                envelope: Some(envelope),
                attempted: false,
            },
        })
    }
}

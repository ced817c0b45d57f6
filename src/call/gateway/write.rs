//! A write: its ledger entry first (booked earlier, a conflict, over the client's daily budget
//! answer it before any provider is asked), then the pipeline on a task of its own that runs to
//! its end and records the outcome even if the caller goes away.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument;

use super::{Gateway, refused_here};
use crate::call::answer;
use crate::call::booking::{self, Write};
use crate::call::envelope::{CallInfo, Envelope};
use crate::call::outcome::{Failure, Success};
use crate::call::pipeline::{self, CallTag};
use crate::call::reload::Served;
use crate::call::served::ServedTool;
use crate::clients::ClientName;
use crate::ledger::{Ledger, Outcome, arguments_digest};
use crate::providers::{ErrorKind, UpstreamError};
use crate::texts::call as texts;
use crate::tools::spend::Budget;
use crate::tools::{CallMode, ToolRequest};

impl Gateway {
    /// A checked write: its ledger entry first (which may answer it: booked earlier, a
    /// conflict, over budget), then the pipeline, then the answer.
    ///
    /// The write runs to the tool's own deadline, whoever asked: a caller's shorter deadline
    /// (`asked`) only ends its wait, with an answer saying the booking is still under way.
    /// Cut at the caller's deadline, a booking request already at the provider would become
    /// an unknown outcome that the caller caused itself.
    pub(super) async fn answer_write(
        self: &Arc<Self>,
        (served, tool): (Arc<Served>, Arc<ServedTool>),
        (info, client): (CallInfo, ClientName),
        mut request: ToolRequest,
        asked: Option<Duration>,
        write: Option<Write>,
    ) -> Envelope {
        if let (Some(write), Some(ledger)) = (&write, self.ledger.get()) {
            let opened = Box::pin(self.open_write(ledger, write, info.clone(), &mut request));
            if let Some(envelope) = opened.await {
                return envelope;
            }
        }
        let now = Instant::now();
        let runs_until = now + tool.deadline(None);
        let answer_by = asked.map(|wait| now + wait).filter(|by| *by < runs_until);
        let call = (info.call_id.clone(), client.clone());
        match self
            .run_write(
                (&served, &tool),
                call,
                request,
                (runs_until, answer_by),
                write,
            )
            .await
        {
            Ok(Ok(success)) => answer::fresh(info, success),
            Ok(Err(failure)) => self.interactive_answer((&tool, &client), info, &failure, None),
            Err(StillRunning { provider }) => {
                let left = runs_until.saturating_duration_since(Instant::now());
                Envelope::unavailable(
                    info,
                    texts::write_still_running(tool.spec.name),
                    Some(left.as_secs().max(1)),
                    Some(provider),
                )
            }
        }
    }

    /// A write's ledger entry, before any provider is asked: `Some` is the answer when the
    /// ledger already answers it (booked earlier, a conflict, unwritable) or the client's budget
    /// refuses it; `None` lets it run, its spend limited to what the budget leaves.
    pub(super) async fn open_write(
        &self,
        ledger: &Ledger,
        write: &Write,
        info: CallInfo,
        request: &mut ToolRequest,
    ) -> Option<Envelope> {
        let begun = booking::begin(ledger, write).await;
        if let Some(envelope) = booking::answered(&self.observer, write, info.clone(), &begun) {
            return Some(envelope);
        }
        let refused = self.apply_budget(ledger, write, request).await;
        refused.map(|(Ok(text) | Err(text))| refused_here(info, text))
    }

    /// What the booking ledger holds now for `client`'s `key` of `tool`, as the answer to the
    /// key sent again after its background job ended (see `booking::on_record`; `arguments`
    /// are the job's, whose names a booking answers with); `None` when `tool` is no write,
    /// there is no ledger, or it has no entry for the key. A ledger that cannot be read answers
    /// `None` too: the caller then says what the job says.
    pub async fn booking_on_record(
        &self,
        (client, key): (&str, &str),
        arguments: &Value,
        info: CallInfo,
    ) -> Option<Envelope> {
        let ledger = self.ledger.get()?;
        let entry = match ledger.get(client, key, crate::clock::epoch_ms()).await {
            Ok(entry) => entry?,
            Err(e) => {
                tracing::warn!(
                    tool = info.tool.as_str(),
                    call_id = info.call_id.as_str(),
                    client,
                    idempotency_key = key,
                    error = %e,
                    "the booking ledger could not be read for a replayed key"
                );
                return None;
            }
        };
        let names = crate::tools::booked_names(arguments);
        (entry.tool == info.tool).then(|| booking::on_record(info, &entry, &names))
    }

    /// The text refusing a background booking of `client` whose idempotency `key` the ledger
    /// holds for another request (other arguments, or another write tool), as the interactive
    /// call is refused, instead of a `queued` job that could only end `dead` with those words.
    /// `None` when the key is free or this request's, when `tool` is no write or there is no
    /// ledger, and when the ledger cannot be read (the job's own run then asks it again).
    pub async fn key_taken(
        &self,
        client: &str,
        tool: &str,
        key: &str,
        arguments: &Value,
    ) -> Option<String> {
        let tool = self.tool(tool).filter(|t| t.is_write())?;
        let ledger = self.ledger.get()?;
        let entry = ledger
            .get(client, key, crate::clock::epoch_ms())
            .await
            .ok()??;
        let digest = arguments_digest(tool.spec.name, arguments);
        (entry.tool != tool.spec.name || entry.digest != digest).then(|| {
            crate::texts::ledger::key_reused(
                tool.spec.name,
                &entry.tool,
                entry.state == crate::ledger::State::Failed,
            )
        })
    }

    /// What the ledger needs of a write call's arguments, when a ledger will record it: their
    /// digest, and the names they give (for an answer from the ledger).
    pub(super) fn ledger_facts(
        &self,
        tool: &ServedTool,
        arguments: &Value,
    ) -> Option<(String, Vec<String>)> {
        (tool.is_write() && self.ledger.get().is_some()).then(|| {
            (
                arguments_digest(tool.spec.name, arguments),
                crate::tools::booked_names(arguments),
            )
        })
    }

    /// The ledger coordinates of a checked write call `call_id` of `client` (`facts`, from
    /// [`Self::ledger_facts`], are taken only for writes).
    pub(super) fn write(
        tool: &ServedTool,
        (client, call_id): (&ClientName, &str),
        request: &ToolRequest,
        facts: Option<(String, Vec<String>)>,
    ) -> Option<Write> {
        let key = request.idempotency_key()?.to_string();
        let (digest, names) = facts?;
        Some(Write {
            client: client.to_string(),
            tool: tool.spec.name,
            key,
            digest,
            names,
            call_id: call_id.to_string(),
        })
    }

    /// Limits a write to what the client's daily budget leaves, when it has one. `Some(Ok)`:
    /// the budget is spent, refused (final; the ledger says failed); `Some(Err)`: the ledger
    /// could not be read, so nothing is sent. Either is the text to answer.
    pub(super) async fn apply_budget(
        &self,
        ledger: &Ledger,
        write: &Write,
        request: &mut ToolRequest,
    ) -> Option<Result<String, String>> {
        let budget = self
            .budgets
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&write.client)
            .cloned()?;
        let (refusal, reason) = match booking::spend_limit(ledger, write, &budget).await {
            Ok(Ok(limit)) => {
                request.limit_spend(limit);
                return None;
            }
            Ok(Err(text)) => (Ok(text), "over_budget"),
            Err(e) => {
                booking::write_event!(
                    warn,
                    write,
                    error = %e,
                    "booking refused: the ledger could not be read for the budget"
                );
                (
                    Err(crate::texts::ledger::ledger_unwritable(write.tool)),
                    "ledger_unreadable",
                )
            }
        };
        let outcome = Outcome::Failed {
            provider: None,
            reason: reason.into(),
        };
        booking::finish(ledger, &self.observer, write, &outcome).await;
        Some(refusal)
    }

    /// Replaces every client's daily booking budget (the client configuration, at start and on
    /// each reload); bookings from then on are held to them.
    pub fn set_budgets(&self, budgets: BTreeMap<String, Budget>) {
        *self
            .budgets
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = budgets;
    }

    /// Sets (or, with `None`, removes) `client`'s daily booking budget; bookings from then on
    /// are held to it.
    pub fn set_budget(&self, client: &ClientName, budget: Option<Budget>) {
        let mut budgets = self
            .budgets
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match budget {
            Some(b) => budgets.insert(client.to_string(), b),
            None => budgets.remove(client.as_str()),
        };
    }

    /// Runs the pipeline for a write whose caller waits, until `runs_until`. It runs to
    /// completion on its own task even if the caller goes away (or stops waiting at
    /// `answer_by`), and records its outcome in the ledger there: dropping it halfway could
    /// leave a booking made at the provider with nobody told. (A read is cancelled when its
    /// last caller goes away, see `answer_read`.)
    pub(super) async fn run_write(
        self: &Arc<Self>,
        (served, tool): (&Arc<Served>, &Arc<ServedTool>),
        (call_id, client): (String, ClientName),
        request: ToolRequest,
        (runs_until, answer_by): (Instant, Option<Instant>),
        write: Option<Write>,
    ) -> Result<Result<Success, Failure>, StillRunning> {
        let gateway = Arc::clone(self);
        let first_provider = tool.route(None).map(|r| r.name.clone()).unwrap_or_default();
        let tool_name = tool.spec.name;
        let (served, tool) = (Arc::clone(served), Arc::clone(tool));
        // The task's panic is logged below, naming the call and its client.
        let (failed_call, failed_client) = (call_id.clone(), client.clone());
        let write_task = async move {
            let cx = gateway.context(&served, CallTag::of(&call_id, &client));
            let share = gateway.share_of(&client);
            let mode = CallMode::Interactive;
            let ran = pipeline::run(&tool, &request, runs_until, mode, share, cx).await;
            if let (Some(write), Some(ledger)) = (&write, gateway.ledger.get()) {
                booking::finish(ledger, &gateway.observer, write, &booking::outcome_of(&ran)).await;
            }
            ran
        };
        let task = tokio::spawn(write_task.in_current_span());
        let joined = match answer_by {
            None => task.await,
            Some(by) => match tokio::time::timeout_at(by, task).await {
                Ok(joined) => joined,
                Err(_) => {
                    return Err(StillRunning {
                        provider: first_provider,
                    });
                }
            },
        };
        Ok(match joined {
            Ok(ran) => ran,
            // The write's task failed (a defect: it panicked). Whether its request reached the
            // provider is not known, so neither is the outcome: the caller is told so, not that
            // nothing was booked, and the ledger entry, left pending, is reconciled.
            Err(e) => {
                tracing::error!(
                    tool = tool_name,
                    call_id = failed_call.as_str(),
                    client = failed_client.as_str(),
                    error = %e,
                    "a write's task failed; its outcome is unknown until reconciled"
                );
                Err(Failure::Upstream {
                    provider: first_provider,
                    error: UpstreamError::new(ErrorKind::Transport, "the write's task failed"),
                    failed: Vec::new(),
                })
            }
        })
    }
}

/// A write whose caller's deadline came before its end: it runs on, and lands in the ledger,
/// without the caller.
pub(super) struct StillRunning {
    /// The provider it went to first.
    provider: String,
}

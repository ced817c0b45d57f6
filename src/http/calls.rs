//! From a parsed call to the gateway or the job queue: the one path every protocol's calls
//! take (native, OpenAI, Anthropic, MCP).
//!
//! - An interactive call runs through [`Gateway::call`](crate::call::Gateway::call).
//! - A background call is stored as a job ([`submit`]); the answer is a `queued` envelope.
//! - An agent call ([`run_agent_call`]) gets its arguments normalised (strict-mode `null`s
//!   dropped) and a derived idempotency key where the tool needs one, and comes back as an
//!   [`AgentResult`] (the routes run a request's calls concurrently, in their order).
//!
//! Why a call did not run ([`NotRun`]) is answered by the native endpoint as an HTTP error and
//! by the agent protocols as an error result the model reads.

use std::future::Future;

use axum::http::StatusCode;
use axum::http::header::HeaderName;
use futures::FutureExt as _;
use futures::future::{self, Either};
use serde_json::json;

use super::edge::ApiError;
use super::edge::Caller;
use super::state::AppState;
use crate::agents::manifest::drop_optional_nulls;
use crate::agents::{AgentCall, AgentResult, CallOptions, idempotency};
use crate::call::ServedTool;
use crate::call::{CallError, CallInfo, CallRequest, Envelope, StepSender};
use crate::clients::Scope;
use crate::jobs::{NewJob, SubmitError};
use crate::texts::agents as texts;
use crate::tools::{CallMode, FieldError, describe_field_errors};
use crate::trace_context::TraceContext;

/// The [`DEADLINE_HEADER`](crate::agents::options::DEADLINE_HEADER) header's name, made once:
/// looked up by a `&str`, `HeaderMap::get` lowercases and checks the text on every call.
pub(crate) static DEADLINE_HEADER: HeaderName = HeaderName::from_static("faregate-deadline-ms");

/// Why a call was not run or stored.
#[derive(Debug)]
pub(crate) enum NotRun {
    /// No tool by that name is served.
    UnknownTool(String),
    /// The tool is served, but not to this client.
    OutOfScope(String),
    /// Background mode without a job store.
    NoJobStore,
    /// The callback URL was refused (the text says why).
    Callback(String),
    /// The job store did not answer.
    StoreDown,
}

impl NotRun {
    /// As the native endpoint answers it.
    pub(crate) fn into_api_error(self, state: &AppState, scope: &Scope) -> ApiError {
        match self {
            NotRun::UnknownTool(name) => unknown_tool(state, scope, &name),
            NotRun::OutOfScope(name) => out_of_scope(state, scope, &name),
            NotRun::NoJobStore => ApiError::new(StatusCode::NOT_IMPLEMENTED, texts::NO_JOB_STORE),
            NotRun::Callback(text) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, text)
                .with("field", json!("callback_url")),
            NotRun::StoreDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, texts::JOB_STORE_DOWN)
            }
        }
    }

    /// As the agent protocols answer it: a text the model reads.
    fn text(&self, state: &AppState, scope: &Scope) -> String {
        match self {
            NotRun::UnknownTool(name) => {
                texts::invalid_arguments(&unknown_tool_text(state, scope, name))
            }
            NotRun::OutOfScope(name) => texts::rejected(&out_of_scope_text(state, scope, name)),
            NotRun::NoJobStore => texts::unavailable(None, texts::NO_JOB_STORE),
            NotRun::Callback(text) => texts::invalid_arguments(text),
            NotRun::StoreDown => texts::unavailable(None, texts::JOB_STORE_DOWN),
        }
    }
}

/// The 404 for a tool that is not served, listing the ones the client may call.
pub(crate) fn unknown_tool(state: &AppState, scope: &Scope, name: &str) -> ApiError {
    let known = allowed_tools(state, scope);
    ApiError::not_found(texts::unknown_tool(name, &known)).with("known_tools", json!(known))
}

/// The text a model reads for a tool that is not served (the agent protocols' result, MCP's
/// error message): it names every tool the model was offered, the watch tools too, so a
/// misspelt `watch_creat` is told of `watch_create`.
pub(crate) fn unknown_tool_text(state: &AppState, scope: &Scope, name: &str) -> String {
    let mut offered = allowed_tools(state, scope);
    if watch_tools_offered(state, scope) {
        offered.extend(crate::agents::watch_tools::TOOLS.iter().map(|t| t.name));
    }
    texts::unknown_tool(name, &offered)
}

/// Whether a model of a client with `scope` is offered the watch tools: where the gateway keeps
/// watches and the scope has a read tool to watch.
pub(crate) fn watch_tools_offered(state: &AppState, scope: &Scope) -> bool {
    state.watches.is_some()
        && state
            .gateway
            .tools()
            .iter()
            .any(|t| !t.is_write() && in_scope(scope, t))
}

/// The 403 for a served tool outside the client's scope, naming the tools it may call.
pub(crate) fn out_of_scope(state: &AppState, scope: &Scope, name: &str) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, out_of_scope_text(state, scope, name))
        .with("allowed_tools", json!(allowed_tools(state, scope)))
}

/// The text for a tool outside the client's scope (the MCP adapter's error message too).
pub(crate) fn out_of_scope_text(state: &AppState, scope: &Scope, name: &str) -> String {
    texts::not_in_scope(name, &allowed_tools(state, scope))
}

/// The served tools `scope` allows, in catalog order: every list a client sees.
pub(crate) fn allowed_tools(state: &AppState, scope: &Scope) -> Vec<&'static str> {
    state
        .gateway
        .tools()
        .iter()
        .filter(|t| in_scope(scope, t))
        .map(|t| t.spec.name)
        .collect()
}

/// Whether `scope` allows `tool` (a write tool books, so it needs `may_book` too).
pub(crate) fn in_scope(scope: &Scope, tool: &ServedTool) -> bool {
    scope.allows(tool.spec.name, tool.is_write())
}

/// Runs one interactive call; `steps`, if given, hears what it does while it waits (failing
/// over, retrying).
///
/// A booking sent under the idempotency key of a background job of the same client and tool
/// that has not ended is that job's booking: nothing is sent beside it, and the answer names
/// the job (`queued`). Sent anyway, it could be answered "not booked" (a provider still down)
/// while the job books later, or book first and leave the job to replay it.
pub(crate) fn call(
    state: &AppState,
    request: CallRequest,
    steps: Option<StepSender>,
) -> impl Future<Output = Result<Envelope, NotRun>> + Send + '_ {
    // Not an `async fn`: that would keep `request` beside the call's own future, which has it.
    let run = move |request| {
        state
            .gateway
            .call_reporting(request, steps)
            .map(|answered| {
                answered.map_err(|CallError::UnknownTool { name, .. }| NotRun::UnknownTool(name))
            })
    };
    let jobs = state.jobs.as_ref().filter(|_| {
        request.idempotency_key.is_some()
            && state
                .gateway
                .tool(&request.tool)
                .is_some_and(|t| t.is_write())
    });
    let Some(jobs) = jobs else {
        return Either::Left(run(request));
    };
    // Boxed: only a booking with a key pays for the look-up's future.
    Either::Right(Box::pin(async move {
        let key = request.idempotency_key.as_deref().unwrap_or_default();
        match jobs.live_by_key(&request.client, &request.tool, key).await {
            Ok(Some(job)) => {
                let info = CallInfo::new(state.gateway.call_id(request.call_id), request.tool);
                let content = texts::booking_in_background(&job.tool, &job.id, job.status.as_str());
                return Ok(Envelope::queued(info, content, job.id));
            }
            Ok(None) => {}
            // The ledger, in the same store, still keeps the key from booking twice.
            Err(e) => tracing::warn!(
                tool = request.tool.as_str(),
                client = request.client.as_str(),
                error = %e,
                "the job store could not be read for a booking's idempotency key; booking without knowing of a job under it"
            ),
        }
        run(request).await
    }))
}

/// Stores a background call: a `queued` envelope with the job (or the existing job for a
/// repeated idempotency key of the same client, or, when that job has ended, what it came to:
/// [`ended_job`]), or an `invalid_arguments` envelope naming every bad field.
pub(crate) async fn submit(state: &AppState, job: NewJob) -> Result<Envelope, NotRun> {
    let Some(jobs) = &state.jobs else {
        return Err(NotRun::NoJobStore);
    };
    let tool = job.tool.clone();
    let call_id = job.call_id.clone();
    if job.idempotency_key.as_deref().is_some_and(|k| {
        // In any case: `WATCH:x` would list as a watch's run on SQLite, whose LIKE ignores
        // case, and as a call on PostgreSQL.
        let prefix = crate::jobs::WATCH_RUN_KEY_PREFIX;
        k.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    }) {
        return Ok(Envelope::invalid_arguments(
            CallInfo::new(state.gateway.call_id(call_id), tool),
            texts::key_kept_for_watches(crate::jobs::WATCH_RUN_KEY_PREFIX),
        ));
    }
    match jobs.submit(job).await {
        Ok((job, created)) => {
            let call_id = call_id.unwrap_or_else(|| job.id.clone());
            if !created && job.status.is_final() {
                return Ok(ended_job(state, &job, call_id).await);
            }
            let content = if created {
                texts::job_accepted(&job.id, job.callback_url.is_some())
            } else {
                texts::job_exists(&tool, &job.id, job.status.as_str())
            };
            Ok(Envelope::queued(
                CallInfo::new(call_id, tool),
                content,
                job.id,
            ))
        }
        Err(SubmitError::UnknownTool) => Err(NotRun::UnknownTool(tool)),
        Err(SubmitError::Invalid(text)) => Ok(Envelope::invalid_arguments(
            CallInfo::new(state.gateway.call_id(call_id), tool),
            text,
        )),
        Err(SubmitError::Callback(text)) => Err(NotRun::Callback(text)),
        Err(SubmitError::Store(e)) => {
            tracing::error!(error = %e, "could not store a background job");
            Err(NotRun::StoreDown)
        }
    }
}

/// The answer to a background call whose idempotency key names a job that has ended, instead
/// of a `queued` that would say the work is pending: for a booking, what the ledger holds now
/// (the booking, an outcome still being learned, or nothing booked; reconciliation may have
/// learned it after the job ended); else the job's result; else that it ended without one.
async fn ended_job(state: &AppState, job: &crate::jobs::Job, call_id: String) -> Envelope {
    let info = CallInfo::new(call_id, job.tool.clone());
    let on_record = match &job.idempotency_key {
        Some(key) => {
            state
                .gateway
                .booking_on_record((job.client.as_str(), key), &job.arguments, info.clone())
                .await
        }
        None => None,
    };
    let answer = on_record
        .or_else(|| {
            job.result
                .as_ref()
                .and_then(Envelope::from_stored)
                .map(|stored| Envelope {
                    call_id: info.call_id.clone(),
                    ..stored
                })
        })
        .unwrap_or_else(|| {
            Envelope::unavailable(
                info,
                texts::job_ended_without_result(
                    &job.tool,
                    &job.id,
                    job.status.as_str(),
                    job.last_error.as_deref(),
                ),
                None,
                None,
            )
        });
    Envelope {
        job_id: Some(job.id.clone()),
        ..answer
    }
}

/// Runs one agent call of `caller` to its model-readable result: a tool outside the caller's
/// scope is that call's error text, as an unknown tool is.
///
/// A plain function, not an `async fn`: the call is checked and taken apart before the future
/// that waits exists, so a held call keeps its request once (inside the gateway's call), its
/// call id, and the two references, and a background call's job store future is boxed apart
/// (memory per held call, BENCHMARKS.md).
pub(crate) fn run_agent_call<'a>(
    state: &'a AppState,
    caller: &'a Caller,
    call: AgentCall,
    options: CallOptions,
    steps: Option<StepSender>,
) -> impl Future<Output = AgentResult> + Send + 'a {
    let (run, call_id) = match prepare(state, caller, call, options) {
        Ok(ready) => ready,
        Err(not_run) => return Either::Left(future::ready(*not_run)),
    };
    let answer = match run {
        // Boxed, so that an interactive call's future is not as large as a job store's.
        Run::Background(job) => Either::Left(Box::pin(submit(state, job))),
        Run::Interactive(request) => Either::Right(self::call(state, request, steps)),
    };
    Either::Right(async move {
        match answer.await {
            Ok(envelope) => AgentResult::answered(call_id, envelope),
            Err(not_run) => AgentResult::not_run(call_id, not_run.text(state, &caller.scope())),
        }
    })
}

/// What an agent call becomes once checked.
enum Run {
    /// Stored as a job, exactly as the native endpoint does; the model is told where the
    /// result will be, and never waits for it.
    Background(NewJob),
    /// Run now.
    Interactive(CallRequest),
}

/// [`run_agent_call`]'s checks, in order: the tool is served, it is in the caller's scope, its
/// arguments were read; then the arguments lose their strict-mode `null`s and the call gets
/// its idempotency key. The call id comes back beside the call for the result; a call that
/// cannot run is its result already (boxed: it is the rare way).
fn prepare(
    state: &AppState,
    caller: &Caller,
    call: AgentCall,
    options: CallOptions,
) -> Result<(Run, Option<String>), Box<AgentResult>> {
    let AgentCall {
        tool: name,
        arguments,
        call_id,
        idempotency_key,
        trace,
    } = call;
    let scope = &caller.scope();
    let Some(tool) = state.gateway.tool(&name) else {
        let text = NotRun::UnknownTool(name).text(state, scope);
        return Err(Box::new(AgentResult::not_run(call_id, text)));
    };
    if !in_scope(scope, &tool) {
        let text = NotRun::OutOfScope(name).text(state, scope);
        return Err(Box::new(AgentResult::not_run(call_id, text)));
    }
    let arguments = match arguments {
        Ok(v) => drop_optional_nulls(&tool.spec.input_schema(), v),
        Err(why) => {
            let text = describe_field_errors(
                tool.spec.name,
                &[FieldError {
                    field: String::new(),
                    message: why,
                }],
            );
            return Err(Box::new(AgentResult::not_run(
                call_id,
                texts::invalid_arguments(&text),
            )));
        }
    };
    let idempotency_key = idempotency::key_for(tool.spec, idempotency_key, &arguments);
    let run = if options.mode == CallMode::Background {
        Run::Background(NewJob {
            tool: name,
            arguments,
            call_id: call_id.clone(),
            client: caller.client(),
            idempotency_key,
            callback_url: None,
            trace: trace.or_else(TraceContext::current),
        })
    } else {
        Run::Interactive(CallRequest {
            tool: name,
            arguments,
            call_id: call_id.clone(),
            idempotency_key,
            deadline: options.deadline,
            client: caller.client(),
            trace,
        })
    };
    Ok((run, call_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_header_name_is_the_documented_header() {
        assert!(
            DEADLINE_HEADER
                .as_str()
                .eq_ignore_ascii_case(crate::agents::options::DEADLINE_HEADER)
        );
    }
}

//! `POST /v1/openai/tool_calls` and `POST /v1/anthropic/tool_use`: the vendors' tool calls in,
//! their tool results out. The shapes are [`crate::agents::openai`] and
//! [`crate::agents::anthropic`]; here a body is read, its calls run concurrently, and the
//! results are rendered in the order the calls came. A call that cannot run (unknown tool,
//! malformed arguments) is that call's error text, never a failed batch.
//!
//! A call of a watch tool (`watch_create`, `watch_list`, `watch_delete`) is carried out by
//! [`super::watch_tools`]; every other call goes the way of every protocol's calls
//! ([`crate::http::calls::run_agent_call`]).

use std::future::Future;

use axum::Json;
use axum::body::Bytes;
use axum::extract::Request;
use axum::extract::rejection::BytesRejection;
use axum::handler::Handler;
use axum::http::HeaderMap;
use futures::future::{self, Either};
use serde_json::Value;

use super::native::header_deadline;
use super::taken::{self, Answering};
use super::watch_tools;
use crate::agents::{AgentCall, AgentResult, CallOptions, anthropic, openai, options};
use crate::http::calls::run_agent_call;
use crate::http::edge::{ApiError, Caller, read_json_body};
use crate::http::state::{AppState, SharedState};

/// The agent routes' handler: `AgentCalls::OPENAI` for `POST /v1/openai/tool_calls`,
/// `AgentCalls::ANTHROPIC` for `POST /v1/anthropic/tool_use`.
///
/// An axum [`Handler`] of its own, as the native route's (`native::CallTool`) is, and for the
/// same reason ([`taken`]): it parses the calls before the future that waits exists, so a held
/// call keeps its calls and nothing of the HTTP request they came in (memory per held call,
/// BENCHMARKS.md). Refusals are the ones the extractors gave: a body that cannot be read is
/// refused by [`read_json_body`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentCalls(Protocol);

/// The protocol an agent route speaks: how its body reads and its answer is shaped.
#[derive(Debug, Clone, Copy)]
enum Protocol {
    OpenAi,
    Anthropic,
}

impl AgentCalls {
    /// `POST /v1/openai/tool_calls`.
    pub(crate) const OPENAI: AgentCalls = AgentCalls(Protocol::OpenAi);
    /// `POST /v1/anthropic/tool_use`.
    pub(crate) const ANTHROPIC: AgentCalls = AgentCalls(Protocol::Anthropic);
}

impl Handler<AgentCalls, SharedState> for AgentCalls {
    type Future = Answering;

    fn call(self, request: Request, state: SharedState) -> Self::Future {
        let protocol = self.0;
        taken::handle(
            request,
            state,
            |_| (),
            move |state, _, (), headers, body| read_calls(protocol, state, headers, body),
            answer,
        )
    }
}

/// The calls of one request, and how their answer is shaped.
struct ReadCalls {
    calls: Vec<AgentCall>,
    options: CallOptions,
    render: Render,
}

/// The answer's shape.
enum Render {
    OpenAi(openai::Api, Vec<String>),
    Anthropic,
}

/// Reads the body as `protocol`'s calls.
fn read_calls(
    protocol: Protocol,
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<ReadCalls, ApiError> {
    let body = read_json_body(headers, body, state.max_body_bytes, state.browsers())?;
    let mut read = match protocol {
        Protocol::OpenAi => {
            let read = openai::parse(body)?;
            ReadCalls {
                calls: read.calls,
                options: read.options,
                render: Render::OpenAi(read.api, read.custom),
            }
        }
        Protocol::Anthropic => {
            let read = anthropic::parse(body)?;
            ReadCalls {
                calls: read.calls,
                options: read.options,
                render: Render::Anthropic,
            }
        }
    };
    // The header bounds every call of the body, as `deadline_ms` does; the shorter wins.
    let header = header_deadline(headers)?;
    read.options.deadline = options::shorter(read.options.deadline, header);
    Ok(read)
}

/// Runs the calls read and renders their results. A plain function: the read calls are taken
/// apart before the future that waits exists.
fn answer(
    state: SharedState,
    checked: Result<(ReadCalls, Caller), ApiError>,
) -> impl Future<Output = Result<Json<Value>, ApiError>> + Send {
    let (read, caller) = match checked {
        Ok(checked) => checked,
        Err(refused) => return Either::Left(future::ready(Err(refused))),
    };
    let ReadCalls {
        calls,
        options,
        render,
    } = read;
    Either::Right(async move {
        let results = run_calls(&state, &caller, calls, options).await;
        Ok(Json(match render {
            Render::OpenAi(api, custom) => openai::render(api, &custom, &results),
            Render::Anthropic => anthropic::render(&results),
        }))
    })
}

/// Runs the calls of one request of `caller` concurrently; the results come back in their
/// order. A call of a watch tool is boxed: the watch store's future would make every call's
/// as large.
fn run_calls<'a>(
    state: &'a AppState,
    caller: &'a Caller,
    calls: Vec<AgentCall>,
    options: CallOptions,
) -> impl Future<Output = Vec<AgentResult>> + Send + 'a {
    let runs = calls.into_iter().map(move |call| {
        if crate::agents::watch_tools::tool(&call.tool).is_some() {
            Either::Left(Box::pin(run_watch_call(state, caller, call, options)))
        } else {
            Either::Right(run_agent_call(state, caller, call, options, None))
        }
    });
    futures::future::join_all(runs)
}

/// A call of a watch tool, carried out by [`watch_tools`]; a call it does not take goes the
/// way of every call.
async fn run_watch_call(
    state: &AppState,
    caller: &Caller,
    call: AgentCall,
    options: CallOptions,
) -> AgentResult {
    let watched = watch_tools::run(
        state,
        caller,
        &call.tool,
        &call.arguments,
        call.call_id.clone(),
    );
    match watched.await {
        Some(result) => result,
        None => run_agent_call(state, caller, call, options, None).await,
    }
}

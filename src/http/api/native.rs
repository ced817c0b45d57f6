//! `POST /v1/tools/{tool}/call`: the native call endpoint. The body is read by
//! [`crate::agents::native`]; the answer is the envelope, with a status that says what happened
//! to the HTTP request (200 for every tool result, 202 for a queued job, 422 for invalid
//! arguments, 429 with `Retry-After` for a call its client's share of the tool refused, as the
//! edge answers a client over its other limits).

use std::future::Future;

use axum::Json;
use axum::body::Bytes;
use axum::extract::Request;
use axum::extract::rejection::BytesRejection;
use axum::handler::Handler;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::{self, Either};

use super::taken::{self, Answering};
use crate::agents::{self, native::NativeCall, options};
use crate::call::{CallRequest, Status};
use crate::http::calls;
use crate::http::edge::{ApiError, Caller, PathParam, read_json_body};
use crate::http::state::{AppState, SharedState};
use crate::jobs::NewJob;
use crate::tools::CallMode;
use crate::trace_context::TraceContext;

/// The handler, an axum [`Handler`] of its own rather than a function of extractors.
///
/// It takes what the call needs out of the request ([`taken`]), and checks the call and makes
/// it ready before the call's future exists, so a held call keeps the call's request once and
/// nothing of the HTTP request it came in (memory per held call, BENCHMARKS.md). It refuses
/// what the extractors refused, as they did: a path parameter that is not UTF-8 is a JSON 400,
/// and a body that cannot be read is refused by [`read_json_body`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallTool;

impl Handler<CallTool, SharedState> for CallTool {
    type Future = Answering;

    fn call(self, request: Request, state: SharedState) -> Self::Future {
        taken::handle(
            request,
            state,
            PathParam::read,
            |state, caller, tool, headers, body| {
                let PathParam(tool) = tool?;
                ready_call(state, caller, &tool, headers, body)
            },
            call_tool,
        )
    }
}

/// Runs a checked call: the interactive call's envelope, or the background call's job. A plain
/// function: the checked call is taken apart before the future that waits exists, which then
/// keeps only what answering needs.
fn call_tool(
    state: SharedState,
    checked: Result<(Ready, Caller), ApiError>,
) -> impl Future<Output = Result<Response, ApiError>> + Send {
    let (ready, caller) = match checked {
        Ok(checked) => checked,
        Err(refused) => return Either::Left(future::ready(Err(refused))),
    };
    let request = match ready {
        Ready::Interactive(request) => request,
        // Boxed: a job store's future is many kilobytes, and inline it would make every
        // interactive call's future that large too.
        Ready::Background(call) => {
            return Either::Right(Either::Left(Box::pin(async move {
                submit_background(&state, &caller, call).await
            })));
        }
    };
    Either::Right(Either::Right(async move {
        let envelope = calls::call(&state, request, None)
            .await
            .map_err(|e| e.into_api_error(&state, &caller.scope()))?;
        let status = match envelope.status {
            Status::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
            Status::Queued => StatusCode::ACCEPTED,
            // A per-client limit refused the call (its client holds its share of the tool):
            // 429 with Retry-After, as the edge answers a client over its other limits.
            Status::Rejected if envelope.limit.is_some() => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::OK,
        };
        // The envelope's data was serialized once when the result was made; its bytes are
        // copied here, not serialized again. The header value is static: from a `&str`, axum
        // would copy the text into a new allocation on every answer.
        let mut response = (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            envelope.to_json_bytes(),
        )
            .into_response();
        if status == StatusCode::TOO_MANY_REQUESTS
            && let Some(secs) = envelope.retry_after_s
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        Ok(response)
    }))
}

/// A call read from its request, to run now or to queue.
enum Ready {
    Interactive(CallRequest),
    Background(NativeCall),
}

/// [`call_tool`]'s checks: the tool exists and is in the client's scope, the body reads as a
/// call, the deadline header is valid.
fn ready_call(
    state: &AppState,
    caller: &Caller,
    tool: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Ready, ApiError> {
    let scope = caller.scope();
    match state.gateway.tool(tool) {
        None => return Err(calls::unknown_tool(state, &scope, tool)),
        Some(served) if !calls::in_scope(&scope, &served) => {
            return Err(calls::out_of_scope(state, &scope, tool));
        }
        Some(_) => {}
    }
    // The request's head and body share hyper's read buffer for the connection: both are let
    // go of before the call waits (the caller drops the headers), so that buffer is reused
    // for the next read instead of a second one being allocated beside it while the call is
    // held.
    let value = read_json_body(headers, body, state.max_body_bytes, state.browsers())?;
    let call = agents::native::parse(tool, value)?;
    if call.options.mode == CallMode::Background {
        return Ok(Ready::Background(call));
    }
    Ok(Ready::Interactive(CallRequest {
        tool: call.tool,
        arguments: call.arguments,
        call_id: call.call_id,
        idempotency_key: call.idempotency_key,
        deadline: options::shorter(call.options.deadline, header_deadline(headers)?),
        client: caller.client(),
        trace: None,
    }))
}

/// The caller's deadline from the `Faregate-Deadline-Ms` header, for clients that set headers
/// once rather than a body field per call; with `deadline_ms` in the body too, the shorter wins.
/// The OpenAI and Anthropic routes read it too (`agents.rs`), for every call of their body.
pub(super) fn header_deadline(
    headers: &HeaderMap,
) -> Result<Option<std::time::Duration>, ApiError> {
    let Some(value) = headers.get(&calls::DEADLINE_HEADER) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    options::parse_deadline_header(&text)
        .map(Some)
        .map_err(|problem| {
            ApiError::bad_request(crate::texts::agents::invalid_header(
                options::DEADLINE_HEADER,
                &problem,
            ))
        })
}

/// Accepts a background call: 202 with the job, or the existing job for a repeated
/// idempotency key; 422 for invalid arguments, as interactive calls get.
async fn submit_background(
    state: &AppState,
    caller: &Caller,
    call: NativeCall,
) -> Result<Response, ApiError> {
    let job = NewJob {
        tool: call.tool,
        arguments: call.arguments,
        call_id: call.call_id,
        client: caller.client(),
        idempotency_key: call.idempotency_key,
        callback_url: call.callback_url,
        trace: TraceContext::current(),
    };
    let envelope = calls::submit(state, job)
        .await
        .map_err(|e| e.into_api_error(state, &caller.scope()))?;
    let status = match envelope.status {
        Status::InvalidArguments => StatusCode::UNPROCESSABLE_ENTITY,
        Status::Queued => StatusCode::ACCEPTED,
        // A key whose job has ended: answered with what it came to.
        _ => StatusCode::OK,
    };
    Ok((status, Json(envelope)).into_response())
}

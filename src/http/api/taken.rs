//! A call route's request taken apart before its call waits: the one shape of the call routes'
//! own handlers (`native::CallTool`, `agents::AgentCalls`).
//!
//! axum's handler for a function of extractors keeps the request's head (headers, extensions,
//! URI) and the state beside the function's future until the answer. A held call needs none
//! of it, so [`handle`] takes the headers, the caller and what else the route reads out of the
//! head, reads the body in a box of its own that is gone once the body is read, and lets the
//! route check the call before the future that waits exists (memory per held call,
//! BENCHMARKS.md).

use std::future::Future;
use std::pin::Pin;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;

use crate::http::edge::{ApiError, Caller};
use crate::http::state::{AppState, SharedState};

/// A call route's answer, as its `Handler` returns it.
pub(crate) type Answering = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Answers a call route's `request`:
/// - `read_head` reads what the route needs from the head (a path parameter, say) before the
///   head goes with the body's read;
/// - once the body is read, `check` makes the call ready from the caller the client check
///   found, what `read_head` read, the headers and the body (its refusals are the answer);
/// - `answer` then runs the ready call (or answers the refusal): its future is the one that
///   waits, and keeps only what it was given.
pub(crate) fn handle<T, R, F, O>(
    request: Request,
    state: SharedState,
    read_head: impl FnOnce(&mut Parts) -> T,
    check: impl FnOnce(
        &AppState,
        &Caller,
        T,
        &HeaderMap,
        Result<Bytes, BytesRejection>,
    ) -> Result<R, ApiError>
    + Send
    + 'static,
    answer: impl FnOnce(SharedState, Result<(R, Caller), ApiError>) -> F + Send + 'static,
) -> Answering
where
    T: Send + 'static,
    F: Future<Output = Result<O, ApiError>> + Send + 'static,
    O: IntoResponse + 'static,
{
    let (mut parts, body) = request.into_parts();
    let headers = std::mem::take(&mut parts.headers);
    let caller = parts.extensions.remove::<Caller>();
    let head = read_head(&mut parts);
    // Boxed, and gone once the body is read: reading it takes more than the call keeps.
    let body = Box::pin(Bytes::from_request(Request::from_parts(parts, body), &()));
    Box::pin(
        body.then(move |body| {
            let checked = match caller {
                Some(caller) => {
                    check(&state, &caller, head, &headers, body).map(|ready| (ready, caller))
                }
                None => Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "this call route is not behind the client check",
                )),
            };
            // The head and the body share hyper's read buffer for the connection: let go of
            // before the call waits, it is reused for the next read.
            drop(headers);
            answer(state, checked)
        })
        .map(IntoResponse::into_response),
    )
}

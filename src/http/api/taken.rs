//! A call route's request taken apart before its call waits: what the call routes' own
//! handlers (`native::CallTool`, `agents::AgentCalls`) keep, and what they let go of.
//!
//! axum's handler for a function of extractors keeps the request's head (headers, extensions,
//! URI) and the state beside the function's future until the answer. A held call needs none
//! of it, so these handlers take the headers, the caller and what else the route reads out of
//! the head, and read the body in a box of its own that is gone once the body is read (memory
//! per held call, BENCHMARKS.md).

use std::future::Future;
use std::pin::Pin;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::http::edge::Caller;

/// The body being read, the way axum's `Bytes` extractor reads it.
pub(crate) type BodyRead = Pin<Box<dyn Future<Output = Result<Bytes, BytesRejection>> + Send>>;

/// What a call route takes out of its request.
pub(crate) struct Taken<T> {
    /// The request's headers (the body's content type and size, the deadline header).
    pub headers: HeaderMap,
    /// Who is calling, as the client check established it (`None` off that check's routes).
    pub caller: Option<Caller>,
    /// What `read_head` read from the rest of the head (a path parameter, say).
    pub head: T,
    /// The body, read by its own boxed future.
    pub body: BodyRead,
}

/// Takes `request` apart; `read_head` reads what the route needs from the head before it is
/// handed to the body's read and dropped with it.
pub(crate) fn take<T>(request: Request, read_head: impl FnOnce(&mut Parts) -> T) -> Taken<T> {
    let (mut parts, body) = request.into_parts();
    let headers = std::mem::take(&mut parts.headers);
    let caller = parts.extensions.remove::<Caller>();
    let head = read_head(&mut parts);
    let body = Box::pin(Bytes::from_request(Request::from_parts(parts, body), &()));
    Taken {
        headers,
        caller,
        head,
        body,
    }
}

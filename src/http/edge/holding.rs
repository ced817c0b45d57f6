//! [`holding`]: an answer whose body keeps something alive until it is sent or dropped.
//!
//! A handler's future ends when the answer's head is ready, but a streamed answer (an MCP call
//! answered as an event stream, any answer over HTTP/2) is still being produced after that. What
//! must last as long as the answer itself (a client's in-flight slot, an HTTP/2 stream's count)
//! rides in the body instead, and is released when hyper has sent the last frame or the client
//! went away.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use hyper::body::{Frame, SizeHint};

/// `response` with `held` kept until its body is sent or dropped.
pub(crate) fn holding<T: Send + Unpin + 'static>(response: Response, held: T) -> Response {
    response.map(|body| Body::new(Holding { body, _held: held }))
}

/// A body that keeps `T` alive; size and end are the inner body's, so a JSON answer keeps its
/// `content-length`.
struct Holding<T> {
    body: Body,
    _held: T,
}

impl<T: Unpin> hyper::body::Body for Holding<T> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    #[tokio::test]
    async fn what_it_holds_lasts_until_the_body_is_read_and_the_length_stays() {
        let released = Arc::new(AtomicBool::new(false));
        let answer = holding(
            Response::new(Body::from("{\"ok\":true}")),
            Flag(Arc::clone(&released)),
        );
        assert!(
            !released.load(Ordering::Relaxed),
            "held while the answer is unsent"
        );
        let body = answer.into_body();
        assert_eq!(hyper::body::Body::size_hint(&body).exact(), Some(11));
        let bytes = axum::body::to_bytes(body, 1024)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&bytes[..], b"{\"ok\":true}");
        assert!(
            released.load(Ordering::Relaxed),
            "released once the body is gone"
        );
    }
}

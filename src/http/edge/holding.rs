//! [`holding`]: an answer whose body keeps something alive until it is sent or dropped.
//!
//! A handler's future ends when the answer's head is ready, but a streamed answer (an MCP call
//! answered as an event stream, any answer over HTTP/2) is still being produced after that. What
//! must last as long as the answer itself (a client's in-flight slot, an HTTP/2 stream's count)
//! rides in the body instead, and is released when hyper has sent the last frame or the client
//! went away.
//!
//! [`ending_at`]: an event stream that ends (as a stream that is done, not an error) once a token
//! is cancelled: graceful shutdown ends `GET /mcp` this way, without cancelling what rmcp runs.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

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

/// `response` (an event stream) ending once `end` is cancelled: the frames sent so far stay, the
/// stream is done, and its inner body is dropped with whatever it holds.
pub(crate) fn ending_at(response: Response, end: CancellationToken) -> Response {
    response.map(|body| {
        Body::new(Ending {
            body,
            end: Box::pin(end.cancelled_owned()),
            ended: false,
        })
    })
}

/// A body that is done once its token is cancelled (boxed: the wait is not `Unpin`).
struct Ending {
    body: Body,
    end: Pin<Box<WaitForCancellationFutureOwned>>,
    ended: bool,
}

impl hyper::body::Body for Ending {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.ended || this.end.as_mut().poll(cx).is_ready() {
            this.ended = true;
            return Poll::Ready(None);
        }
        Pin::new(&mut this.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    /// None: a body that may end early cannot promise a length.
    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
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

    #[tokio::test]
    async fn an_endless_stream_ends_once_its_token_is_cancelled() {
        use futures::StreamExt as _;

        let first = futures::stream::once(async {
            Ok::<_, std::convert::Infallible>(axum::body::Bytes::from("data: 1\n\n"))
        });
        let endless = first.chain(futures::stream::pending());
        let end = CancellationToken::new();
        let answer = ending_at(Response::new(Body::from_stream(endless)), end.clone());
        let mut events = answer.into_body().into_data_stream();
        let first = events
            .next()
            .await
            .unwrap_or_else(|| panic!("the first event"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&first[..], b"data: 1\n\n");
        let wait = std::time::Duration::from_millis(50);
        let open = tokio::time::timeout(wait, events.next()).await;
        assert!(open.is_err(), "open until the token is cancelled");
        end.cancel();
        let done = tokio::time::timeout(std::time::Duration::from_secs(1), events.next())
            .await
            .unwrap_or_else(|_| panic!("the stream did not end"));
        assert!(done.is_none(), "ended as a stream that is done");
    }
}

//! Closing a connection so that its last answer arrives.
//!
//! When the gateway answers before it has read the whole request (a 413 for a body over the
//! limit, refused from its `Content-Length` or while reading), the rest of the body is still
//! on its way. Closing the socket with unread data makes the kernel send a reset, and a reset
//! that reaches the client before it has read the answer destroys the answer in the client's
//! receive buffer: it sees "connection reset" instead of the 413.
//!
//! [`Lingering`] wraps the socket so that closing it is done in two steps: first the write side
//! is shut down (the answer is flushed and followed by a FIN, so the client sees its end), then
//! whatever the client still sends is read and discarded until it closes its side, up to
//! [`DRAIN_BYTES`] or [`DRAIN_FOR`], whichever comes first. Only then is the socket dropped,
//! with nothing unread, so no reset follows the answer. A client that closes at once (every
//! well-behaved client after `Connection: close`) costs nothing extra.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// The most that is read and discarded after the answer. Many simple clients write their
/// whole body before they read anything; they only see a refusal if the gateway keeps reading
/// what they send. 8 MiB is many times the default body limit (256 KiB) and bounds what a
/// client can make the gateway read for nothing.
pub(crate) const DRAIN_BYTES: usize = 8 << 20;

/// The longest a closing connection keeps reading (and its connection slot stays taken).
pub(crate) const DRAIN_FOR: Duration = Duration::from_secs(2);

/// A TCP stream whose shutdown drains the peer before it ends (see the module docs).
#[derive(Debug)]
pub(crate) struct Lingering {
    stream: TcpStream,
    closing: Closing,
}

#[derive(Debug)]
enum Closing {
    /// Not closing.
    Open,
    /// The write side is shut; reading until the peer closes or a bound is reached.
    Draining { until: Pin<Box<Sleep>>, left: usize },
    /// Done: nothing more is read.
    Closed,
}

impl Lingering {
    pub(crate) fn new(stream: TcpStream) -> Self {
        Lingering {
            stream,
            closing: Closing::Open,
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.closing {
                Closing::Open => {
                    ready!(Pin::new(&mut this.stream).poll_shutdown(cx))?;
                    this.closing = Closing::Draining {
                        until: Box::pin(tokio::time::sleep(DRAIN_FOR)),
                        left: DRAIN_BYTES,
                    };
                }
                Closing::Draining { until, left } => {
                    if until.as_mut().poll(cx).is_ready() {
                        this.closing = Closing::Closed;
                        continue;
                    }
                    let mut scratch = [0u8; 8192];
                    let mut buf = ReadBuf::new(&mut scratch);
                    match Pin::new(&mut this.stream).poll_read(cx, &mut buf) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                            *left = left.saturating_sub(buf.filled().len());
                            if *left == 0 {
                                this.closing = Closing::Closed;
                            }
                        }
                        // The peer closed its side, or the socket failed: nothing more to read.
                        Poll::Ready(_) => this.closing = Closing::Closed,
                    }
                }
                Closing::Closed => return Poll::Ready(Ok(())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A connected pair: the server's end (wrapped) and the client's.
    async fn pair() -> (Lingering, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let client = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (server, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        (Lingering::new(server), client)
    }

    #[tokio::test]
    async fn the_answer_ends_with_a_fin_and_what_the_client_sent_is_read_before_the_close() {
        let (mut server, mut client) = pair().await;
        // The client sent more than the server read (the rest of a refused body).
        client
            .write_all(&[b'x'; 100_000])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let peer = tokio::spawn(async move {
            let mut answer = Vec::new();
            // The answer, then the end of the stream: the server shut its write side.
            client.read_to_end(&mut answer).await.map(|_| answer)
            // The client's end drops here, closing its side.
        });
        server
            .write_all(b"HTTP/1.1 413")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        server.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
        let answer = peer
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer, b"HTTP/1.1 413");
        // Nothing of the client's is left unread, so closing sends no reset.
        let mut rest = [0u8; 16];
        let n = server
            .stream
            .read(&mut rest)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n, 0, "the drain read to the client's end");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_closes_is_left_after_drain_for() {
        let (mut server, _client) = pair().await;
        let started = tokio::time::Instant::now();
        server.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(started.elapsed() >= DRAIN_FOR, "{:?}", started.elapsed());
        assert!(matches!(server.closing, Closing::Closed));
    }
}

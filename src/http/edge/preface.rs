//! Telling HTTP/2 with prior knowledge from HTTP/1.1 by the first bytes a client sends.
//!
//! A client that knows the gateway speaks HTTP/2 (h2load, gRPC-style clients, reqwest's
//! `http2_prior_knowledge`) opens with the 24-byte connection preface; an HTTP/1.1 client opens
//! with a method name, which differs from the preface within its first two bytes. [`sniff`]
//! reads only as far as it takes to tell them apart, and [`Rewind`] hands what it read back to
//! whichever protocol then reads the connection, so neither sees a byte missing.
//!
//! hyper-util's `auto::Builder` does the same, but reads without a timer; the caller here bounds
//! the sniff by the header read timeout, so a client that connects and sends nothing holds its
//! connection slot no longer than a slow HTTP/1.1 head would.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The HTTP/2 client connection preface.
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Which protocol a connection speaks, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// Anything that is not the HTTP/2 preface (hyper's HTTP/1 parser judges the rest).
    Http1,
    /// The whole preface arrived.
    Http2,
}

/// What [`sniff`] read, to be handed back through [`Rewind`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sniffed {
    bytes: [u8; PREFACE.len()],
    len: usize,
}

/// Reads until the bytes differ from the preface or the whole preface has arrived. A client
/// that closes before either is an `UnexpectedEof` error (there is nothing to answer).
pub(crate) async fn sniff<I: AsyncRead + Unpin>(io: &mut I) -> io::Result<(Protocol, Sniffed)> {
    let mut read = Sniffed {
        bytes: [0; PREFACE.len()],
        len: 0,
    };
    while read.len < PREFACE.len() {
        let n = io.read(&mut read.bytes[read.len..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let end = read.len + n;
        if read.bytes[read.len..end] != PREFACE[read.len..end] {
            read.len = end;
            return Ok((Protocol::Http1, read));
        }
        read.len = end;
    }
    Ok((Protocol::Http2, read))
}

/// An IO that first reads back the bytes [`sniff`] took, then reads on from the connection.
/// They live inline (24 bytes), so a connection costs no extra allocation.
#[derive(Debug)]
pub(crate) struct Rewind<I> {
    sniffed: Sniffed,
    at: usize,
    inner: I,
}

impl<I> Rewind<I> {
    pub(crate) fn new(sniffed: Sniffed, inner: I) -> Self {
        Rewind {
            sniffed,
            at: 0,
            inner,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.sniffed.len {
            let left = &this.sniffed.bytes[this.at..this.sniffed.len];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    /// Sniffs `chunks` (each one read) and returns the protocol and everything read back.
    async fn sniffed(chunks: &[&[u8]]) -> (Protocol, Vec<u8>) {
        let mut io = tokio_test_io(chunks);
        let (protocol, read) = sniff(&mut io).await.unwrap_or_else(|e| panic!("{e}"));
        let mut all = Vec::new();
        Rewind::new(read, io)
            .read_to_end(&mut all)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        (protocol, all)
    }

    /// An in-memory reader that returns each chunk from its own read.
    fn tokio_test_io(chunks: &[&[u8]]) -> impl AsyncRead + Unpin {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let chunks: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            for c in chunks {
                let _ = client.write_all(&c).await;
                let _ = client.flush().await;
                tokio::task::yield_now().await;
            }
        });
        server
    }

    #[tokio::test]
    async fn a_method_name_is_http1_and_nothing_is_lost() {
        let request = b"POST /v1/tools/x/call HTTP/1.1\r\nhost: a\r\n\r\n";
        let (protocol, all) = sniffed(&[request]).await;
        assert_eq!(protocol, Protocol::Http1);
        assert_eq!(all, request);
    }

    #[tokio::test]
    async fn the_preface_in_pieces_is_http2_and_the_frames_after_it_follow() {
        let (protocol, all) = sniffed(&[b"PRI * HT", b"TP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04"]).await;
        assert_eq!(protocol, Protocol::Http2);
        assert_eq!(&all[..24], PREFACE);
        assert_eq!(&all[24..], b"\0\0\0\x04");
    }

    #[tokio::test]
    async fn a_client_that_closes_at_once_is_an_early_end() {
        let mut io = tokio_test_io(&[b"PRI"]);
        let e = sniff(&mut io).await.err().map(|e| e.kind());
        assert_eq!(e, Some(io::ErrorKind::UnexpectedEof));
    }
}

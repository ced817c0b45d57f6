//! Switching an HTTP/1.1 connection to HTTP/2 (`Upgrade: h2c`), as `curl --http2 http://…` asks.
//!
//! The HTTP/2 specification of 2015 lets a client ask for HTTP/2 on an HTTP/1.1 request
//! (`Connection: Upgrade, HTTP2-Settings`, `Upgrade: h2c`, `HTTP2-Settings: …`); the server
//! answers `101 Switching Protocols`, and then the *same* request's answer comes as HTTP/2, on
//! stream 1. Its 2022 revision deprecates the mechanism, but curl still uses it for `http://`
//! URLs, and hyper does not implement it. Here it is built from hyper's upgrade API and its
//! HTTP/2 server, with two corrections on the bytes between them ([`Switched`]):
//!
//! - **Reading**: once the client's connection preface and its first SETTINGS frame have
//!   passed, a HEADERS frame for stream 1 carrying the original request is handed to the HTTP/2
//!   server as if the client had sent it, followed by DATA frames with its body, if it had
//!   one. The header fields are HPACK literals *without indexing*, so neither side's header
//!   table changes and every later frame decodes as the client encoded it.
//! - **Writing**: the server counts the body's DATA against its connection receive window and
//!   later gives those bytes back to the client in WINDOW_UPDATE frames, though the client
//!   never spent them. So the first connection-level WINDOW_UPDATE increments are reduced by
//!   the body's length (a frame left with nothing is dropped); after that the server's frames
//!   pass untouched, and both sides agree on the window.
//!
//! A request qualifies only when it can be replayed whole: at most [`MAX_BODY`] bytes with a
//! declared length (no chunked body). Those bytes fit the server's stream and connection windows
//! before any SETTINGS is acknowledged (65,535 bytes), and its default frame size (16,384).
//! Any other request that asks for h2c is answered in HTTP/1.1, as a server may always ignore
//! `Upgrade`. The `HTTP2-Settings` header must be there (once) but is not read: the client
//! repeats its settings in the SETTINGS frame of its preface (curl and nghttp2 send the same
//! values), which the server reads before the replayed request, and acknowledging both would
//! send the client an acknowledgement it does not expect.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::ApiError;
use super::preface::PREFACE;

/// The largest request body replayed on stream 1: what fits the HTTP/2 server's windows before
/// it has agreed to larger ones.
pub(crate) const MAX_BODY: usize = 65_535;

/// The largest frame payload before the client has agreed to larger ones.
const MAX_FRAME: usize = 16_384;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const FRAME_HEAD: usize = 9;

/// Whether `request` asks for h2c in a way this server takes up (see the module docs).
pub(crate) fn wants_h2c(request: &Request<Incoming>) -> bool {
    let headers = request.headers();
    let Some(upgrade) = headers.get(header::UPGRADE) else {
        return false;
    };
    request.version() == axum::http::Version::HTTP_11
        && has_token(upgrade, "h2c")
        && headers.get_all("http2-settings").iter().count() == 1
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .any(|v| has_token(v, "upgrade"))
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .any(|v| has_token(v, "http2-settings"))
        && !headers.contains_key(header::TRANSFER_ENCODING)
        && declared_length(headers).is_some_and(|n| n <= MAX_BODY)
}

/// The declared body length; no `Content-Length` means no body (there is no chunked one here).
fn declared_length(headers: &HeaderMap) -> Option<usize> {
    match headers.get(header::CONTENT_LENGTH) {
        None => Some(0),
        Some(v) => v.to_str().ok()?.trim().parse().ok(),
    }
}

fn has_token(value: &HeaderValue, token: &str) -> bool {
    value
        .to_str()
        .map(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        .unwrap_or(false)
}

/// A switch agreed on: what the connection becomes once the `101` has been sent.
pub(crate) struct Switch {
    on_upgrade: OnUpgrade,
    /// The replayed request's frames (HEADERS, CONTINUATION and DATA on stream 1).
    frames: Vec<u8>,
    /// How many body bytes the DATA frames carry.
    body_len: u32,
}

impl std::fmt::Debug for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Switch")
            .field("frames", &self.frames.len())
            .field("body_len", &self.body_len)
            .finish_non_exhaustive()
    }
}

impl Switch {
    /// Waits for hyper to hand over the connection, and wraps it for HTTP/2 (see [`Switched`]).
    pub(crate) async fn connection(self) -> hyper::Result<Switched<impl AsyncRead + AsyncWrite>> {
        let upgraded = self.on_upgrade.await?;
        Ok(Switched::new(
            hyper_util::rt::TokioIo::new(upgraded),
            self.frames,
            self.body_len,
        ))
    }
}

/// Reads the request's body (within `read_for`) and answers `101`; or, when the body does not
/// arrive whole in time, the refusal to send instead.
pub(crate) async fn switch(
    mut request: Request<Incoming>,
    read_for: Duration,
) -> Result<(Switch, Response), Response> {
    let on_upgrade = hyper::upgrade::on(&mut request);
    let (parts, body) = request.into_parts();
    let body = match tokio::time::timeout(read_for, axum::body::to_bytes(Body::new(body), MAX_BODY))
        .await
    {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "the request's body ended before its Content-Length; send it whole",
            )
            .into_response());
        }
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "a request that asks for h2c must send its body within {} s ([server] header_read_timeout)",
                    read_for.as_secs_f64()
                ),
            )
            .into_response());
        }
    };
    let body_len = body.len() as u32; // at most MAX_BODY
    let switch = Switch {
        on_upgrade,
        frames: stream_one(&parts, &body),
        body_len,
    };
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("h2c"));
    Ok((switch, response))
}

/// The request as HTTP/2 frames on stream 1: its header block (HPACK literals without
/// indexing, split into HEADERS and CONTINUATION frames), then its body in DATA frames.
fn stream_one(parts: &Parts, body: &[u8]) -> Vec<u8> {
    let mut block = Vec::with_capacity(256);
    literal(&mut block, b":method", parts.method.as_str().as_bytes());
    literal(&mut block, b":scheme", b"http");
    let authority = parts
        .headers
        .get(header::HOST)
        .map(|h| h.as_bytes())
        .or_else(|| parts.uri.authority().map(|a| a.as_str().as_bytes()));
    if let Some(authority) = authority {
        literal(&mut block, b":authority", authority);
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    literal(&mut block, b":path", path.as_bytes());
    // Connection-specific fields have no meaning in HTTP/2, and a server must refuse a request
    // carrying them; `te` may only say "trailers".
    let named_by_connection: Vec<String> = parts
        .headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in &parts.headers {
        let hop = matches!(
            name.as_str(),
            "connection"
                | "upgrade"
                | "http2-settings"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "host"
        ) || named_by_connection.iter().any(|t| t == name.as_str())
            || (name == header::TE && value.as_bytes() != b"trailers");
        if !hop {
            literal(&mut block, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    let mut out = Vec::with_capacity(block.len() + body.len() + 4 * FRAME_HEAD);
    let mut chunks = block.chunks(MAX_FRAME).peekable();
    let mut first = true;
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let (kind, mut flags) = if first {
            (HEADERS, if body.is_empty() { END_STREAM } else { 0 })
        } else {
            (CONTINUATION, 0)
        };
        if last {
            flags |= END_HEADERS;
        }
        frame(&mut out, kind, flags, chunk);
        first = false;
    }
    let mut chunks = body.chunks(MAX_FRAME).peekable();
    while let Some(chunk) = chunks.next() {
        let flags = if chunks.peek().is_none() {
            END_STREAM
        } else {
            0
        };
        frame(&mut out, DATA, flags, chunk);
    }
    out
}

/// A frame on stream 1.
fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, payload: &[u8]) {
    let len = payload.len() as u32; // at most MAX_FRAME
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&1u32.to_be_bytes());
    out.extend_from_slice(payload);
}

/// An HPACK "literal header field without indexing — new name" (no Huffman coding).
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    string(out, name);
    string(out, value);
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 7, s.len());
    out.extend_from_slice(s);
}

/// An HPACK integer with an `prefix`-bit prefix, the bits above it zero.
fn integer(out: &mut Vec<u8>, prefix: u32, mut value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(value as u8);
        return;
    }
    out.push(max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// The upgraded connection as the HTTP/2 server should see it (see the module docs).
#[derive(Debug)]
pub(crate) struct Switched<I> {
    inner: I,
    reading: Reading,
    writing: Withhold,
}

#[derive(Debug)]
enum Reading {
    /// Collecting the client's preface and first frame (which must be SETTINGS) after the
    /// replayed frames, which are the first `replay` bytes.
    Preface { bytes: Vec<u8>, replay: usize },
    /// Handing out the preface, the replayed request and whatever followed in the same reads.
    Handing { bytes: Vec<u8>, at: usize },
    /// Reading straight from the connection.
    Through,
}

impl<I> Switched<I> {
    fn new(inner: I, frames: Vec<u8>, body_len: u32) -> Self {
        Switched {
            inner,
            reading: Reading::Preface {
                replay: frames.len(),
                bytes: frames,
            },
            writing: Withhold::new(body_len),
        }
    }
}

/// Where the client's first frame ends in `seen` (which starts with the preface), once known.
fn preface_end(seen: &[u8]) -> io::Result<Option<usize>> {
    let n = seen.len().min(PREFACE.len());
    if seen[..n] != PREFACE[..n] {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the client did not send the HTTP/2 preface after 101",
        ));
    }
    let Some(head) = seen.get(PREFACE.len()..PREFACE.len() + FRAME_HEAD) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    if head[3] != SETTINGS || len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the client's first HTTP/2 frame was not SETTINGS",
        ));
    }
    let end = PREFACE.len() + FRAME_HEAD + len;
    Ok((seen.len() >= end).then_some(end))
}

impl<I: AsyncRead + Unpin> AsyncRead for Switched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.reading {
                Reading::Through => return Pin::new(&mut this.inner).poll_read(cx, buf),
                Reading::Handing { bytes, at } => {
                    let n = (bytes.len() - *at).min(buf.remaining());
                    buf.put_slice(&bytes[*at..*at + n]);
                    *at += n;
                    if *at == bytes.len() {
                        this.reading = Reading::Through;
                    }
                    return Poll::Ready(Ok(()));
                }
                Reading::Preface {
                    bytes: frames,
                    replay,
                } => {
                    // The replayed frames wait at the front until the preface is complete.
                    let mut scratch = [0u8; 2048];
                    let mut read = ReadBuf::new(&mut scratch);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                    if read.filled().is_empty() {
                        return Poll::Ready(Ok(())); // the client closed: end of stream
                    }
                    let seen_at = *replay;
                    frames.extend_from_slice(read.filled());
                    let seen = &frames[seen_at..];
                    let Some(end) = preface_end(seen)? else {
                        // Keep what came so far after the replayed frames; a client sends its
                        // preface in a few hundred bytes, so this stays small.
                        if seen.len() > PREFACE.len() + FRAME_HEAD + MAX_FRAME {
                            return Poll::Ready(Err(io::ErrorKind::InvalidData.into()));
                        }
                        continue;
                    };
                    // preface + SETTINGS, then the replayed request, then the rest.
                    let mut bytes = Vec::with_capacity(frames.len());
                    bytes.extend_from_slice(&frames[seen_at..seen_at + end]);
                    bytes.extend_from_slice(&frames[..seen_at]);
                    bytes.extend_from_slice(&frames[seen_at + end..]);
                    this.reading = Reading::Handing { bytes, at: 0 };
                }
            }
        }
    }
}

/// Takes the replayed body's length out of the server's connection-level WINDOW_UPDATE
/// frames, parsing the frames it writes only until that is done.
#[derive(Debug)]
struct Withhold {
    /// Window bytes still to take back.
    debt: u32,
    /// The frame head being collected (a WINDOW_UPDATE's 4-byte payload too).
    head: [u8; FRAME_HEAD + 4],
    have: usize,
    /// Payload bytes of the current frame still to pass through unchanged.
    skip: usize,
    /// A head (possibly rewritten) accepted from the server and not yet written.
    out: [u8; FRAME_HEAD + 4],
    out_at: usize,
    out_len: usize,
}

impl Withhold {
    fn new(debt: u32) -> Self {
        Withhold {
            debt,
            head: [0; FRAME_HEAD + 4],
            have: 0,
            skip: 0,
            out: [0; FRAME_HEAD + 4],
            out_at: 0,
            out_len: 0,
        }
    }

    /// Nothing left to change or to write: bytes may pass straight through.
    fn through(&self) -> bool {
        self.debt == 0 && self.have == 0 && self.skip == 0 && self.out_at == self.out_len
    }

    /// Takes up to one frame head's worth of `buf`; returns how many bytes it took.
    fn take_head(&mut self, buf: &[u8]) -> usize {
        let needed = if self.have < FRAME_HEAD {
            FRAME_HEAD
        } else {
            FRAME_HEAD + 4
        };
        let n = (needed - self.have).min(buf.len());
        self.head[self.have..self.have + n].copy_from_slice(&buf[..n]);
        self.have += n;
        let h = self.head;
        if self.have == FRAME_HEAD {
            let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            if !(h[3] == WINDOW_UPDATE && stream == 0 && len == 4) {
                self.emit(FRAME_HEAD);
                self.skip = len;
            }
        } else if self.have == FRAME_HEAD + 4 {
            let increment = u32::from_be_bytes([h[9], h[10], h[11], h[12]]) & 0x7fff_ffff;
            let paid = increment.min(self.debt);
            self.debt -= paid;
            let left = increment - paid;
            self.head[9..13].copy_from_slice(&left.to_be_bytes());
            // An increment of zero is a protocol error for the client: drop the frame instead.
            self.emit(if left == 0 { 0 } else { FRAME_HEAD + 4 });
        }
        n
    }

    fn emit(&mut self, len: usize) {
        self.out[..len].copy_from_slice(&self.head[..len]);
        self.out_at = 0;
        self.out_len = len;
        self.have = 0;
    }
}

impl<I: AsyncWrite + Unpin> Switched<I> {
    /// Writes the held head, if any.
    fn poll_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let w = &mut self.writing;
        while w.out_at < w.out_len {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &w.out[w.out_at..w.out_len]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            w.out_at += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Switched<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_held(cx))?;
        let w = &mut this.writing;
        if w.through() || buf.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        if w.skip > 0 {
            let n = w.skip.min(buf.len());
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..n]))?;
            this.writing.skip -= n;
            return Poll::Ready(Ok(n));
        }
        Poll::Ready(Ok(w.take_head(buf)))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.writing.through() {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
        Pin::new(this).poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.writing.through() && self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_held(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;

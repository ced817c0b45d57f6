//! HTTP plumbing shared by the provider adapters: the client, sending (again when a provider
//! refused a request unprocessed), bounded body reads, `Retry-After`.

use std::time::{Duration, SystemTime};

use hyper::body::Bytes;
use reqwest::header::HeaderMap;

use super::error::{ErrorKind, UpstreamError};
use crate::trace_context::{TRACEPARENT, TRACESTATE, TraceContext};

/// The largest response body an adapter reads. Duffel documents searches returning thousands of
/// offers (megabytes); anything past this is treated as a malformed answer rather than letting
/// one response take unbounded memory.
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The most [`read_body`] reserves up front from a declared `content-length`.
const PRESIZE_MAX_BYTES: u64 = 1024 * 1024;

/// Builds the client for one provider, with the default 2 s connect timeout and HTTP/1.1 or
/// HTTP/2 as the provider negotiates ([`client_for`]).
pub fn client(max_idle_per_host: usize) -> Result<reqwest::Client, reqwest::Error> {
    client_for(
        max_idle_per_host,
        Duration::from_secs(2),
        Protocol::Negotiated,
    )
}

/// How a provider's client speaks HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 over cleartext; over TLS, HTTP/2 when the provider offers it by ALPN.
    Negotiated,
    /// HTTP/2 from the first byte (`[providers.X] http2_prior_knowledge`), for a cleartext
    /// provider or sidecar that serves h2c: the calls in flight share a few connections as
    /// streams, instead of one connection (and its buffers, on both sides) each.
    Http2PriorKnowledge,
}

/// How many more times [`send`] sends a request the provider refused unprocessed.
const UNPROCESSED_RESENDS: u32 = 2;

/// Builds the client for one provider.
///
/// The connect timeout is short (`[providers.X] connect_timeout`, 2 s by default): a provider
/// that cannot accept a connection in that time is down for our purposes. Per-attempt timeouts are enforced by the call pipeline around each
/// attempt (so the breaker sees them), not here. The idle pool per host is sized to the largest
/// bulkhead of the tools using the provider, so a slow provider can hold at most that many
/// connections.
///
/// reqwest's own retry is off: to resend a request the provider refused unprocessed it clones
/// every request before sending it and keeps the clone until the answer, about 1 KB per call in
/// flight for as long as a slow provider holds it (memory per held call, BENCHMARKS.md).
/// [`send`] resends those requests instead, built again only when one is refused.
pub fn client_for(
    max_idle_per_host: usize,
    connect_timeout: Duration,
    protocol: Protocol,
) -> Result<reqwest::Client, reqwest::Error> {
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(max_idle_per_host)
        .tcp_keepalive(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .user_agent(concat!("faregate/", env!("CARGO_PKG_VERSION")));
    match protocol {
        Protocol::Negotiated => builder,
        Protocol::Http2PriorKnowledge => builder.http2_prior_knowledge(),
    }
    .build()
}

/// `request` with the current span's W3C trace context (`traceparent`, `tracestate`), so the
/// provider's spans join the call's trace; unchanged when the span has none (traces are not
/// exported). The current span is the call's `upstream_attempt`.
pub fn traced(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let Some(trace) = TraceContext::current() else {
        return request;
    };
    let request = request.header(TRACEPARENT, trace.traceparent());
    match trace.tracestate() {
        Some(state) => request.header(TRACESTATE, state),
        None => request,
    }
}

/// Sends the request `build` makes; sends it again, built again,
/// at most [`UNPROCESSED_RESENDS`] more times, when the provider refused it without processing
/// it: an HTTP/2 `REFUSED_STREAM`, or a graceful `GOAWAY` the stream came after. RFC 9113 §8.7
/// makes such a request safe to send again, even a write, and the provider said nothing about
/// its health, so it is not an attempt the breaker hears about. `build` runs again only then.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
)]
pub fn send(
    build: impl Fn() -> reqwest::RequestBuilder + Send,
) -> impl Future<Output = Result<reqwest::Response, reqwest::Error>> + Send {
    // An `async move` block: an `async fn` would keep `build` twice while the provider answers.
    async move {
        let mut resends = 0;
        loop {
            match build().send().await {
                Err(e) if resends < UNPROCESSED_RESENDS && refused_unprocessed(&e) => {
                    resends += 1;
                    tracing::debug!(
                        resend = resends,
                        error = %e,
                        "the provider refused the request unprocessed; sending it again"
                    );
                }
                sent => {
                    on_span(&sent);
                    return sent;
                }
            }
        }
    }
}

/// Records where a request went and the provider's HTTP status on the current span (the
/// call's `upstream_attempt`, as OpenTelemetry's HTTP client conventions name them), so a
/// trace shows which host answered what. Nothing when the span is not kept.
fn on_span(sent: &Result<reqwest::Response, reqwest::Error>) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    let (url, status) = match sent {
        Ok(response) => (Some(response.url()), Some(response.status())),
        Err(e) => (e.url(), e.status()),
    };
    if let Some(host) = url.and_then(reqwest::Url::host_str) {
        span.record("server.address", host);
    }
    if let Some(status) = status {
        // An `i64`, as every number on a span (`http/edge/trace.rs`).
        span.record("http.response.status_code", i64::from(status.as_u16()));
    }
}

/// Whether `error` is the provider refusing a request it did not process (see [`send`]).
fn refused_unprocessed(error: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(stream) = error.downcast_ref::<h2::Error>() {
            return stream.is_remote()
                && ((stream.is_go_away() && stream.reason() == Some(h2::Reason::NO_ERROR))
                    || (stream.is_reset() && stream.reason() == Some(h2::Reason::REFUSED_STREAM)));
        }
        cause = error.source();
    }
    false
}

/// Maps a transport error from reqwest.
pub fn transport_error(e: reqwest::Error) -> UpstreamError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() {
        ErrorKind::Connect
    } else {
        ErrorKind::Transport
    };
    // reqwest's Display can include the URL; our URLs carry no credentials (tokens go in headers).
    UpstreamError::new(kind, e.to_string())
}

/// Reads a response body, refusing more than [`MAX_BODY_BYTES`].
///
/// A body that arrives as one chunk (one that is whole by the time the client reads it: a short
/// answer, or a long one from a provider nearby, as the 62 KB search of the benchmarks) is
/// returned as that chunk, a view of the client's read buffer: no copy, and no allocation of
/// the body's size per call, and the client reuses its buffer for the next read (BENCHMARKS.md,
/// "The provider's answer kept where it was read"). A body in several chunks (a long answer
/// over the internet comes in many TCP segments and TLS records) is gathered into one buffer.
pub async fn read_body(mut response: reqwest::Response) -> Result<Bytes, UpstreamError> {
    if let Some(len) = response.content_length()
        && len > MAX_BODY_BYTES as u64
    {
        return Err(UpstreamError::new(
            ErrorKind::Malformed,
            format!("response body of {len} bytes exceeds the {MAX_BODY_BYTES}-byte limit"),
        ));
    }
    let declared = response.content_length().unwrap_or(0);
    let Some(first) = response.chunk().await.map_err(transport_error)? else {
        return Ok(Bytes::new());
    };
    let too_large = || {
        UpstreamError::new(
            ErrorKind::Malformed,
            format!("response body exceeds the {MAX_BODY_BYTES}-byte limit"),
        )
    };
    if first.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    let Some(second) = response.chunk().await.map_err(transport_error)? else {
        return Ok(first);
    };
    // Sized once from the declared length (up to a megabyte, so a length that lies cannot
    // make a large allocation), so a search answer of tens of kilobytes is not copied again at
    // every doubling as its chunks arrive.
    let mut body = Vec::with_capacity(
        (declared.min(PRESIZE_MAX_BYTES) as usize).max(first.len() + second.len()),
    );
    let mut next = Some(second);
    body.extend_from_slice(&first);
    while let Some(chunk) = next {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
        next = response.chunk().await.map_err(transport_error)?;
    }
    Ok(Bytes::from(body))
}

/// `Retry-After` as seconds or an HTTP-date, relative to `now`.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_delay(value, now)
}

/// A delay written as whole seconds or as an HTTP-date (then relative to `now`, never negative).
pub fn parse_delay(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// An HTTP/2 provider that resets its first `refusals` streams with `reason` and answers
    /// the others `200 ok`; it returns how many requests it saw when the client goes away.
    async fn refusing_provider(
        refusals: usize,
        reason: h2::Reason,
    ) -> (String, tokio::task::JoinHandle<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/air/offer_requests",
            listener.local_addr().unwrap()
        );
        let provider = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let mut connection = h2::server::handshake(socket).await.unwrap();
            let mut seen = 0;
            while let Some(Ok((_request, mut respond))) = connection.accept().await {
                seen += 1;
                if seen <= refusals {
                    respond.send_reset(reason);
                    continue;
                }
                let answer = axum::http::Response::builder()
                    .status(200)
                    .body(())
                    .unwrap();
                let mut body = respond.send_response(answer, false).unwrap();
                body.send_data(Bytes::from_static(b"ok"), true).unwrap();
            }
            seen
        });
        (url, provider)
    }

    async fn post(url: &str) -> Result<(u16, String), reqwest::Error> {
        let client = client_for(1, Duration::from_secs(2), Protocol::Http2PriorKnowledge).unwrap();
        let response = send(|| client.post(url).body("{}")).await?;
        Ok((response.status().as_u16(), response.text().await?))
    }

    #[tokio::test]
    async fn a_request_the_provider_refused_unprocessed_is_sent_again() {
        let (url, provider) = refusing_provider(2, h2::Reason::REFUSED_STREAM).await;
        assert_eq!(post(&url).await.unwrap(), (200, "ok".to_string()));
        assert_eq!(provider.await.unwrap(), 3, "two refusals, then the answer");
    }

    #[tokio::test]
    async fn refused_again_and_again_it_fails_after_two_resends() {
        let (url, provider) = refusing_provider(usize::MAX, h2::Reason::REFUSED_STREAM).await;
        let error = post(&url).await.unwrap_err();
        assert_eq!(transport_error(error).kind, ErrorKind::Transport);
        assert_eq!(provider.await.unwrap(), 3, "sent once and again twice");
    }

    #[tokio::test]
    async fn a_request_the_provider_may_have_processed_is_not_sent_again() {
        // INTERNAL_ERROR says nothing about whether the provider acted on it: a booking
        // sent twice could be booked twice, so the attempt fails as it is.
        let (url, provider) = refusing_provider(1, h2::Reason::INTERNAL_ERROR).await;
        assert!(post(&url).await.is_err());
        assert_eq!(provider.await.unwrap(), 1);
    }

    /// An HTTP/1.1 provider that answers one request with `head` and then each of `pieces`,
    /// written apart (flushed, with a pause between), so the client reads them as separate
    /// chunks.
    async fn provider_writing(head: String, pieces: Vec<Vec<u8>>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0; 4096];
            let _ = socket.read(&mut request).await.unwrap();
            socket.write_all(head.as_bytes()).await.unwrap();
            for piece in pieces {
                socket.write_all(&piece).await.unwrap();
                socket.flush().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        url
    }

    async fn body_of(url: &str) -> Result<Bytes, UpstreamError> {
        let client = client(1).unwrap();
        let response = client.get(url).send().await.map_err(transport_error)?;
        read_body(response).await
    }

    #[tokio::test]
    async fn a_body_in_one_piece_or_in_several_is_read_whole_and_in_order() {
        let body: Vec<u8> = (0..70_000u32)
            .map(|i| b"0123456789"[(i % 10) as usize])
            .collect();
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
        let url = provider_writing(head.clone(), vec![body.clone()]).await;
        assert_eq!(body_of(&url).await.unwrap(), body);

        let pieces = vec![
            body[..10].to_vec(),
            body[10..50_000].to_vec(),
            body[50_000..].to_vec(),
        ];
        let url = provider_writing(head, pieces).await;
        assert_eq!(body_of(&url).await.unwrap(), body, "gathered in order");

        // Chunked, without a declared length: nothing to size the buffer by.
        let chunked = vec![
            b"5\r\nhello\r\n".to_vec(),
            b"6\r\n world\r\n0\r\n\r\n".to_vec(),
        ];
        let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_string();
        let url = provider_writing(head, chunked).await;
        assert_eq!(body_of(&url).await.unwrap(), &b"hello world"[..]);

        let url = provider_writing("HTTP/1.1 204 No Content\r\n\r\n".into(), Vec::new()).await;
        assert!(body_of(&url).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_body_declared_over_the_limit_is_refused_unread() {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
            MAX_BODY_BYTES + 1
        );
        let url = provider_writing(head, vec![b"{".to_vec()]).await;
        let error = body_of(&url).await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Malformed);
        assert!(error.to_string().contains("exceeds the"), "{error}");
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(parse_delay("120", now), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_delay(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_delay(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_delay("soon", now), None);
    }
}

//! HTTP plumbing shared by the provider adapters: the client, bounded body reads, `Retry-After`.

use std::time::{Duration, SystemTime};

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

/// Builds the client for one provider.
///
/// The connect timeout is short (`[providers.X] connect_timeout`, 2 s by default): a provider
/// that cannot accept a connection in that time is down for our purposes. Per-attempt timeouts are enforced by the call pipeline around each
/// attempt (so the breaker sees them), not here. The idle pool per host is sized to the largest
/// bulkhead of the tools using the provider, so a slow provider can hold at most that many
/// connections.
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
pub async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, UpstreamError> {
    if let Some(len) = response.content_length()
        && len > MAX_BODY_BYTES as u64
    {
        return Err(UpstreamError::new(
            ErrorKind::Malformed,
            format!("response body of {len} bytes exceeds the {MAX_BODY_BYTES}-byte limit"),
        ));
    }
    // Sized once from the declared length (up to a megabyte, so a length that lies cannot
    // make a large allocation), so a search answer of tens of kilobytes is not copied again at
    // every doubling as its chunks arrive.
    let declared = response.content_length().unwrap_or(0);
    let mut body = Vec::with_capacity(declared.min(PRESIZE_MAX_BYTES) as usize);
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(UpstreamError::new(
                ErrorKind::Malformed,
                format!("response body exceeds the {MAX_BODY_BYTES}-byte limit"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
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

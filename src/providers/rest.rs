//! The adapter of providers of kind `http`: any JSON HTTP API, serving the tools from
//! configuration that name it.
//!
//! It has no wire types of its own: each tool's compiled `http_tool::Operation` builds the
//! request from the call's arguments and reads the answer. A built-in tool whose file binds
//! this provider is served the same way through its `http_tool::Binding`: the request from the
//! tool's checked arguments, the answer mapped into the tool's typed output, and an answer that
//! does not fit that type is a malformed answer (the chain goes on to its next provider). This
//! module adds what needs a socket: the configured base URL (the only host a request ever goes
//! to), the credential from the environment (an OAuth2 token waited for at most half the
//! attempt's time, so a write whose token did not come is reported as not sent), the bounded
//! body read, the rate-limit headers recorded for pacing, the mapping of the operation's
//! classification onto [`ErrorKind`], and the text of a write the provider confirmed with an
//! empty body (`Answered::Done`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use hyper::body::Bytes;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName};

use super::error::{ErrorKind, NOT_LISTED, UpstreamError};
use super::http::{read_body, retry_after, send, traced, transport_error};
use super::limits::LimitsSink;
use super::oauth2::{Token, TokenSource};
pub use super::redact::REDACTED;
use super::redact::redacted;
use crate::http_tool::{Answered, Binding, Class, Method, Operation, Outgoing, Waits};
use crate::secret::Secret;
use crate::texts::call as texts;
use crate::tools::configured::{Call, Output};
use crate::tools::{ToolOutput, ToolRequest};

/// How requests authenticate, with the credential read from the environment at start.
#[derive(Debug, Clone)]
pub enum Credential {
    /// No credential.
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// The key in the named header.
    ApiKey(HeaderName, Secret),
    /// HTTP Basic: user name and password.
    Basic(Secret, Secret),
    /// An OAuth2 client-credentials token, fetched once for every call of this provider and
    /// refreshed before it expires (or when the API refuses it).
    OAuth2(TokenSource),
}

/// One provider of kind `http`.
#[derive(Debug, Clone)]
pub struct RestClient {
    http: reqwest::Client,
    base_url: Url,
    credential: Credential,
    /// The digest of the identifying credential: which account this client calls.
    account: String,
    /// Each served tool's operation, by tool name.
    operations: BTreeMap<String, Arc<Operation>>,
    /// Each built-in tool it serves through a binding, by tool name.
    bindings: BTreeMap<String, Arc<Binding>>,
    limits: Option<LimitsSink>,
}

impl RestClient {
    /// A client for `base_url` authenticating with `credential`, serving `operations`.
    pub fn new(
        http: reqwest::Client,
        base_url: Url,
        credential: Credential,
        operations: BTreeMap<String, Arc<Operation>>,
    ) -> Self {
        // The user name identifies a Basic account (the password only proves it); a provider
        // called without a credential is one account, named by its base URL.
        let account = match &credential {
            Credential::None => Secret::new(base_url.as_str()).digest(),
            Credential::Bearer(token) => token.digest(),
            Credential::ApiKey(_, key) => key.digest(),
            Credential::Basic(user, _) => user.digest(),
            Credential::OAuth2(tokens) => tokens.client_id().digest(),
        };
        RestClient {
            http,
            base_url,
            credential,
            account,
            operations,
            bindings: BTreeMap::new(),
            limits: None,
        }
    }

    /// The same client, also serving the built-in tool `tool` through `binding`.
    pub fn with_binding(mut self, tool: &str, binding: Arc<Binding>) -> Self {
        self.bindings.insert(tool.to_string(), binding);
        self
    }

    /// The same client, recording the rate-limit headers of every answer into `sink`.
    pub fn with_limits(mut self, sink: LimitsSink) -> Self {
        self.limits = Some(sink);
        self
    }

    /// The account this client calls, as the digest of its identifying credential.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// Runs one attempt of `request`, a call of a tool from configuration.
    pub async fn call(
        &self,
        request: &ToolRequest,
        timeout: Duration,
    ) -> Result<ToolOutput, UpstreamError> {
        let ToolRequest::Configured(call) = request else {
            return self.call_bound(request, timeout).await;
        };
        let Some(operation) = self.operations.get(call.tool) else {
            return Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("this http provider does not serve {}", call.tool),
            )
            .before_write());
        };
        self.send(operation, call, timeout)
            .await
            .map(ToolOutput::Configured)
    }

    /// One attempt of a built-in tool's call through the binding its file gives this provider.
    async fn call_bound(
        &self,
        request: &ToolRequest,
        timeout: Duration,
    ) -> Result<ToolOutput, UpstreamError> {
        let tool = request.tool();
        let (Some(binding), Some(arguments)) = (self.bindings.get(tool), request.bound_arguments())
        else {
            return Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("this http provider has no binding for {tool}"),
            )
            .before_write());
        };
        let outgoing = binding.request(&arguments).map_err(|(field, why)| {
            UpstreamError::new(
                ErrorKind::Rejected {
                    message: format!("{field} {why}"),
                },
                "an argument cannot be sent",
            )
            .before_write()
        })?;
        let (status, headers, body) = self.exchange(&outgoing, timeout).await?;
        let request_id = text(&headers, "x-request-id").map(str::to_string);
        let failed = |class: Class| {
            let mut e = upstream_error(class);
            e.request_id = request_id.clone();
            e
        };
        let data = binding
            .read(
                (status, waits(&headers), &body),
                crate::clock::system_now(),
                &arguments,
            )
            .map_err(&failed)?;
        crate::tools::output_from_json(tool, data)
            .map_err(|detail| failed(Class::Malformed { detail }))
    }

    /// One request of `outgoing`, with `token` for an OAuth2 provider; its status, headers and
    /// (bounded) body.
    async fn attempt(
        &self,
        outgoing: &Outgoing,
        token: Option<&Secret>,
    ) -> Result<(u16, HeaderMap, Bytes), UpstreamError> {
        let method = match outgoing.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        };
        let url = outgoing.url(&self.base_url);
        let response = send(|| {
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .header(ACCEPT, "application/json");
            req = match (&self.credential, token) {
                (_, Some(token)) => req.bearer_auth(token.expose()),
                (Credential::None | Credential::OAuth2(_), None) => req,
                (Credential::Bearer(token), None) => req.bearer_auth(token.expose()),
                (Credential::ApiKey(header, key), None) => req.header(header.clone(), key.expose()),
                (Credential::Basic(user, password), None) => {
                    req.basic_auth(user.expose(), Some(password.expose()))
                }
            };
            if let Some((header, key)) = &outgoing.idempotency {
                req = req.header(header.as_str(), key.as_str());
            }
            if let Some(media) = &outgoing.content_type {
                // Before the body: `json` adds `application/json` only when none is set.
                req = req.header(CONTENT_TYPE, media.as_str());
            }
            if let Some(body) = &outgoing.body {
                req = req.json(body);
            }
            traced(req)
        })
        .await
        .map_err(transport_error)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if let Some(sink) = &self.limits {
            sink.observe(&headers);
        }
        let body = read_body(response).await?;
        Ok((status, headers, body))
    }

    async fn send(
        &self,
        operation: &Operation,
        call: &Call,
        timeout: Duration,
    ) -> Result<Output, UpstreamError> {
        let outgoing = operation
            .request(&call.arguments, call.sent_key().as_deref())
            .map_err(|(field, why)| {
                UpstreamError::new(
                    ErrorKind::Rejected {
                        message: format!("{field} {why}"),
                    },
                    "an argument cannot be sent",
                )
                .before_write()
            })?;
        let (status, headers, body) = self.exchange(&outgoing, timeout).await?;
        let request_id = text(&headers, "x-request-id").map(str::to_string);
        operation
            .read(status, waits(&headers), &body, crate::clock::system_now())
            .map(|answered| match answered {
                Answered::Kept(kept) => Output {
                    data: kept.data,
                    content: kept.content,
                },
                // The template describes an answer the provider did not send.
                Answered::Done { status, data } => Output {
                    data,
                    content: texts::done_without_details(call.tool, status),
                },
            })
            .map_err(|class| {
                let mut e = upstream_error(class);
                e.request_id = request_id;
                e
            })
    }

    /// Sends `outgoing` with this provider's credential (an OAuth2 token renewed once when the
    /// API refuses it), within the attempt's `timeout`; the answer's status, headers and body.
    async fn exchange(
        &self,
        outgoing: &Outgoing,
        timeout: Duration,
    ) -> Result<(u16, HeaderMap, Bytes), UpstreamError> {
        let started = tokio::time::Instant::now();
        let (status, headers, body, token) = match &self.credential {
            Credential::OAuth2(tokens) => {
                let token = token_for(tokens, timeout).await?;
                let (status, headers, body) = self.attempt(outgoing, Some(&token.value)).await?;
                if status != 401 {
                    (status, headers, body, Some(token.value))
                } else {
                    // An expired or revoked token: a new one, and the request once more.
                    tokens.invalidate(&token);
                    let left = timeout.saturating_sub(started.elapsed());
                    let token = token_for(tokens, left).await?;
                    let (status, headers, body) =
                        self.attempt(outgoing, Some(&token.value)).await?;
                    (status, headers, body, Some(token.value))
                }
            }
            _ => {
                let (status, headers, body) = self.attempt(outgoing, None).await?;
                (status, headers, body, None)
            }
        };
        let body = redacted(body, &self.sent_secrets(token.as_ref()));
        Ok((status, headers, body))
    }

    /// Every credential value a request of this provider carries (`token`: the OAuth2 token
    /// it was sent with), in the forms it is sent in.
    fn sent_secrets(&self, token: Option<&Secret>) -> Vec<String> {
        let mut secrets = Vec::new();
        match &self.credential {
            Credential::None => {}
            Credential::Bearer(token) => secrets.push(token.expose().to_string()),
            Credential::ApiKey(_, key) => secrets.push(key.expose().to_string()),
            Credential::Basic(user, password) => {
                // The header carries both, encoded; the user name alone names the account and
                // is no secret.
                let pair = format!("{}:{}", user.expose(), password.expose());
                secrets.push(BASE64_STANDARD.encode(pair.as_bytes()));
                secrets.push(password.expose().to_string());
            }
            Credential::OAuth2(tokens) => secrets.push(tokens.client_secret().to_string()),
        }
        if let Some(token) = token {
            secrets.push(token.expose().to_string());
        }
        secrets.retain(|s| !s.is_empty());
        secrets
    }
}

/// A token from `tokens` for a request that has `left` of its attempt's time, waited for at most
/// half of it. Every failure here comes before the request is sent, so it is marked
/// [`UpstreamError::before_write`]: a write waiting for its token was not sent, whatever ends
/// the wait. The wait ends here, not at the attempt's timeout around the whole call: there the
/// pipeline could not tell a write stuck waiting for its token from one sent and unanswered
/// ("not known whether it went through"), and its detail would not say the token endpoint was
/// the slow one. Half, as Duffel's read before an order: a token that takes longer leaves the
/// request too little time anyway, and the fetch goes on in the background for the next
/// attempt (`oauth2.rs`).
async fn token_for(tokens: &TokenSource, left: Duration) -> Result<Token, UpstreamError> {
    let bound = left / 2;
    match tokio::time::timeout(bound, tokens.get()).await {
        Ok(token) => token.map_err(UpstreamError::before_write),
        Err(_) => Err(UpstreamError::new(
            ErrorKind::Timeout,
            format!(
                "token endpoint: no token within {} (half the attempt's time)",
                humantime::format_duration(Duration::from_millis(bound.as_millis() as u64))
            ),
        )
        .before_write()),
    }
}

/// The waits an answer's headers ask for.
fn waits(headers: &HeaderMap) -> Waits<'_> {
    Waits {
        retry_after: text(headers, "retry-after"),
        ratelimit_reset: text(headers, "ratelimit-reset")
            .or_else(|| text(headers, "x-ratelimit-reset")),
    }
}

/// A header's value as text, when it is readable.
fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

/// The operation's classification in the gateway's terms. A refusal, a rate limit and a
/// misconfiguration mean the provider did not act on the request, so a write they answer was
/// not carried out; a server error or a malformed success may have acted.
pub fn upstream_error(class: Class) -> UpstreamError {
    let (kind, detail) = match class {
        Class::Answer(_) => (
            ErrorKind::Malformed,
            "an answer classified as a failure".to_string(),
        ),
        Class::Rejected { message } => (
            ErrorKind::Rejected {
                message: message.clone(),
            },
            format!("refused: {message}"),
        ),
        Class::NotListed { message } => (ErrorKind::Rejected { message }, NOT_LISTED.into()),
        Class::RateLimited { retry_after } => (
            ErrorKind::RateLimited { retry_after },
            "rate limited (HTTP 429)".to_string(),
        ),
        Class::Server {
            status,
            retry_after,
        } => (
            ErrorKind::Server {
                status,
                retry_after,
            },
            format!("HTTP {status}"),
        ),
        Class::Misconfigured { status } => (
            ErrorKind::Misconfigured { status },
            format!("HTTP {status}: check the provider's base_url and credentials"),
        ),
        Class::Malformed { detail } => (ErrorKind::Malformed, detail),
    };
    UpstreamError::new(kind, detail)
}

/// A token endpoint's failure, for an http provider: it says nothing a model could fix, so a
/// refusal is the operator's (the token source makes it so), a 429 waits as asked and a 5xx is
/// the provider failing.
pub(crate) fn token_failure(
    status: reqwest::StatusCode,
    headers: &HeaderMap,
    _body: &[u8],
    now: std::time::SystemTime,
) -> UpstreamError {
    let code = status.as_u16();
    let kind = match code {
        429 => ErrorKind::RateLimited {
            retry_after: retry_after(headers, now),
        },
        500..=599 => ErrorKind::Server {
            status: code,
            retry_after: retry_after(headers, now),
        },
        _ => ErrorKind::Misconfigured { status: code },
    };
    UpstreamError::new(kind, format!("token endpoint: HTTP {code}"))
}

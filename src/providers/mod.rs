//! Provider adapters: one per real API wire format, each behind the same small interface.
//!
//! A [`Provider`] takes a [`ToolRequest`] and an attempt timeout and returns a [`ToolOutput`]
//! or an [`UpstreamError`] that says what went wrong in the provider's own terms. It knows
//! nothing of breakers, retries or fallbacks: that is the call pipeline's job.
//!
//! **Architecture invariant:** wire types never leave their adapter module, and provider hosts
//! come only from configuration.

pub mod amadeus;
mod booking;
pub mod duffel;
mod duration;
pub mod error;
pub mod http;
pub mod kept;
pub mod limits;
pub mod oauth2;
mod redact;
pub mod rest;
mod wire_json;
mod wire_str;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

pub use booking::FoundBooking;
pub use error::{ErrorKind, UpstreamError, WriteEffect};
pub use kept::KeptOffers;
pub use limits::RateLimits;

use crate::config::{BucketKey, Config, HttpAuth, ProviderKind, ToolConfig};
use crate::secret::Secret;
use crate::tools::{ToolOutput, ToolRequest};

/// A configured provider.
#[derive(Debug, Clone)]
pub enum Provider {
    /// Duffel Air and Stays.
    Duffel(duffel::DuffelClient),
    /// Amadeus flight offers, pricing, hotels and flight status (boxed: the client carries
    /// its token source and offer maps, several times Duffel's size).
    Amadeus(Box<amadeus::AmadeusClient>),
    /// Any JSON HTTP API, for the tools from configuration that name it.
    Rest(Box<rest::RestClient>),
}

impl Provider {
    /// Runs one attempt of `request`. Ask [`Provider::refuse`] first: the call pipeline does,
    /// once per call and provider, and skips a provider that refuses.
    ///
    /// Each kind's future is boxed on its own: one future for every kind would be as large as
    /// the largest kind's (the http provider's), and the pipeline keeps it for as long as a slow
    /// provider holds the call (memory per held call, BENCHMARKS.md).
    pub fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        match self {
            Provider::Duffel(c) => Box::pin(c.call(request, timeout)),
            Provider::Amadeus(c) => Box::pin(c.call(request, timeout)),
            Provider::Rest(c) => Box::pin(c.call(request, timeout)),
        }
    }

    /// Looks up the booking of `tool` the gateway sent for `client` under `idempotency_key`:
    /// `None` when the provider holds none. Only providers that take bookings can answer.
    pub async fn find_booking(
        &self,
        tool: &str,
        client: &str,
        idempotency_key: &str,
    ) -> Result<Option<FoundBooking>, UpstreamError> {
        match self {
            Provider::Duffel(c) => c.find_booking(tool, client, idempotency_key).await,
            Provider::Amadeus(_) => Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("Amadeus does not serve {tool} here, so it has no booking to look up"),
            )),
            // A write tool from configuration is not a booking: the ledger never asks.
            Provider::Rest(_) => Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("an http provider keeps no bookings of {tool} to look up"),
            )),
        }
    }

    /// The account this provider is called with: a digest of its identifying credential
    /// (Duffel's access token, Amadeus's API key, an http provider's token, key or user name),
    /// never the credential. Breakers of scope
    /// `credential` are keyed by it.
    pub fn account(&self) -> &str {
        match self {
            Provider::Duffel(c) => c.account(),
            Provider::Amadeus(c) => c.account(),
            Provider::Rest(c) => c.account(),
        }
    }

    /// This provider serving the built-in tool `tool` through `binding` (its file's
    /// `[binding.<provider>]`), for the tool's route to it; `None` unless it is of kind http.
    /// Every clone shares the client's connections, credential and rate-limit readings.
    pub fn bound(&self, tool: &str, binding: &Arc<crate::http_tool::Binding>) -> Option<Provider> {
        match self {
            Provider::Rest(c) => Some(Provider::Rest(Box::new(
                c.as_ref().clone().with_binding(tool, Arc::clone(binding)),
            ))),
            Provider::Duffel(_) | Provider::Amadeus(_) => None,
        }
    }

    /// `Some(Rejected)` when this provider cannot serve `request` whatever it would answer:
    /// offer and hotel ids belong to the provider that issued them (Amadeus ids start with
    /// `amx_`/`amh_`, Duffel's with `off_`/`srr_`). The call pipeline skips such a provider
    /// and tries the next one in the chain, without a breaker permit or a socket. A booking of
    /// an Amadeus id is the gateway's own refusal, whole: Amadeus priced it for comparison (its
    /// results say `bookable: false`), and only a new search can give one to book.
    pub fn refuse(&self, request: &ToolRequest) -> Option<UpstreamError> {
        match self {
            Provider::Rest(_) => None,
            Provider::Amadeus(_) => amadeus::AmadeusClient::refuse(request),
            Provider::Duffel(_) => {
                let (id, booking) = match request {
                    ToolRequest::PriceFlightOffer(a) => (&a.offer_id, false),
                    ToolRequest::BookFlight(a, _) => (&a.offer_id, true),
                    ToolRequest::BookHotel(a, _) => (&a.rate_id, true),
                    ToolRequest::CheckHotelAvailability(a) => (&a.hotel_result_id, false),
                    _ => return None,
                };
                if !amadeus::owns_id(id) {
                    return None;
                }
                Some(if booking {
                    UpstreamError::refused_by_gateway(crate::texts::call::not_bookable_here(
                        request.tool(),
                        id,
                        "Amadeus",
                        "Duffel",
                    ))
                } else {
                    UpstreamError::new(
                        ErrorKind::Rejected {
                            message: format!("{id} was issued by Amadeus, not Duffel"),
                        },
                        "Amadeus id routed to Duffel",
                    )
                })
            }
        }
    }
}

/// Whether the provider `name` of `kind` serves a tool in this build: the adapters their
/// catalog tools, an `http` provider the tools from configuration and the catalog tools whose
/// file binds it (`[binding.<name>]`).
pub fn kind_serves(name: &str, kind: &ProviderKind, tool: &ToolConfig) -> bool {
    match kind {
        ProviderKind::Duffel { .. } => duffel::TOOLS.contains(&tool.name.as_str()),
        ProviderKind::Amadeus { .. } => amadeus::TOOLS.contains(&tool.name.as_str()),
        ProviderKind::Http { .. } => tool.http.is_some() || tool.binding(name).is_some(),
    }
}

/// Reads credentials from the environment through this seam, so tests never set variables.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

/// The configured providers by name, with problems that stop start-up.
#[derive(Debug)]
pub struct Built {
    /// Providers that can serve calls.
    pub providers: BTreeMap<String, Provider>,
    /// Human-readable problems of what is set (a credential that cannot be sent); start-up and
    /// `faregate check` refuse when not empty.
    pub errors: Vec<String>,
    /// Problems of the machine rather than of what is set: credentials that are not set, an
    /// HTTP client that cannot be built (no CA certificates to load). Start-up refuses, but
    /// `faregate check` only warns, since it may run where the secrets and certificates are
    /// not (a CI job checking the files).
    pub environment: Vec<String>,
    /// Things worth saying that do not stop start-up.
    pub warnings: Vec<String>,
    /// What each provider says (or its configuration says) about its rate limit.
    pub rate_limits: Arc<RateLimits>,
    /// Where the adapters keep the offers they hand out, once a store is attached.
    pub kept_offers: Arc<KeptOffers>,
}

/// Builds a client for every configured provider that a tool uses.
///
/// A provider whose base URL is on loopback (the simulator) gets a placeholder credential when
/// its variable is unset, with a warning; a real provider without credentials is an error, and
/// so is a credential that cannot be sent (see `credential` below), on loopback too.
pub fn build(config: &Config, env: &dyn Env) -> Built {
    let mut out = Built {
        providers: BTreeMap::new(),
        errors: Vec::new(),
        environment: Vec::new(),
        warnings: Vec::new(),
        rate_limits: Arc::default(),
        kept_offers: Arc::default(),
    };
    for (name, p) in &config.providers {
        if let Some(per_s) = p.requests_per_second {
            out.rate_limits.configure(name, f64::from(per_s));
        }
        let users: Vec<&crate::config::ToolConfig> = config
            .tools
            .iter()
            .filter(|t| t.providers.contains(name))
            .collect();
        let served: Vec<&str> = users
            .iter()
            .filter(|t| kind_serves(name, &p.kind, t))
            .map(|t| t.name.as_str())
            .collect();
        for t in &users {
            if !kind_serves(name, &p.kind, t) {
                out.warnings.push(format!(
                    "provider \"{name}\" (kind {}) does not serve {} in this build; the tool skips it",
                    p.kind.as_str(),
                    t.name
                ));
            }
        }
        if served.is_empty() {
            continue;
        }
        let max_idle = users
            .iter()
            .map(|t| t.max_concurrent as usize)
            .max()
            .unwrap_or(16);
        let protocol = match p.http2_prior_knowledge {
            true => http::Protocol::Http2PriorKnowledge,
            false => http::Protocol::Negotiated,
        };
        let http = match http::client_for(max_idle, p.connect_timeout, protocol) {
            Ok(c) => c,
            Err(e) => {
                out.environment.push(format!(
                    "provider \"{name}\": cannot build an HTTP client: {e}"
                ));
                continue;
            }
        };
        let loopback = p
            .base_url
            .host_str()
            .is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]");
        match &p.kind {
            ProviderKind::Duffel { token_env } => {
                let token = match credential(env, token_env) {
                    Some(Ok(t)) => t,
                    Some(Err(unusable)) => {
                        out.errors.push(format!("provider \"{name}\": {unusable}"));
                        continue;
                    }
                    None if loopback => {
                        out.warnings.push(format!(
                            "provider \"{name}\": {token_env} is not set; using a placeholder token for the local simulator at {}",
                            p.base_url
                        ));
                        Secret::new("duffel_test_simulator")
                    }
                    None => {
                        out.environment.push(format!(
                            "provider \"{name}\": set {token_env} to a Duffel access token (it serves {})",
                            served.join(", ")
                        ));
                        continue;
                    }
                };
                if config.quota.bucket_key == BucketKey::ProviderAndCredential {
                    out.rate_limits.key_by_credential(name, &token);
                }
                let sink = limits::LimitsSink::new(Arc::clone(&out.rate_limits), name);
                out.providers.insert(
                    name.clone(),
                    Provider::Duffel(
                        duffel::DuffelClient::new(http, p.base_url.clone(), token)
                            .with_limits(sink),
                    ),
                );
            }
            ProviderKind::Amadeus {
                client_id_env,
                client_secret_env,
            } => {
                let (id, secret) = match (
                    credential(env, client_id_env),
                    credential(env, client_secret_env),
                ) {
                    (Some(Err(unusable)), _) | (_, Some(Err(unusable))) => {
                        out.errors.push(format!("provider \"{name}\": {unusable}"));
                        continue;
                    }
                    (Some(Ok(id)), Some(Ok(secret))) => (id, secret),
                    (id, secret) if loopback => {
                        out.warnings.push(format!(
                            "provider \"{name}\": {client_id_env}/{client_secret_env} not both set; using placeholder credentials for the local simulator at {}",
                            p.base_url
                        ));
                        (
                            id.and_then(Result::ok)
                                .unwrap_or_else(|| Secret::new("amadeus_simulator_key")),
                            secret
                                .and_then(Result::ok)
                                .unwrap_or_else(|| Secret::new("amadeus_simulator_secret")),
                        )
                    }
                    _ => {
                        out.environment.push(format!(
                            "provider \"{name}\": set {client_id_env} and {client_secret_env} to the Amadeus API key and secret (it serves {})",
                            served.join(", ")
                        ));
                        continue;
                    }
                };
                // The API key names the account (the secret only proves it).
                if config.quota.bucket_key == BucketKey::ProviderAndCredential {
                    out.rate_limits.key_by_credential(name, &id);
                }
                out.providers.insert(
                    name.clone(),
                    Provider::Amadeus(Box::new(
                        amadeus::AmadeusClient::new(http, p.base_url.clone(), id, secret)
                            .with_kept(Arc::clone(&out.kept_offers)),
                    )),
                );
            }
            ProviderKind::Http { auth } => {
                // The token endpoint is another server (the identity provider), which need not
                // speak HTTP/2 without asking: with `http2_prior_knowledge` it gets a client of
                // its own that negotiates as any does, with the same connect timeout and
                // policies. One idle connection: its requests are single-flight.
                let token_http = match protocol {
                    http::Protocol::Negotiated => Ok(http.clone()),
                    http::Protocol::Http2PriorKnowledge => {
                        http::client_for(1, p.connect_timeout, http::Protocol::Negotiated)
                    }
                };
                let token_http = match token_http {
                    Ok(c) => c,
                    Err(e) => {
                        out.environment.push(format!(
                            "provider \"{name}\": cannot build an HTTP client for its token endpoint: {e}"
                        ));
                        continue;
                    }
                };
                let credential = match http_credential(name, auth, env, &token_http) {
                    Ok(c) => c,
                    Err(Unsendable::Unusable(unusable)) => {
                        out.errors.push(format!("provider \"{name}\": {unusable}"));
                        continue;
                    }
                    Err(Unsendable::Unset(missing)) if loopback => {
                        out.warnings.push(format!(
                            "provider \"{name}\": {missing} not set; sending no credential to the local server at {}",
                            p.base_url
                        ));
                        rest::Credential::None
                    }
                    Err(Unsendable::Unset(missing)) => {
                        out.environment.push(format!(
                            "provider \"{name}\": set {missing} (it serves {})",
                            served.join(", ")
                        ));
                        continue;
                    }
                };
                let operations = users
                    .iter()
                    .filter_map(|t| Some((t.name.clone(), Arc::clone(&t.http.as_ref()?.operation))))
                    .collect();
                let sink = limits::LimitsSink::new(Arc::clone(&out.rate_limits), name);
                out.providers.insert(
                    name.clone(),
                    Provider::Rest(Box::new(
                        rest::RestClient::new(http, p.base_url.clone(), credential, operations)
                            .with_limits(sink),
                    )),
                );
            }
        }
    }
    out
}

/// A provider credential read from the variable `var`: `None` when it is not set; else its
/// value without the whitespace around it, or, when it holds a control character, why it
/// cannot be sent.
///
/// HTTP drops the whitespace around a header's value, so no provider issues a credential that
/// begins or ends with any: there, it is the newline `echo` leaves at the end of a secret's
/// file, and it is dropped. A line break or other control character inside the value (from a
/// paste) cannot be sent in a header at all: every request would fail before leaving, and each
/// failure would count against the provider's breakers as if the provider were down. So it
/// stops start-up, naming the variable (never the value). A tab could be sent, but no provider
/// issues a credential with one either, so it is refused with the rest, as it is in a
/// credential sent in a form or as Basic auth.
fn credential(env: &dyn Env, var: &str) -> Option<Result<Secret, String>> {
    let value = env.var(var)?;
    let value = value.trim();
    Some(if value.chars().any(char::is_control) {
        Err(format!(
            "{var} holds a control character (a line break or a tab within the value), which no provider's credential has: set it to the credential alone"
        ))
    } else {
        Ok(Secret::new(value))
    })
}

/// Why [`http_credential`] has no credential to send.
#[derive(Debug)]
enum Unsendable {
    /// These variables are not set ("A and B").
    Unset(String),
    /// One is set to what cannot be sent; the text says which and what to fix.
    Unusable(String),
}

impl Unsendable {
    /// The problems of several variables as one: an unusable value first, since setting the
    /// others would not help while it stays.
    fn of(problems: impl IntoIterator<Item = Unsendable>) -> Unsendable {
        let mut unset = Vec::new();
        for p in problems {
            match p {
                Unsendable::Unusable(_) => return p,
                Unsendable::Unset(var) => unset.push(var),
            }
        }
        Unsendable::Unset(unset.join(" and "))
    }
}

/// The credential `auth` names for provider `name`, read from `env` (an OAuth2 token source
/// asking its token endpoint through `http`), or why there is none to send.
fn http_credential(
    name: &str,
    auth: &HttpAuth,
    env: &dyn Env,
    http: &reqwest::Client,
) -> Result<rest::Credential, Unsendable> {
    let read = |var: &str| match credential(env, var) {
        Some(Ok(secret)) => Ok(secret),
        Some(Err(unusable)) => Err(Unsendable::Unusable(unusable)),
        None => Err(Unsendable::Unset(var.to_string())),
    };
    Ok(match auth {
        HttpAuth::None => rest::Credential::None,
        HttpAuth::Bearer { token_env } => rest::Credential::Bearer(read(token_env)?),
        HttpAuth::ApiKey { header, key_env } => {
            // The configuration checked the header's name.
            let header = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| Unsendable::Unusable(format!("{header} is not a header name")))?;
            rest::Credential::ApiKey(header, read(key_env)?)
        }
        HttpAuth::Basic {
            username_env,
            password_env,
        } => match (read(username_env), read(password_env)) {
            (Ok(user), Ok(password)) => rest::Credential::Basic(user, password),
            (user, password) => {
                return Err(Unsendable::of(
                    [user.err(), password.err()].into_iter().flatten(),
                ));
            }
        },
        HttpAuth::OAuth2 {
            token_url,
            client_id_env,
            client_secret_env,
            scope,
        } => match (read(client_id_env), read(client_secret_env)) {
            (Ok(id), Ok(secret)) => rest::Credential::OAuth2(
                oauth2::TokenSource::new(
                    name,
                    http.clone(),
                    token_url.clone(),
                    (id, secret),
                    rest::token_failure,
                )
                .with_scope(scope.clone()),
            ),
            (id, secret) => {
                return Err(Unsendable::of(
                    [id.err(), secret.err()].into_iter().flatten(),
                ));
            }
        },
    })
}

//! Per-client limits on the tool-call routes: a request rate (a GCRA, fleet-wide on PostgreSQL) and a cap on
//! calls in flight.
//!
//! Why: every tool call can cost money at a provider, so a stolen or runaway key must not be
//! able to spend without bound. The breakers protect providers from the gateway; these limits
//! protect the gateway (and its bills) from one client. (That one client does not fill every
//! bulkhead slot of a tool other clients share is the call path's to hold, per tool: its share
//! of the tool, `clients::ToolShare`, refused the same way: 429 naming the limit.)
//!
//! A client is its key (the SHA-256 digest [`auth`](super::auth) established), or its peer
//! address when auth is off. A `[[clients]]` entry with its own `rate`, `burst` or
//! `max_concurrent_calls` is counted by limits of its own ([`ClientLimits::set_own`], rebuilt on
//! a reload; a client whose limits did not change keeps its counts). Over either limit the answer is 429 with `Retry-After` and a JSON
//! body saying which limit and when to retry; nothing reaches the pipeline.
//!
//! Only tool calls count: every `POST` to the native, OpenAI and Anthropic routes, and MCP
//! `tools/call` messages (the body is read once to see the JSON-RPC method; `initialize`,
//! `tools/list`, `ping` and event streams are not limited here, so an MCP client's session
//! set-up does not spend its call budget; what lasts is capped elsewhere: event streams by
//! [`streams`](super::streams), MCP sessions where `/mcp` records their owners). Health, metrics and the operations API stay reachable for
//! probes and operators while a client is throttled. An OpenAI or Anthropic request with
//! several tool calls counts once. The in-flight cap counts a request from its headers to the
//! end of its answer: for the native, OpenAI and Anthropic routes the answer's head comes when
//! the call is done, while an MCP call in a session (or one reporting progress) is answered as
//! an event stream that runs on after its head, so its slot rides in the answer's body
//! ([`holding`](super::holding)).
//!
//! The rate is [`Rates`]' GCRA, one bucket per client for every limit set (the shared ones and
//! each client's own). In a fleet on PostgreSQL it holds for the fleet: the replicas tell each
//! other what they admitted every 100 ms and charge each other's calls to their own buckets
//! ([`fleet_limits`](super::fleet_limits)), so a client spreading its calls over three replicas
//! gets its rate once, not three times. The in-flight cap stays per replica, as the bulkheads
//! and each client's share of them are.
//!
//! Time is `tokio::time::Instant`, so the limiter's tests run on a paused clock.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request};
use axum::http::{Extensions, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::auth::Caller;
use super::error::ApiError;
use super::holding::holding;
use crate::clients::{ClientKey, ClientName, KeyDigest, Quota, Rates, SharedRates};
use crate::config::LimitsConfig;
use crate::telemetry::Telemetry;

/// Whom a limit counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// A client key's digest.
    Key(KeyDigest),
    /// A peer address (auth off).
    Peer(IpAddr),
}

impl std::fmt::Display for ClientId {
    /// A key shows as the first 4 bytes of its digest (enough to tell clients apart in logs,
    /// far too little to test guesses of the key against).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientId::Key(d) => write!(f, "key:{:02x}{:02x}{:02x}{:02x}", d[0], d[1], d[2], d[3]),
            ClientId::Peer(ip) => write!(f, "peer:{ip}"),
        }
    }
}

impl ClientId {
    /// The client as the fleet's table of admitted calls names it: the whole digest of its key
    /// (never the key), or its address.
    pub(crate) fn shared_key(&self) -> ClientKey {
        match self {
            ClientId::Key(d) => {
                let mut hex = String::with_capacity(4 + 64);
                hex.push_str("key:");
                for b in d {
                    hex.push_str(&format!("{b:02x}"));
                }
                hex
            }
            ClientId::Peer(ip) => format!("peer:{ip}"),
        }
    }

    /// The client a [`shared_key`](Self::shared_key) names, or `None` for one that names none
    /// (a row another version wrote).
    pub(crate) fn from_shared_key(key: &str) -> Option<ClientId> {
        if let Some(hex) = key.strip_prefix("key:") {
            let mut digest = [0u8; 32];
            if hex.len() != 64 || !hex.is_ascii() {
                return None;
            }
            for (i, byte) in digest.iter_mut().enumerate() {
                *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
            }
            return Some(ClientId::Key(digest));
        }
        key.strip_prefix("peer:")?.parse().ok().map(ClientId::Peer)
    }
}

/// Clients with calls in flight tracked before idle ones are swept (only reachable when auth is
/// off and many peer addresses call; keyed clients are as few as the configured keys).
const SWEEP_ABOVE: usize = 4096;

/// The limits of every client. Cheap to share behind an `Arc`.
pub struct ClientLimits {
    /// The rate; `None` = no rate limit.
    rate: Option<Quota>,
    /// Every client's bucket, shared by the default limits and every client's own (a client is
    /// counted by one of them at a time), and charged for the calls of other replicas.
    pub(super) rates: Arc<Rates<ClientId>>,
    /// The in-flight cap; `None` = no cap.
    max_in_flight: Option<u32>,
    /// One semaphore per client with calls in flight. A std mutex: held only to look up or
    /// insert an entry, never across an await.
    in_flight: Mutex<HashMap<ClientId, Arc<Semaphore>>>,
    /// The body limit, for reading an MCP body to find its method.
    max_body_bytes: usize,
    /// The clients with limits of their own, with those limits as configured. A std lock:
    /// held only to look up or replace an entry, never across an await.
    own: RwLock<HashMap<ClientName, (LimitsConfig, Arc<ClientLimits>)>>,
    /// Where a fleet's replicas tell each other what they admitted, once set.
    fleet: OnceLock<SharedRates>,
}

impl std::fmt::Debug for ClientLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLimits")
            .field("rate", &self.rate.is_some())
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Over the rate; retry after this long.
    Rate(Duration),
    /// Too many calls in flight.
    InFlight(u32),
}

/// Proof of admission; dropping it frees the client's in-flight slot.
#[derive(Debug)]
pub struct Admission {
    _slot: Option<OwnedSemaphorePermit>,
}

impl ClientLimits {
    /// Limits as configured; `max_body_bytes` bounds the MCP body read to find its method.
    pub fn new(config: &LimitsConfig, max_body_bytes: usize) -> Self {
        Self::counting_in(config, max_body_bytes, Arc::default())
    }

    /// Limits as configured whose rate is counted in `rates`.
    fn counting_in(
        config: &LimitsConfig,
        max_body_bytes: usize,
        rates: Arc<Rates<ClientId>>,
    ) -> Self {
        let rate = config
            .client_rate
            .and_then(|r| Quota::new(r.count, r.per, config.client_burst));
        ClientLimits {
            rate,
            rates,
            max_in_flight: config.client_max_concurrent_calls,
            in_flight: Mutex::new(HashMap::new()),
            max_body_bytes,
            own: RwLock::new(HashMap::new()),
            fleet: OnceLock::new(),
        }
    }

    /// Holds every client's rate for the fleet that shares `shared` (PostgreSQL), once the
    /// server runs ([`fleet_limits`](super::fleet_limits)); a second call changes nothing.
    pub fn count_with_fleet(&self, shared: SharedRates) {
        let _ = self.fleet.set(shared);
    }

    /// Where this replica shares its counts, when it does.
    pub(crate) fn fleet(&self) -> Option<SharedRates> {
        self.fleet.get().cloned()
    }

    /// Whether any client is held to a rate: the default one, or a client's own (a reload may
    /// give one). Without, a fleet's replicas have nothing to tell each other.
    pub(crate) fn any_rate(&self) -> bool {
        self.rate.is_some()
            || self
                .own
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .any(|(_, own)| own.rate.is_some())
    }

    /// Gives each listed client limits of its own (replacing the previous list); a client
    /// whose limits are unchanged keeps its limiter, and with it its counts.
    pub fn set_own(&self, clients: &[(ClientName, LimitsConfig)]) {
        let mut own = self.own.write().unwrap_or_else(|e| e.into_inner());
        let mut next = HashMap::new();
        for (name, config) in clients {
            let limiter = match own.remove(name) {
                Some((old, limiter)) if old == *config => limiter,
                _ => Arc::new(ClientLimits::counting_in(
                    config,
                    self.max_body_bytes,
                    Arc::clone(&self.rates),
                )),
            };
            next.insert(name.clone(), (config.clone(), limiter));
        }
        *own = next;
    }

    /// The limits of `name`, when it has its own.
    fn own(&self, name: &ClientName) -> Option<Arc<ClientLimits>> {
        let own = self.own.read().unwrap_or_else(|e| e.into_inner());
        own.get(name).map(|(_, limiter)| Arc::clone(limiter))
    }

    /// Admits one tool call of `client`, or says why not. The in-flight slot is taken first,
    /// so a call refused for having too many in flight does not also spend the client's rate.
    pub fn admit(&self, client: ClientId) -> Result<Admission, Refusal> {
        let slot = match self.max_in_flight {
            None => None,
            Some(max) => {
                let semaphore = {
                    let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                    if map.len() > SWEEP_ABOVE {
                        map.retain(|_, s| s.available_permits() < max as usize);
                    }
                    map.entry(client)
                        .or_insert_with(|| Arc::new(Semaphore::new(max as usize)))
                        .clone()
                };
                match semaphore.try_acquire_owned() {
                    Ok(permit) => Some(permit),
                    Err(_) => return Err(Refusal::InFlight(max)),
                }
            }
        };
        if let Some(quota) = self.rate {
            self.rates
                .admit(&client, quota, tokio::time::Instant::now())
                .map_err(Refusal::Rate)?;
        }
        Ok(Admission { _slot: slot })
    }
}

/// Whole seconds for `Retry-After`, never 0 (a client told 0 would retry at once).
fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// The 429 for a refusal.
pub(crate) fn too_many(refusal: Refusal) -> Response {
    let (secs, message, limit) = match refusal {
        Refusal::Rate(wait) => {
            let secs = retry_after_secs(wait);
            (
                secs,
                format!(
                    "this client is over its request rate (its [[clients]] entry's rate, else [limits] client_rate); retry after {secs} s"
                ),
                "client_rate",
            )
        }
        Refusal::InFlight(max) => (
            1,
            format!(
                "this client already has {max} tool calls in flight (its [[clients]] entry's max_concurrent_calls, else [limits] client_max_concurrent_calls); wait for one to finish, then retry"
            ),
            "client_max_concurrent_calls",
        ),
    };
    let mut res = ApiError::new(StatusCode::TOO_MANY_REQUESTS, message)
        .with("limit", json!(limit))
        .with("retry_after_s", json!(secs))
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    res
}

/// The client's admission around the rest of the request (`next`), for `/mcp`'s guard
/// (`mcp::client_answers::guard`): an MCP body is read first, to tell a tool call from the protocol's
/// other messages. Refusals are counted in `telemetry`'s metrics.
pub(crate) async fn limit(
    limits: &ClientLimits,
    telemetry: &Telemetry,
    request: Request,
    next: Next,
) -> Response {
    let request = if request.method() == Method::POST && request.uri().path() == "/mcp" {
        match mcp_tool_call(request, limits.max_body_bytes).await {
            Ok((true, request)) => request,
            Ok((false, request)) => return next.run(request).await,
            Err(res) => return *res,
        }
    } else {
        request
    };
    match admit(limits, telemetry, &request) {
        // Held by the answer's body: rmcp answers a call in a session (and one that reports
        // progress) with an event stream whose head comes before the call has run.
        Ok(admission) => holding(next.run(request).await, admission),
        Err(refused) => *refused,
    }
}

/// The client's admission for `request` (none for a request that is not a POST: only calls
/// count), or its 429, counted in `telemetry`. Synchronous, so that the gate's future keeps
/// only the admission while the call runs (`gate.rs`). An MCP request is admitted as a call:
/// [`limit`] tells its tool calls from its other messages first.
pub(super) fn admit(
    limits: &ClientLimits,
    telemetry: &Telemetry,
    request: &Request,
) -> Result<Option<Admission>, Box<Response>> {
    if request.method() != Method::POST {
        return Ok(None);
    }
    let caller = request.extensions().get::<Caller>();
    let own = match caller {
        Some(Caller::Client { profile, .. }) => limits.own(&profile.name),
        _ => None,
    };
    let client = client_id(caller, request.extensions());
    match own.as_deref().unwrap_or(limits).admit(client) {
        Ok(admission) => Ok(Some(admission)),
        Err(refusal) => {
            tracing::info!(%client, ?refusal, "client over its limit");
            let limit = match refusal {
                Refusal::Rate(_) => "client_rate",
                Refusal::InFlight(_) => "client_max_concurrent_calls",
            };
            telemetry.metrics().record_client_limited(limit);
            Err(Box::new(too_many(refusal)))
        }
    }
}

/// Whom a request of `caller` counts against: its key, or with auth off the peer address the
/// accept loop put in `extensions`.
pub(crate) fn client_id(caller: Option<&Caller>, extensions: &Extensions) -> ClientId {
    match caller.and_then(Caller::digest) {
        Some(d) => ClientId::Key(d),
        None => {
            let peer = extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip())
                .unwrap_or(IpAddr::from([0, 0, 0, 0]));
            ClientId::Peer(peer)
        }
    }
}

/// Reads an MCP body (within the body limit) and puts it back: whether it holds a
/// `tools/call` message ([`crate::agents::mcp::is_tool_call`] decides).
async fn mcp_tool_call(request: Request, max: usize) -> Result<(bool, Request), Box<Response>> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| Box::new(ApiError::too_large(max).into_response()))?;
    let call = crate::agents::mcp::is_tool_call(&bytes);
    Ok((
        call,
        Request::from_parts(parts, axum::body::Body::from(bytes)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Rate;

    fn limits(count: u32, burst: u32, in_flight: Option<u32>) -> ClientLimits {
        ClientLimits::new(
            &LimitsConfig {
                client_rate: Some(Rate {
                    count,
                    per: Duration::from_secs(1),
                }),
                client_burst: burst,
                client_max_concurrent_calls: in_flight,
                ..crate::config::default_limits()
            },
            1024,
        )
    }

    const A: ClientId = ClientId::Key([1; 32]);
    const B: ClientId = ClientId::Key([2; 32]);

    #[tokio::test(start_paused = true)]
    async fn the_burst_passes_then_the_rate_refills() {
        let l = limits(2, 3, None);
        for _ in 0..3 {
            assert!(l.admit(A).is_ok());
        }
        match l.admit(A) {
            Err(Refusal::Rate(wait)) => assert_eq!(wait, Duration::from_millis(500)),
            other => panic!("{other:?}"),
        }
        assert!(l.admit(B).is_ok(), "clients are counted apart");
        tokio::time::advance(Duration::from_millis(500)).await;
        assert!(l.admit(A).is_ok(), "one token back after 1/rate");
        assert!(l.admit(A).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn calls_in_flight_are_capped_per_client() {
        let l = ClientLimits::new(
            &LimitsConfig {
                client_rate: None,
                client_burst: 1,
                client_max_concurrent_calls: Some(2),
                ..crate::config::default_limits()
            },
            1024,
        );
        let first = l.admit(A);
        let second = l.admit(A);
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(l.admit(A).err(), Some(Refusal::InFlight(2)));
        assert!(l.admit(B).is_ok());
        drop(first);
        assert!(l.admit(A).is_ok(), "a finished call frees its slot");
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_refused_for_its_slots_spends_no_rate() {
        let l = limits(1, 2, Some(1));
        let held = l.admit(A);
        assert!(held.is_ok());
        assert_eq!(l.admit(A).err(), Some(Refusal::InFlight(1)));
        drop(held);
        assert!(
            l.admit(A).is_ok(),
            "the second token was not spent by the refusal"
        );
        assert!(matches!(l.admit(A), Err(Refusal::Rate(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_with_its_own_limits_is_counted_by_them_alone() {
        let shared = limits(1, 1, None);
        let own = LimitsConfig {
            client_rate: None,
            client_burst: 1,
            client_max_concurrent_calls: Some(1),
            ..crate::config::default_limits()
        };
        let vip = ClientName::stored("vip");
        shared.set_own(&[(vip.clone(), own.clone())]);
        let vip_limits = shared
            .own(&vip)
            .unwrap_or_else(|| panic!("vip has its own"));
        let held = vip_limits.admit(A);
        assert!(held.is_ok());
        assert_eq!(vip_limits.admit(A).err(), Some(Refusal::InFlight(1)));
        assert!(
            shared.admit(A).is_ok(),
            "the shared limits did not count the vip's call"
        );
        assert!(shared.own(&ClientName::stored("other")).is_none());
        shared.set_own(&[(vip.clone(), own)]);
        let kept = shared.own(&vip).unwrap_or_else(|| panic!("still its own"));
        assert!(
            Arc::ptr_eq(&kept, &vip_limits),
            "unchanged limits keep their counts"
        );
        shared.set_own(&[]);
        assert!(
            shared.own(&vip).is_none(),
            "a reload without them drops them"
        );
    }

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
    }

    #[tokio::test]
    async fn the_429_says_what_and_when() {
        let res = too_many(Refusal::Rate(Duration::from_millis(1500)));
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            res.headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
            Some("2")
        );
        let body = axum::body::to_bytes(res.into_body(), 4096)
            .await
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(v["limit"], "client_rate");
        assert_eq!(v["retry_after_s"], 2);
        assert_eq!(
            v["message"],
            "this client is over its request rate (its [[clients]] entry's rate, else [limits] client_rate); retry after 2 s",
            "names both places a client's rate is set"
        );
    }
}
